"""The patch-similarity verifier: the proxy-patch author (the agent in a solve role, in the bubblewrap
sandbox), the batched similarity judge read defensively, the ``similarity`` selector, and runs with
``--verifiers rubric,similarity`` played by the shipped fake."""

from __future__ import annotations

import asyncio
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
from agentic_rubrics.testing.similarity import overlap_rating

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
        self.baselines = {} if record is None else {"similarity": record}


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
