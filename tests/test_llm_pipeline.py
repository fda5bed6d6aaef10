"""The LLM judge inside the main job: S, coverage and decisions when the judge fails, dedup, repeats,
cost and budget, the response cache, resuming, the patch classifier, and worker processes."""

from __future__ import annotations

import hashlib
import json
import logging
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.llm.door import LLM, CallFailed, LLMConfig, import_litellm
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.protocols import Completion
from agentic_rubrics.rank.classifier import yes_probability
from agentic_rubrics.rubric.file import rubric_to_yaml
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.testing import LoopbackServer, Reply, judge_answer, requested_ids

from .conftest import item, rubric

RUBRIC = rubric(
    file_change=[item("FC1", 3, {"touches": "core.py"})],
    spec_alignment=[item("SA1", 3), item("SA2", 2)],
    runtime=[item("RT1", 1)],
)
GOOD = "diff --git a/core.py b/core.py\nindex 0000001..0000002 100644\n--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
# the same change: an index line and trailing white space do not make it another patch
GOOD_TWIN = "diff --git a/core.py b/core.py\nindex 1111111..2222222 100644\n--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1  \n+x = 2\n"
OTHER = "--- a/util.py\n+++ b/util.py\n@@ -1 +1 @@\n-y = 1\n+y = 3\n"
Script = Callable[[dict[str, Any], int], Reply]


def make_inputs(tmp: Path, n_tasks: int = 2, source: str | None = None) -> tuple[Path, Path]:
    rows = []
    for t in range(n_tasks):
        iid = f"demo__task-{t}"
        rows.append(
            {
                "instance_id": iid,
                "problem_statement": f"Task {t}: x should be 2",
                "candidates": [
                    {"id": "c1", "patch": GOOD, "resolved": True, "source": source},
                    {"id": "c2", "patch": GOOD_TWIN, "resolved": True},
                    {"id": "c3", "patch": OTHER, "resolved": False},
                    {"id": "c4", "patch": "", "resolved": False},
                ],
            }
        )
        path = tmp / "rubrics" / iid / "rubrics.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(rubric_to_yaml(RUBRIC))
    tasks = tmp / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return tasks, tmp / "rubrics"


def cfg(server: LoopbackServer, rubrics: Path, **extra: Any) -> Any:
    # a roomy timeout: no test here is about it, and a call cut at 1 s on a loaded machine is retried,
    # which changes the counts the tests assert
    model = {"model": "openai/judge-under-test", "api_base": server.url, "timeout": 30.0,
             "max_retries": 1, "backoff_initial": 0.01, **extra.pop("model", {})}  # fmt: skip
    judge = {"kind": "llm", "model": model, **extra.pop("judge", {})}
    extra.setdefault("selectors", ["rubric", "self_consistency", "random"])
    return load_config(
        None,
        {
            "judge": judge,
            "rubrics_dir": str(rubrics),
            "bootstrap_resamples": 20,
            "plots": False,
            **extra,
        },
    )


def rows(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in read_jsonl(path)]


def by_candidate(out: Path) -> dict[tuple[str, str], dict[str, tuple[str, Any, Any]]]:
    got: dict[tuple[str, str], dict[str, tuple[str, Any, Any]]] = {}
    for v in rows(out / "verdicts.jsonl"):
        got.setdefault((v["instance_id"], v["candidate_id"]), {})[v["item_id"]] = (
            v["origin"],
            v["value"],
            v["reason"],
        )
    return got


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        (lambda b, n: Reply(status=500), "provider_error"),
        (lambda b, n: Reply(content=""), "empty_reply"),
    ],
    ids=["judge-fails", "judge-answers-empty"],
)
def test_judge_turned_off_leaves_s_to_the_checks(
    tmp_path: Path, script: Script, reason: str
) -> None:
    tasks, rubrics = make_inputs(tmp_path)
    with LoopbackServer(script) as srv:
        report = run(tasks, tmp_path / "out", cfg(srv, rubrics))
    assert report is not None
    got = by_candidate(tmp_path / "out")
    for key, items in got.items():
        assert items["FC1"][0] == "checked"
        expected_missing = "empty_patch" if key[1] == "c4" else reason
        assert {items[i] for i in ("SA1", "SA2", "RT1")} == {("missing", None, expected_missing)}
    # S rests on FC1 alone (weight 3 of 9): coverage 1/3 is below 0.5, so inconclusive, never 0
    assert report["coverage"]["weight_with_verdict"]["value"] == pytest.approx(3 / 9)
    decisions = Counter(
        d for t in report["tasks"] for d, n in t["decisions"].items() for _ in range(n)
    )
    assert decisions == {"inconclusive": 6, "reject": 2}  # the two empty patches are rejected
    assert report["decision_reasons"] == {"low_coverage": 6, "empty_patch": 2}
    assert report["verdicts"]["missing_by_reason"][reason] == 2 * 3 * 3


def test_judge_answering_the_wrong_items(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path)
    with LoopbackServer(lambda b, n: Reply(content=json.dumps({"SA1": 0, "ZZ": 1}))) as srv:
        report = run(tasks, tmp_path / "out", cfg(srv, rubrics))
        # per unique non-empty patch: one batched call, then SA2 and RT1 asked again alone
        assert len(srv.requests) == 2 * 2 * 3
    assert report is not None
    c1 = by_candidate(tmp_path / "out")[("demo__task-0", "c1")]
    assert c1 == {
        "FC1": ("checked", 1, "touches"),
        "SA1": ("judged", 0, None),
        "SA2": ("missing", None, "skipped_by_judge"),
        "RT1": ("missing", None, "skipped_by_judge"),
    }
    # S = (3*1 + 3*0) / 6 = 0.5 with coverage 6/9: a reject by score, not by missing items
    task = report["tasks"][0]
    assert task["decisions"] == {"reject": 4}
    assert report["decision_reasons"] == {"score_below_review": 6, "empty_patch": 2}


def test_identical_patches_judged_once_and_empty_never_sent(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path)
    with LoopbackServer(judge_answer(1)) as srv:
        run(tasks, tmp_path / "out", cfg(srv, rubrics))
        assert len(srv.requests) == 2 * 2  # two tasks x (c1 == c2, c3); c4 is empty
    got = by_candidate(tmp_path / "out")
    assert got[("demo__task-0", "c1")] == got[("demo__task-0", "c2")]
    assert got[("demo__task-0", "c4")]["SA1"] == ("missing", None, "empty_patch")


def test_repeats_majority_split_votes_flakiness_and_pick_changes(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=1)
    seen: Counter[tuple[str, str]] = Counter()

    def script(body: dict[str, Any], n: int) -> Reply:
        text = body["messages"][-1]["content"]
        fenced = text.split("## Candidate patch")[1].split("Decide each rubric item")[0]
        patch_id = hashlib.sha256(fenced.encode()).hexdigest()
        out = {}
        for i in requested_ids(body):
            seen[(patch_id, i)] += 1
            out[i] = 1 if i != "SA2" else seen[(patch_id, i)] % 2  # SA2 flips every time
        return Reply(content=json.dumps(out))

    with LoopbackServer(script) as srv:
        report = run(tasks, tmp_path / "r3", cfg(srv, rubrics, judge={"repeats": 3}))
        assert len(srv.requests) == 2 * 3
    assert report is not None
    verdicts = rows(tmp_path / "r3" / "verdicts.jsonl")
    c1 = [v for v in verdicts if v["candidate_id"] == "c1"]
    assert Counter(v["repeat"] for v in c1) == {0: 4, 1: 3, 2: 3}  # the checked item only once
    assert sorted(v["value"] for v in c1 if v["item_id"] == "SA2") == [0, 1, 1]
    # SA2 disagrees across repeats on both unique patches; SA1 and RT1 never do
    assert report["flakiness"] == pytest.approx(2 / 6) and report["flakiness_items"] == 6
    assert report["selection_changes_between_repeats"]["of"] == 1
    seen.clear()
    with LoopbackServer(script) as srv:
        split = run(tasks, tmp_path / "r2", cfg(srv, rubrics, judge={"repeats": 2}))
    assert split is not None and split["verdicts"]["missing_by_reason"] == {"empty_patch": 6}
    # with two repeats SA2 ties 1-1 on every patch: a split vote, so it leaves S (weight 2 of 9)
    assert split["coverage"]["weight_with_verdict"] == {"value": 24 / 36, "n": 24, "of": 36}
    md = (tmp_path / "r2" / "report.md").read_text()
    assert "Flakiness: 0.333" in md and "pick changes between repeats" in md


def test_cost_budget_and_unknown_prices(tmp_path: Path) -> None:
    litellm = import_litellm()
    litellm.register_model({"openai/priced-judge": {"litellm_provider": "openai", "mode": "chat",
                                                     "input_cost_per_token": 1e-4, "output_cost_per_token": 0.0}})  # fmt: skip
    tasks, rubrics = make_inputs(tmp_path, n_tasks=3)
    with LoopbackServer(judge_answer(1)) as srv:  # 100 prompt tokens a call: $0.01 each
        report = run(
            tasks, tmp_path / "b",
            cfg(srv, rubrics, model={"model": "openai/priced-judge", "concurrency": 1},
                judge={"concurrency": 1}, max_cost_usd=0.025, task_concurrency=1),
        )  # fmt: skip
        assert len(srv.requests) == 3  # the third call starts at $0.02 < $0.025; then no more
    assert report is not None
    assert report["cost"]["usd"] == pytest.approx(0.03) and report["cost"]["calls"] == 3
    assert report["cost"]["by_phase"]["judge"]["calls"] == 3
    budget = {
        (v["instance_id"], "c1" if v["candidate_id"] == "c2" else v["candidate_id"], v["item_id"])
        for v in rows(tmp_path / "b" / "verdicts.jsonl")
        if v["reason"] == "budget"
    }
    assert len(budget) == 3 * 3  # three unique patches were left unjudged, three items each
    with LoopbackServer(judge_answer(1)) as srv:
        # a name no test prices (litellm's price registry is global to the process)
        unknown = run(
            tasks, tmp_path / "u", cfg(srv, rubrics, model={"model": "openai/never-priced"})
        )
    assert (
        unknown is not None
        and unknown["cost"]["unknown_cost_calls"] == 6
        and unknown["cost"]["usd"] == 0
    )
    assert "6 calls could not be priced" in (tmp_path / "u" / "report.md").read_text()


def test_rerun_costs_nothing_thanks_to_the_cache(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path)
    with LoopbackServer(judge_answer(1)) as srv:
        first = run(tasks, tmp_path / "out", cfg(srv, rubrics))
        n = len(srv.requests)
        # a task computed again (its progress row lost, as after a kill) asks nothing twice
        progress = tmp_path / "out" / "progress.jsonl"
        progress.write_text(progress.read_text().splitlines()[0] + "\n")
        again = run(tasks, tmp_path / "out", cfg(srv, rubrics))
        assert len(srv.requests) == n  # not one request more
    assert first is not None and again is not None
    assert again["cost"]["calls"] == first["cost"]["calls"] == 4  # the whole run's requests
    assert (
        again["cost"]["cached_calls"] == 2
    )  # the task computed again got its answers from the cache
    assert again["selectors"] == first["selectors"]


def test_killed_run_sends_no_answered_request_twice(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=12)
    fingerprints: list[str] = []

    def script(body: dict[str, Any], n: int) -> Reply:
        fingerprints.append(json.dumps(body["messages"], sort_keys=True))
        return Reply(content=json.dumps(dict.fromkeys(requested_ids(body), 1)))

    with LoopbackServer(script, latency=0.05) as srv:
        config = tmp_path / "c.yaml"
        config.write_text(
            yaml.safe_dump(
                {"bootstrap_resamples": 20, "task_concurrency": 1, "judge": {"items_per_call": 1}}
            )
        )
        cmd = [
            str(Path(sys.executable).parent / "agentic-rubrics"), "run", "--tasks", str(tasks),
            "--out", str(tmp_path / "out"), "--rubrics", str(rubrics), "--config", str(config),
            "--model", "openai/judge-under-test", "--api-base", srv.url, "-q",
        ]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        progress = tmp_path / "out" / "progress.jsonl"
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not (
            progress.exists() and progress.read_text().count("\n") >= 2
        ):
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        answered_before = {fingerprints[i] for i in list(srv.answered)}
        n_before = len(fingerprints)
        done = progress.read_text().count("\n")
        assert 2 <= done < 12
        # the same command resumes it, here in this process (a second process would import litellm again)
        resumed = CliRunner().invoke(app, cmd[1:])
        assert resumed.exit_code == 0, resumed.output
        resent = [f for f in fingerprints[n_before:] if f in answered_before]
        assert resent == []
        assert len(rows(tmp_path / "out" / "progress.jsonl")) == 12


def test_patch_classifier_selector(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path)

    def script(body: dict[str, Any], n: int) -> Reply:
        text = body["messages"][-1]["content"]
        if "Does this patch resolve the issue?" in text:
            yes = "x = 2" in text
            return Reply(content="YES 0.9" if yes else "NO 0.3")
        return Reply(content=json.dumps(dict.fromkeys(requested_ids(body), 1)))

    with LoopbackServer(script) as srv:
        config = cfg(
            srv, rubrics, selectors=["rubric", "self_consistency", "random", "patch_classifier"]
        )
        report = run(tasks, tmp_path / "out", config)
        classifier = [r for r in srv.requests if r.get("logprobs")]
        assert len(classifier) == 2 * 2 and all(r["max_tokens"] == 32 for r in classifier)
    assert report is not None
    assert list(report["selectors"]) == ["rubric", "self_consistency", "random", "patch_classifier"]
    values = rows(tmp_path / "out" / "progress.jsonl")[0]["baselines"]["patch_classifier"]
    assert values == {"c1": 0.9, "c2": 0.9, "c3": pytest.approx(0.3), "c4": None}
    assert report["selectors"]["patch_classifier"]["roc_auc"] == 1.0
    assert report["cost"]["by_phase"]["classifier"]["calls"] == 4


def test_yes_probability_from_logprobs_or_text() -> None:
    lp = [
        {
            "token": "YES",
            "logprob": -0.1,
            "top_logprobs": [
                {"token": "YES", "logprob": -0.2231},
                {"token": "NO", "logprob": -1.6094},
            ],
        }
    ]
    assert yes_probability(Completion(content="YES", logprobs=lp)) == pytest.approx(0.8, abs=1e-3)
    assert yes_probability(Completion(content="NO 0.25")) == 0.25
    assert yes_probability(Completion(content="**YES** 0.7")) == 0.7
    assert yes_probability(Completion(content="no")) == 0.0
    assert yes_probability(Completion(content="maybe")) is None


def test_warns_when_the_judge_generated_candidates(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=1, source="20250101_agent_judge-under-test_run1")
    with caplog.at_level(logging.WARNING), LoopbackServer(judge_answer(1)) as srv:
        run(tasks, tmp_path / "out", cfg(srv, rubrics))
    assert "also generated 1 candidate(s)" in caplog.text
    assert rows(tmp_path / "out" / "progress.jsonl")[0]["judge_generated_candidates"] == 1


def test_cli_with_a_model_keeps_the_key_out_of_every_file(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path)
    secret = "sk-test-" + "k" * 30
    with LoopbackServer(judge_answer(1)) as srv:
        result = CliRunner().invoke(
            app,
            ["run", "--tasks", str(tasks), "--out", str(tmp_path / "out"), "--rubrics", str(rubrics),
             "--model", "openai/judge-under-test", "--api-base", srv.url, "--api-key", secret,
             "--repeats", "2", "--max-cost", "5", "-q"],
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert srv.headers[0]["authorization"] == f"Bearer {secret}"
    for path in (tmp_path / "out").rglob("*"):
        if path.is_file():
            assert secret not in path.read_text(errors="replace"), path
    config = json.loads((tmp_path / "out" / "config.json").read_text())["config"]
    assert config["judge"]["kind"] == "llm" and config["judge"]["repeats"] == 2
    assert config["max_cost_usd"] == 5.0 and "api_key" not in json.dumps(config)


def test_litellm_in_worker_processes(tmp_path: Path) -> None:
    import asyncio

    async def go(url: str) -> tuple[Completion, str]:
        llm = LLM(
            LLMConfig(
                model="openai/judge-under-test",
                api_base=url,
                processes=1,
                max_retries=1,
                backoff_initial=0.01,
            )
        )
        try:
            ok = await llm.complete([{"role": "user", "content": "hi"}])
            try:
                await llm.complete([{"role": "user", "content": "fail please"}])
                kind = "none"
            except CallFailed as failure:
                kind = failure.kind
            return ok, kind
        finally:
            await llm.aclose()

    def script(body: dict[str, Any], n: int) -> Reply:
        return (
            Reply(status=503) if "fail" in body["messages"][0]["content"] else Reply(content="pong")
        )

    with LoopbackServer(script) as srv:
        ok, kind = asyncio.run(go(srv.url))
        assert ok.content == "pong" and ok.usage.cost_usd is None and kind == "transient"
        assert len(srv.requests) == 1 + 2
