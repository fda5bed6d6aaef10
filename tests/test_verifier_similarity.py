"""The patch-similarity verifier: the proxy-patch author (the agent in a solve role, in the bubblewrap
sandbox), the batched similarity judge read defensively, the ``similarity`` selector, and runs with
``--verifiers rubric,similarity`` played by the shipped fake."""

from __future__ import annotations

import asyncio
import hashlib
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR, load_example
from agentic_rubrics.explore.solver import ProxyAuthor, ProxyPatch
from agentic_rubrics.judge.similarity import SimilarityJudge, majority, normalised
from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.patch import parse_patch
from agentic_rubrics.testing import Reply, fake_model, register_script, scripted_calls
from agentic_rubrics.testing.similarity import ASKS, overlap_rating

from .test_sandbox_bwrap import require_bwrap

EXAMPLE = load_example(EXAMPLES_DIR / "harbourline__pagewise-214")


def solve(script_name: str, **kw: Any) -> tuple[ProxyPatch, list[dict[str, Any]]]:
    from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox

    model = register_script(f"local/{script_name}", fake_model())
    author = ProxyAuthor(LLM(LLMConfig(model=model)), **kw)

    async def go() -> tuple[ProxyPatch, list[dict[str, Any]]]:
        async with BubblewrapSandbox(EXAMPLE.repo_dir) as sb:
            return await author.solve(EXAMPLE.task, sb)

    return asyncio.run(go())


@require_bwrap
def test_the_proxy_author_edits_the_file_the_issue_names_and_its_diff_applies(
    tmp_path: Path,
) -> None:
    patch, steps = solve("proxy-author")
    assert patch.submitted and not patch.truncated
    assert [s["tool"] for s in steps] == ["bash", "search", "bash", "submit"]
    files = [f.path for f in parse_patch(patch.diff).files]
    assert files == ["pagewise/windows.py"], patch.diff  # where the names the issue gives live
    assert "\n+# fix for count_windows\n" in patch.diff  # after the first definition found
    # the diff is against the base tree: it applies to a fresh copy, and the repository is unchanged
    (tmp_path / "p.diff").write_text(patch.diff)
    check = subprocess.run(
        ["git", "apply", "--check", str(tmp_path / "p.diff")],
        cwd=EXAMPLE.repo_dir,
        capture_output=True,
        text=True,
    )
    assert check.returncode == 0, check.stderr
    assert "fix for" not in (EXAMPLE.repo_dir / "pagewise/windows.py").read_text()


@require_bwrap
def test_the_proxy_author_never_sees_candidates_gold_or_hidden_tests() -> None:
    solve("proxy-author-blind")
    sent = json.dumps(scripted_calls("local/proxy-author-blind"))
    assert "def count_windows" in sent  # it did explore the repository
    folder = EXAMPLES_DIR / EXAMPLE.task.instance_id
    added = [c.patch for c in EXAMPLE.task.candidates] + [(folder / "gold.diff").read_text()]
    lines = [ln[1:] for text in added for ln in text.splitlines() if ln[:1] == "+"]
    lines += [
        ln for p in (folder / "hidden_tests").rglob("*.py") for ln in p.read_text().splitlines()
    ]
    repo = "\n".join(p.read_text() for p in EXAMPLE.repo_dir.rglob("*.py"))
    # what only the candidates, the gold patch and the hidden tests hold (not the base tree)
    secret = {ln.strip() for ln in lines if len(ln.strip()) > 12 and ln.strip() not in repo}
    assert len(secret) > 20
    leaked = [ln for ln in secret if json.dumps(ln)[1:-1] in sent]
    assert not leaked


@require_bwrap
def test_an_author_that_changes_nothing_is_told_once_then_leaves_an_empty_proxy() -> None:
    from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox

    def lazy(body: dict[str, Any], n: int) -> Reply:
        return Reply(content="THOUGHT: nothing to do.\n\n```submit\n```")

    author = ProxyAuthor(LLM(LLMConfig(model=register_script("local/lazy-author", lazy))))

    async def go() -> tuple[ProxyPatch, list[dict[str, Any]]]:
        async with BubblewrapSandbox(EXAMPLE.repo_dir) as sb:
            return await author.solve(EXAMPLE.task, sb)

    patch, steps = asyncio.run(go())
    assert patch.diff == "" and patch.submitted and len(steps) == 2
    told = scripted_calls("local/lazy-author")[1]["messages"][-1]["content"]
    assert "not changed any file" in told


def scripted_solve(name: str, turns: list[str], **kw: Any) -> tuple[Any, list[dict[str, Any]]]:
    """A scripted author (one fenced block a turn, the last one repeated) in the bubblewrap sandbox;
    the patch, or the ExplorationFailed, and the steps."""
    from agentic_rubrics.exceptions import ExplorationFailed
    from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox

    def script(body: dict[str, Any], n: int) -> Reply:
        turn = sum(1 for m in body["messages"] if m["role"] == "assistant")
        return Reply(content=f"THOUGHT: step {turn}.\n\n{turns[min(turn, len(turns) - 1)]}")

    author = ProxyAuthor(LLM(LLMConfig(model=register_script(f"local/{name}", script))), **kw)

    async def go() -> tuple[Any, list[dict[str, Any]]]:
        async with BubblewrapSandbox(EXAMPLE.repo_dir) as sb:
            try:
                return await author.solve(EXAMPLE.task, sb)
            except ExplorationFailed as failed:
                return failed, failed.steps

    return asyncio.run(go())


EDIT = "```bash\nprintf 'x = 1\\n' >> pagewise/constants.py && rm -f pagewise/errors.py\n```"


@require_bwrap
def test_an_author_out_of_turns_leaves_its_diff_as_it_stood() -> None:
    patch, steps = scripted_solve("out-of-turns", [EDIT, "```bash\nls\n```"], max_turns=3)
    assert isinstance(patch, ProxyPatch) and not patch.submitted and len(steps) == 3
    changed = {(f.old_path, f.new_path) for f in parse_patch(patch.diff).files}
    assert changed == {
        ("pagewise/constants.py", "pagewise/constants.py"),
        ("pagewise/errors.py", None),  # a deleted file is part of the proxy
    }


@require_bwrap
def test_a_diff_over_its_bound_is_cut_and_said_so() -> None:
    big = "```bash\nseq 1 20000 > numbers.txt\n```"
    patch, _ = scripted_solve("big-diff", [big, "```submit\n```"], max_patch_chars=5000)
    assert patch.truncated and patch.submitted and len(patch.diff) <= 6000


@require_bwrap
def test_an_author_that_destroys_the_snapshot_gets_no_proxy() -> None:
    from agentic_rubrics.exceptions import ExplorationFailed

    hostile = "```bash\nrm -rf ~/.proxy-base.git && echo gone\n```"
    failed, steps = scripted_solve("no-snapshot", [EDIT, hostile, "```submit\n```"], max_turns=4)
    assert isinstance(failed, ExplorationFailed) and failed.reason == "diff_failed"
    assert steps[-1]["tool"] == "submit"  # each submit answered: the tool failed


# --------------------------------------------------------------------------- the judge

PROXY = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def patch_of(n: int) -> str:
    return f"--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-x = 1\n+x = {n}\n"


def rate(script: Any, patches: dict[str, str], name: str, **kw: Any) -> dict[str, Any]:
    model = register_script(f"local/{name}", script)
    judge = SimilarityJudge(LLM(LLMConfig(model=model)), **kw)
    return asyncio.run(judge.rate("t-1", "x should be 2", PROXY, patches))


def labels_of(body: dict[str, Any]) -> list[str]:
    text = body["messages"][-1]["content"]
    return json.loads(text.split("Rate exactly these candidates: ")[1].split("\n")[0])


def test_the_fake_judge_rates_by_real_overlap() -> None:
    assert overlap_rating(PROXY, PROXY) == 5
    assert overlap_rating(PROXY, "--- a/z.py\n+++ b/z.py\n@@ -1 +1 @@\n-a\n+b\n") == 1
    assert overlap_rating(PROXY, patch_of(3)) == 4  # same file (1), a third of the lines: 1 + 2.67
    assert [normalised(r) for r in (1, 3, 5)] == [0.0, 0.5, 1.0]


def test_candidates_are_batched_and_rated_against_the_proxy() -> None:
    patches = {f"cand-{n}": patch_of(n) for n in range(2, 7)}
    patches["duplicate"] = patch_of(2)  # identical to cand-2: rated once
    patches["empty"] = "  \n"
    got = rate(fake_model(), patches, "sim-batched", candidates_per_call=2)
    calls = scripted_calls("local/sim-batched")
    assert sorted(len(labels_of(b)) for b in calls) == [1, 2, 2]  # 5 distinct patches, 2 a call
    assert got["cand-2"].rating == 5 and got["cand-2"].value == 1.0
    assert got["duplicate"].rating == 5
    assert {got[f"cand-{n}"].rating for n in range(3, 7)} == {4}
    assert got["empty"].rating is None and got["empty"].reason == "empty_patch"
    sent = json.dumps(calls)
    assert "cand-" not in sent and "duplicate" not in sent  # labels only, never candidate ids


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        ("I think they are close.", "unparsable_reply"),
        ("", "empty_reply"),
        ('{"C1": 0}', "invalid_value"),
        ('{"C1": 6}', "invalid_value"),
        ('{"C1": "4"}', "invalid_value"),
        ('{"C1": 4.0}', "invalid_value"),
        ('{"C1": true}', "invalid_value"),
        ('{"C1": 2, "C1": 5}', "invalid_value"),
        ('{"C1": {"rating": 4}}', "invalid_value"),
        ('{"C1": null}', "invalid_value"),
        ("[4]", "unparsable_reply"),
        ("[" * 5000 + "{}", "unparsable_reply"),
        ("{}", "skipped_by_judge"),
    ],
)
def test_a_malformed_reply_leaves_the_rating_missing_with_its_reason(
    answer: str, reason: str
) -> None:
    got = rate(
        lambda b, n: Reply(content=answer),
        {"a": patch_of(2)},
        f"sim-bad-{len(answer)}-{answer[:9]}",
    )
    assert got["a"].rating is None and got["a"].value is None and got["a"].reason == reason


def test_a_truncated_reply_and_a_skipped_candidate() -> None:
    cut = rate(
        lambda b, n: Reply(content='{"C1": 4', finish_reason="length"),
        {"a": patch_of(2)},
        "sim-cut",
    )
    assert cut["a"].reason == "truncated"

    def skips_the_second(body: dict[str, Any], n: int) -> Reply:
        labels = labels_of(body)
        return Reply(content=json.dumps({labels[0]: 4}) if len(labels) > 1 else "{}")

    got = rate(skips_the_second, {"a": patch_of(2), "b": patch_of(3)}, "sim-skip")
    asked = [len(labels_of(b)) for b in scripted_calls("local/sim-skip")]
    assert asked == [2, 1]  # the skipped one asked again, alone, once
    assert {(r.rating, r.reason) for r in got.values()} == {(4, None), (None, "skipped_by_judge")}


def test_repeats_take_the_majority_and_a_tie_is_a_split_vote() -> None:
    assert majority([(4, None), (4, None), (2, None)]).rating == 4
    assert majority([(4, None), (2, None)]).reason == "split_vote"
    assert majority([(None, "truncated"), (3, None)]).rating == 3
    assert majority([(None, "budget"), (None, "truncated")]).reason == "budget"

    def drifting(body: dict[str, Any], n: int) -> Reply:
        return Reply(content=json.dumps({"C1": 4 if n % 3 else 2}))

    got = rate(drifting, {"a": patch_of(2)}, "sim-repeats", repeats=3)
    assert got["a"].rating == 4 and sorted(got["a"].ratings) == [2, 4, 4]


# --------------------------------------------------------------------------- the selector


class Stored:
    def __init__(self, record: Any) -> None:
        self.instance_id = "t-1"
        self.scores: dict[str, Any] = {"a": None, "b": None, "c": None, "d": None}
        self.baselines = {} if record is None else {"proxy_similarity": record}


def test_the_selector_ranks_by_the_normalised_rating_and_never_invents_one() -> None:
    from agentic_rubrics.exceptions import DataError
    from agentic_rubrics.rank.selectors import get_selector

    selector = get_selector("similarity")
    record = {"status": "graded", "value": {"a": 1.0, "b": 0.25, "c": None, "d": True}}
    assert selector.ranking(Stored(record)) == {"a": 1.0, "b": 0.25, "c": None, "d": None}
    hostile = {"value": {"a": "0.5", "b": 2.0, "c": -1, "d": float("nan")}}
    assert set(selector.ranking(Stored(hostile)).values()) == {None}
    for broken in (None, {"value": [1, 2]}, "graded"):
        with pytest.raises(DataError, match="similarity"):
            selector.ranking(Stored(broken))


# --------------------------------------------------------------------------- runs


def run_cli(command: str, tasks: Path, out: Path, url: str, *extra: str) -> Any:
    from typer.testing import CliRunner

    from agentic_rubrics.cli.app import app

    settings = out.parent / f"{out.name}-settings.yaml"
    settings.write_text("bootstrap_resamples: 20\nplots: false\n")
    args = [command, "--tasks", str(tasks), "--out", str(out), "--model", "openai/fake",
            "--api-base", url, "--config", str(settings), "--verifiers", "rubric,similarity",
            "--selectors", "rubric,similarity,random", "--quiet", *extra]  # fmt: skip
    return CliRunner().invoke(app, args)


def proxy_calls(srv: Any) -> int:
    """Requests of the proxy-patch author the server answered."""
    return sum("Your job is to fix the issue" in json.dumps(b) for b in srv.requests)


def similarity_rows(out: Path, iid: str) -> list[dict[str, Any]]:
    from agentic_rubrics.runfolder.files import read_jsonl

    return [r for _, r in read_jsonl(out / "proxies" / iid / "similarity.jsonl")]


def some_tasks(tmp_path: Path, ids: list[str]) -> Path:
    from agentic_rubrics.datasets.bundled import write_tasks_jsonl

    every = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()
    out = tmp_path / "tasks.jsonl"
    out.write_text("".join(f"{x}\n" for x in every if json.loads(x)["instance_id"] in ids))
    return out


@pytest.fixture(scope="module")
def bundled(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, int]:
    """Every bundled task run with --verifiers rubric,similarity, the shipped fake over the loopback
    server playing the judge, the proxy author and the similarity judge: tasks, run folder, and the
    proxy author's requests."""
    from agentic_rubrics.datasets.bundled import write_tasks_jsonl
    from agentic_rubrics.testing import LoopbackServer

    root = tmp_path_factory.mktemp("similarity-run")
    tasks, out = write_tasks_jsonl(root / "tasks.jsonl"), root / "run"
    with LoopbackServer(fake_model()) as srv:
        result = run_cli("run", tasks, out, srv.url)
        calls = proxy_calls(srv)
    assert result.exit_code == 0, result.output
    return tasks, out, calls


@require_bwrap
def test_a_run_writes_a_proxy_and_a_rating_for_every_candidate(
    bundled: tuple[Path, Path, int],
) -> None:
    from agentic_rubrics.datasets.bundled import load_examples

    _, out, calls = bundled
    examples = load_examples()
    assert calls == 4 * len(examples)  # find, search, edit, submit
    rated = 0
    for ex in examples:
        iid = ex.task.instance_id
        folder = out / "proxies" / iid
        status = json.loads((folder / "status.json").read_text())
        record = json.loads((folder / "proxy.json").read_text())
        diff = (folder / "proxy.diff").read_text()
        assert status["status"] == "ok" and record["source"] == "writer:proxy-agent", record
        assert record["sha256"] == hashlib.sha256(diff.encode()).hexdigest()
        assert (
            record["turns"] == 4 and record["cost"]["proxy"]["calls"] == 4 and record["submitted"]
        )
        assert (folder / "trajectory.json").is_file()
        rows = similarity_rows(out, iid)
        assert [r["candidate_id"] for r in rows] == [c.id for c in ex.task.candidates]
        for row, cand in zip(rows, ex.task.candidates, strict=True):
            if not cand.patch.strip():
                assert (row["origin"], row["reason"]) == ("missing", "empty_patch")
                continue
            # the fake's rating is a real comparison with the proxy on disk
            assert row["origin"] == "judged", row
            assert row["rating"] == overlap_rating(diff, cand.patch)
            assert row["value"] == (row["rating"] - 1) / 4
            rated += 1
    assert rated > 50
    report = json.loads((out / "report.json").read_text())
    similarity = report["selectors"]["similarity"]
    assert similarity["best_at_k"]["1"] is not None and similarity["roc_auc"] is not None
    empty = sum(1 for ex in examples for c in ex.task.candidates if not c.patch.strip())
    assert report["verifiers"]["similarity"] == {
        "tasks": len(examples),
        "graded": len(examples),
        "excluded": {},
        "scored_candidates": rated,
        "missing_candidates": {"empty_patch": empty},
        "artifact": "proxy",
        "folder": "proxies",
    }
    assert "- Similarity verifier: 10 of 10 tasks graded" in (out / "report.md").read_text()


@require_bwrap
def test_given_proxies_are_reused_as_they_are(
    bundled: tuple[Path, Path, int], tmp_path: Path
) -> None:
    import shutil

    from agentic_rubrics.testing import LoopbackServer

    tasks, first, _ = bundled
    given = tmp_path / "given"
    shutil.copytree(first / "proxies", given)
    with LoopbackServer(fake_model()) as srv:
        result = run_cli("run", tasks, tmp_path / "reused", srv.url, "--proxies", str(given))
        assert result.exit_code == 0, result.output
        assert proxy_calls(srv) == 0
    for iid in ("harbourline__pagewise-214", "quillworks__durata-57"):
        record = json.loads((tmp_path / "reused" / "proxies" / iid / "proxy.json").read_text())
        assert record["source"] == "given" and record["status"] == "ok"
        assert similarity_rows(tmp_path / "reused", iid) == similarity_rows(first, iid)


@require_bwrap
def test_a_resume_does_not_write_the_proxy_again(tmp_path: Path) -> None:
    from agentic_rubrics.testing import LoopbackServer

    iid = "quillworks__durata-57"
    tasks, out = some_tasks(tmp_path, [iid]), tmp_path / "run"
    with LoopbackServer(fake_model()) as srv:
        assert run_cli("explore", tasks, out, srv.url).exit_code == 0
        assert proxy_calls(srv) == 4
    written = (out / "proxies" / iid / "proxy.diff").read_text()
    assert not (out / "proxies" / iid / "similarity.jsonl").exists()  # explored, not judged
    with LoopbackServer(fake_model()) as srv:
        result = run_cli("run", tasks, out, srv.url)
        assert result.exit_code == 0, result.output
        assert proxy_calls(srv) == 0  # the proxy on disk is reused
    assert (out / "proxies" / iid / "proxy.diff").read_text() == written
    assert {r["origin"] for r in similarity_rows(out, iid)} <= {"judged", "missing"}
    assert any(r["origin"] == "judged" for r in similarity_rows(out, iid))
    # a proxy edited on disk after it was written is not trusted: it is written again
    (out / "proxies" / iid / "proxy.diff").write_text(written + "\n")
    (out / "progress.jsonl").write_text("")
    with LoopbackServer(fake_model()) as srv:
        assert run_cli("run", tasks, out, srv.url).exit_code == 0
        assert proxy_calls(srv) == 4


HOSTILE_PROXIES = {
    "harbourline__pagewise-214": ("", "proxy_empty"),
    "quillworks__durata-57": ("this is not a diff\n", "proxy_does_not_apply"),
    "ferrow__bankdays-114": (
        "--- a/bankdays/nothere.py\n+++ b/bankdays/nothere.py\n@@ -1 +1 @@\n-a\n+b\n",
        "proxy_does_not_apply",
    ),
    "jmarsh__celltable-57": (None, "proxy_not_found"),
}


@require_bwrap
def test_unusable_given_proxies_leave_every_candidate_missing_with_the_reason(
    tmp_path: Path,
) -> None:
    from agentic_rubrics.pipeline.config import RunConfig
    from agentic_rubrics.pipeline.runner import run

    given = tmp_path / "given"
    for iid, (text, _) in HOSTILE_PROXIES.items():
        if text is not None:
            (given / iid).mkdir(parents=True)
            (given / iid / "proxy.diff").write_text(text)
    (given / "jmarsh__celltable-57").mkdir()  # a link out of DIR is never read
    (given / "jmarsh__celltable-57" / "proxy.diff").symlink_to(
        EXAMPLES_DIR / "ferrow__bankdays-114" / "gold.diff"
    )
    model = register_script("local/sim-hostile", fake_model())
    config = RunConfig.model_validate(
        {
            "verifiers": ["rubric", "similarity"],
            "proxies_dir": str(given),
            "judge": {"kind": "llm", "model": {"model": model}},
            "selectors": ["rubric", "similarity"],
            "bootstrap_resamples": 0,
            "plots": False,
        }
    )
    out = tmp_path / "run"
    run(some_tasks(tmp_path, list(HOSTILE_PROXIES)), out, config)
    assert not any(ASKS in json.dumps(b) for b in scripted_calls(model))  # nothing rated
    for iid, (_, reason) in HOSTILE_PROXIES.items():
        status = json.loads((out / "proxies" / iid / "status.json").read_text())
        assert (status["status"], status["reason"]) == ("failed", reason), iid
        rows = similarity_rows(out, iid)
        assert rows and all(r["origin"] == "missing" and r["reason"] == reason for r in rows)
    report = json.loads((out / "report.json").read_text())
    assert report["selectors"]["similarity"]["scored_candidates"]["n"] == 0
    summary = report["verifiers"]["similarity"]
    assert summary["graded"] == 0 and summary["scored_candidates"] == 0
    assert summary["excluded"] == {
        "proxy_does_not_apply": 2,
        "proxy_empty": 1,
        "proxy_not_found": 1,
    }
    from agentic_rubrics.report.problems import diagnose
    from agentic_rubrics.runfolder.report import Report

    fatal = diagnose(Report.model_validate(report)).fatal
    assert any("The similarity verifier scored no candidate" in f for f in fatal), fatal


def test_malformed_similarity_replies_in_a_run_are_missing_with_their_reasons(
    tmp_path: Path,
) -> None:
    from agentic_rubrics.pipeline.config import RunConfig
    from agentic_rubrics.pipeline.runner import run

    iid = "harbourline__pagewise-214"
    given = tmp_path / "given" / iid
    given.mkdir(parents=True)
    gold = (EXAMPLES_DIR / iid / "gold.diff").read_text()
    (given / "proxy.diff").write_text(gold)
    fake = fake_model()
    garbage = iter(["not json", '{"C1": 9, "C2": "3", "C3": 2.5}', '{"C2": 4}'])

    def script(body: dict[str, Any], n: int) -> Reply:
        if ASKS in json.dumps(body.get("messages", [])[:1]):
            return Reply(content=next(garbage, "{}"))
        return fake(body, n)

    model = register_script("local/sim-garbage", script)
    config = RunConfig.model_validate(
        {
            "verifiers": ["rubric", "similarity"],
            "proxies_dir": str(tmp_path / "given"),
            "judge": {"kind": "llm", "model": {"model": model}},
            "similarity": {"candidates_per_call": 3, "concurrency": 1},
            "selectors": ["similarity", "rubric"],
            "bootstrap_resamples": 0,
            "plots": False,
        }
    )
    out = tmp_path / "run"
    run(some_tasks(tmp_path, [iid]), out, config)
    rows = similarity_rows(out, iid)
    reasons = {r["reason"] for r in rows if r["origin"] == "missing"}
    assert reasons >= {"unparsable_reply", "invalid_value"}, rows
    assert all(r["rating"] is None for r in rows if r["origin"] == "missing")
    assert all(1 <= r["rating"] <= 5 for r in rows if r["origin"] == "judged")
    assert json.loads((out / "report.json").read_text())["selectors"]["similarity"]


class Clobbering:
    """A verifier storing its record under a key a selector's features already use."""

    name = "clobbering"

    def earlier(self, folder: Any, instance_id: str) -> None:
        return None

    async def run(self, scope: Any, earlier: Any, *, grade: bool) -> tuple[Any, Any]:
        from agentic_rubrics.pipeline.verifiers import Graded
        from agentic_rubrics.runfolder.records import ArtifactRecord
        from agentic_rubrics.runfolder.verifier_rows import ArtifactStatus

        iid = scope.task.instance_id
        status = ArtifactStatus(instance_id=iid, verifier=self.name, source="none", status="failed")
        artifact = ArtifactRecord(
            instance_id=iid, verifier=self.name, folder="clobbering", status=status
        )
        return artifact, Graded(baselines={"similarity": {"value": {}}})


def test_a_verifier_record_never_replaces_a_selector_feature(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: a verifier storing ``similarity`` silently replaced self-consistency's record, and the
    report failed later on a KeyError far from the cause."""
    from agentic_rubrics.exceptions import DataError
    from agentic_rubrics.pipeline import verifiers
    from agentic_rubrics.pipeline.config import RunConfig
    from agentic_rubrics.pipeline.runner import run

    spec = verifiers.VerifierSpec(name="clobbering", folder="clobbering", implementation=Clobbering)
    monkeypatch.setitem(verifiers._REGISTERED, spec.name, spec)
    config = RunConfig(verifiers=["rubric", "clobbering"], bootstrap_resamples=0, plots=False)
    with pytest.raises(DataError, match=r"a verifier stores \['similarity'\], a selector's"):
        run(some_tasks(tmp_path, ["quillworks__durata-57"]), tmp_path / "run", config)


def test_the_configuration_names_the_verifier_and_hashes_it_only_when_used() -> None:
    from agentic_rubrics.pipeline.config import RunConfig

    judge = {"kind": "llm", "model": {"model": "openai/fake"}}
    alone = RunConfig.model_validate({"verifiers": ["similarity"], "judge": judge})
    assert alone.selectors[0] == "similarity"  # it leads when it is the only verifier
    both = RunConfig.model_validate({"verifiers": ["rubric", "similarity"], "judge": judge})
    assert both.selectors[0] == "rubric" and "similarity" in both.selectors
    assert {"similarity_judge", "proxy_agent"} <= set(both.prompt_hashes())
    given = RunConfig.model_validate({**both.model_dump(), "proxies_dir": "/p"})
    assert "proxy_agent" not in given.prompt_hashes()
    assert "similarity_judge" in given.prompt_hashes()
    with pytest.raises(ValueError, match="similarity verifier needs a judge model"):
        RunConfig.model_validate({"verifiers": ["rubric", "similarity"]})
    # a run that does not name the verifier hashes as before, whatever its section says
    plain = RunConfig.model_validate({"judge": judge})
    tuned = RunConfig.model_validate({"judge": judge, "similarity": {"candidates_per_call": 2}})
    assert plain.content_hash() == tuned.content_hash() != both.content_hash()
    fewer = RunConfig.model_validate(
        {**both.model_dump(), "similarity": {"candidates_per_call": 2}}
    )
    assert fewer.content_hash() != both.content_hash()
