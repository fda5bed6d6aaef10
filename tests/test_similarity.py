"""Agreement between candidates: the stated similarity, computed once per distinct patch, capped."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentic_rubrics.patch import changed_lines
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.rank.agreement import (
    line_agreement,
    line_similarity,
    self_consistency_ranking,
    similarity_summary,
)
from agentic_rubrics.rank.offline import patch_features
from agentic_rubrics.rank.rerank import select
from agentic_rubrics.report.build import build_report_and_results
from agentic_rubrics.report.markdown import render_markdown
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder


def lcs(a: Sequence[object], b: Sequence[object]) -> int:
    """The longest common subsequence, by the textbook dynamic programme."""
    row = [0] * (len(b) + 1)
    for x in a:
        prev = 0
        for j, y in enumerate(b, 1):
            prev, row[j] = row[j], prev + 1 if x == y else max(row[j], row[j - 1])
    return row[-1]


def diff(lines: list[str]) -> str:
    """A unified diff of ``+``/``-`` lines (its hunk header counts them)."""
    body = "".join(f"{ln}\n" for ln in lines)
    old = sum(1 for ln in lines if ln.startswith("-"))
    new = len(lines) - old
    return f"--- a/m.py\n+++ b/m.py\n@@ -1,{old} +1,{new} @@\n{body}"


def test_the_similarity_is_twice_the_lcs_over_the_total_length() -> None:
    rng = random.Random(7)
    for _ in range(300):
        a = [rng.choice("abcde") for _ in range(rng.randrange(0, 30))]
        b = [rng.choice("abcde") for _ in range(rng.randrange(0, 30))]
        expected = 0.0 if not a or not b else 2 * lcs(a, b) / (len(a) + len(b))
        assert line_similarity(a, b) == pytest.approx(expected, abs=1e-12)
    # lines compare whole: a line is one symbol, not its characters
    assert line_similarity(["+x = 1", "+y = 2"], ["+x = 1", "+y = 3"]) == 0.5


def test_self_consistency_is_the_mean_similarity_to_the_other_candidates() -> None:
    rng = random.Random(3)
    vocab = [f"+line {i}" for i in range(6)] + [f"-old {i}" for i in range(3)]
    patches = {
        f"c{i}": diff([rng.choice(vocab) for _ in range(rng.randrange(1, 12))]) for i in range(7)
    }
    patches["dup"] = patches["c2"]  # identical patches agree fully with each other
    patches["empty"] = ""
    found = self_consistency_ranking(patches)
    lines = {cid: changed_lines(p) for cid, p in patches.items()}
    for cid in patches:
        others = [line_similarity(lines[cid], lines[o]) for o in patches if o != cid]
        if cid != "empty":
            assert found[cid] == pytest.approx(sum(others) / len(others), abs=1e-12)
    assert found["dup"] == found["c2"]
    assert found["empty"] is None  # no changed line: never picked (select would have taken it)
    pool = {"e1": "", "e2": "", "a": diff(["-x = 1", "+x = 2"]), "b": diff(["-y = 1", "+y = 2"])}
    assert select("t", self_consistency_ranking(pool), "sc").candidate_id in ("a", "b")
    assert self_consistency_ranking({"only": diff(["+x"])}) == {"only": None}


def test_changed_lines_are_the_hunks_lines_and_only_headers_are_left_out() -> None:
    """A removed SQL comment (``-- ...``), a YAML separator and an added ``++i`` are changes: only a
    ``---``/``+++`` pair outside a hunk is a file header."""
    sql = (
        "diff --git a/q.sql b/q.sql\n--- a/q.sql\n+++ b/q.sql\n@@ -1,3 +1,2 @@\n select 1;\n"
        "--- drop the old index\n----\n@@ -9 +8,2 @@\n x\n+++i;\n"
        "diff --git a/r.py b/r.py\nnew file mode 100644\n--- /dev/null\n+++ b/r.py\n@@ -0,0 +1 @@\n+y = 1\n"
        "\\ No newline at end of file\n"
    )
    assert changed_lines(sql) == ["--- drop the old index", "----", "+++i;", "+y = 1"]
    assert changed_lines(sql.replace("\n", "\r\n")) == changed_lines(sql)
    # two unrelated removals of comments share no line: they do not agree
    one = "--- a/q.sql\n+++ b/q.sql\n@@ -1 +0,0 @@\n--- drop the old index\n"
    other = "--- a/q.sql\n+++ b/q.sql\n@@ -1 +0,0 @@\n--- rebuild the cache\n"
    assert line_agreement({"a": one, "b": other})[0] == {"a": 0.0, "b": 0.0}
    # what a hunk's header does not count is no change, as git apply reads it: a line past the
    # count, a format-patch mail's "-- " signature and the next mail's message and "---" separator;
    # text that is not a diff has none, and a count of 5000 digits makes no hunk (nor a crash)
    miscounted = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n+c\n"
    assert changed_lines(miscounted) == ["-a", "+b"]
    mail = (
        "From 1 Mon\nSubject: [PATCH 1/2] fix\n\n- drop the cache\n---\n m.py | 2 +-\n\n"
        "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a\n+b\n-- \n2.39.5\n\n"
    )
    assert changed_lines(mail + mail.replace("1/2", "2/2")) == ["-a", "+b", "-a", "+b"]
    assert changed_lines("notes:\n- one\n- two\n") == []
    huge = "--- a/m.py\n+++ b/m.py\n@@ -1," + "9" * 5000 + " +1 @@\n-a\n+b\n"
    assert changed_lines(huge) == []


def test_identical_patches_are_compared_once() -> None:
    """Three identical huge patches and one other: one comparison, not six (fails with one per pair)."""
    calls: list[tuple[int, int]] = []

    def counted(a: Sequence[int], b: Sequence[int]) -> float:
        calls.append((len(a), len(b)))
        return line_similarity(a, b)

    huge = diff([f"+line {i}" for i in range(3000)])
    patches = {"a": huge, "b": huge, "c": huge, "d": diff(["+line 1", "+other"])}
    values, capped = line_agreement(patches, similarity=counted)
    assert len(calls) == 1 and capped == []
    small = line_similarity(changed_lines(huge), changed_lines(patches["d"]))
    assert values["a"] == values["b"] == values["c"] == pytest.approx((1 + 1 + small) / 3)
    assert values["d"] == pytest.approx(small)


def test_huge_patches_are_capped_and_the_report_says_so(tmp_path: Path) -> None:
    long = diff([f"+line {i}" for i in range(50)])
    same_start = diff([f"+line {i}" for i in range(10)] + ["+different"] * 40)
    values, capped = line_agreement({"long": long, "same_start": same_start}, max_lines=10)
    assert sorted(capped) == ["long", "same_start"]
    assert values["long"] == values["same_start"] == 1.0  # only the first 10 lines were compared
    uncapped, none = line_agreement({"long": long, "same_start": same_start})
    assert none == [] and uncapped["long"] < 1.0
    # the agreement feature of the offline ranking is the same value
    features = patch_features({"long": long, "same_start": same_start})
    assert features["long"] is not None and features["long"]["agreement"] == uncapped["long"]


def test_the_report_states_the_measure_and_the_cap(tmp_path: Path) -> None:
    issue = "Parsing fails in m.py"
    task = {
        "instance_id": "t-1",
        "repo": "o/r",
        "base_commit": "abc",
        "problem_statement": issue,
        "candidates": [
            {"id": "a", "patch": diff(["+x = 1"]), "resolved": True},
            {"id": "b", "patch": diff(["+x = 1"]), "resolved": False},
            {"id": "c", "patch": diff(["+y = 2"]), "resolved": False},
        ],
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    config = load_config(None, {"bootstrap_resamples": 0})
    run(tasks, tmp_path / "out", config, stages=("explore", "judge"))
    report = build_report_and_results(RunFolder(tmp_path / "out"))[0]  # report.md without its plots
    assert report.similarity is not None
    assert report.similarity.model_dump() == {
        "measures": {"indel-lines": 1},
        "max_lines": 10_000,
        "capped_candidates": 0,
    }
    md = render_markdown(report)
    assert "normalized Indel similarity (2 LCS / total) of changed lines (1 tasks)" in md
    assert "at most the first 10000 changed lines of a patch are compared" in md
    progress = next(r for _, r in read_jsonl(tmp_path / "out" / "progress.jsonl"))
    # self-consistency and the offline ranking's agreement are the same values, computed once
    agreement = progress["baselines"]["self_consistency"]
    assert agreement == {"a": 0.5, "b": 0.5, "c": 0.0}
    features = progress["baselines"]["offline_features"]
    assert {cid: f["agreement"] for cid, f in features.items()} == agreement
    # a folder written before the measure was recorded (difflib) is reported as such
    old = {"self_consistency": {"a": 0.5}}
    assert similarity_summary([old]) == {
        "measures": {"difflib-ratio": 1},
        "max_lines": None,
        "capped_candidates": 0,
    }
    assert similarity_summary([{}]) is None
