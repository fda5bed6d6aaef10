"""Failures say so: transient failures are retried on resume, the configuration hash leaves transport
out, refusals name what differs, a phase failing for everyone ends the run non-zero with the cause and
the fix, partial failures warn at the end, and the primary selector is stated and falls back per task."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentic_rubrics import prompts
from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.retry import transient_rubric_failure
from agentic_rubrics.testing import LoopbackServer, Reply, judge_answer, requested_ids

from .test_llm_pipeline import OTHER, cfg, make_inputs

ROOMY = {"timeout": 60.0}  # seconds: only a hang reaches it; the timeout is not what is tested here


def rows(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in read_jsonl(path)]


def verdicts(out: Path) -> dict[tuple[str, str, str], tuple[str, Any, Any]]:
    return {
        (r["instance_id"], r["candidate_id"], r["item_id"]): (r["origin"], r["value"], r["reason"])
        for r in rows(out / "verdicts.jsonl")
    }


def about_other(body: dict[str, Any]) -> bool:
    return "y = 3" in json.dumps(body["messages"])


def test_transient_failures_are_retried_on_resume_keeping_everything_judged(
    tmp_path: Path,
) -> None:
    tasks, rubrics = make_inputs(tmp_path)

    def flaky(body: dict[str, Any], n: int) -> Reply:  # the server fails on c3's patch only
        if about_other(body):
            return Reply(status=503)
        return Reply(content=json.dumps(dict.fromkeys(requested_ids(body), 1)))

    with LoopbackServer(flaky) as srv:
        config = cfg(srv, rubrics, model=ROOMY)
        for folder in ("out", "frozen"):
            run(tasks, tmp_path / folder, config, stages=("explore", "judge"))
        first = verdicts(tmp_path / "out")
        assert first[("demo__task-0", "c3", "SA1")] == ("missing", None, "provider_error")
        assert first[("demo__task-0", "c1", "SA1")] == ("judged", 1, None)
        # resuming retries exactly the failed items; this time the server answers 0 to everything
        srv.script = judge_answer(0)
        before = len(srv.requests)
        report = run(tasks, tmp_path / "out", config)
        assert len(srv.requests) == before + 2  # c3 of each task: nothing else was asked again
        assert all(about_other(r) for r in srv.requests[before:])
        assert (
            report is not None and "provider_error" not in report["verdicts"]["missing_by_reason"]
        )
        again = verdicts(tmp_path / "out")
        assert again[("demo__task-0", "c3", "SA1")] == ("judged", 0, None)
        assert {k: v for k, v in again.items() if k[1] != "c3"} == {
            k: v for k, v in first.items() if k[1] != "c3"
        }  # everything judged before is kept as it was
        assert len(rows(tmp_path / "out" / "verdicts.jsonl")) == len(first)
        assert len(rows(tmp_path / "out" / "progress.jsonl")) == 2
        # from the command line: --no-retry-missing keeps them as they are, --retry-missing retries
        config_file = tmp_path / "config.yaml"
        config_file.write_text(yaml.safe_dump(config.model_dump(mode="json")))
        command = ["run", "--tasks", str(tasks), "--out", str(tmp_path / "frozen"),
                   "--config", str(config_file), "-q"]  # fmt: skip
        before = len(srv.requests)
        frozen = CliRunner().invoke(app, [*command, "--no-retry-missing"])
        assert frozen.exit_code == 0, frozen.output
        assert len(srv.requests) == before
        assert verdicts(tmp_path / "frozen")[("demo__task-0", "c3", "SA1")][2] == "provider_error"
        # the command ends with the primary selector and why, then one warning line per cause
        assert frozen.stderr.splitlines()[-3].startswith(
            "selections.jsonl: written by the rubric selector — given first in the run's selectors"
        )
        assert frozen.stderr.splitlines()[-2:] == [
            "warning: 6 item verdicts missing: provider_error (the model provider failed after"
            " bounded retries) — run the same command again to retry them",
            "warning: 4 of 6 model requests failed (transient/503 4)",
        ]
        retried = CliRunner().invoke(app, ["judge", *command[1:], "--retry-missing"])
        assert retried.exit_code == 0, retried.output
        assert len(srv.requests) == before + 2
    assert verdicts(tmp_path / "frozen")[("demo__task-0", "c3", "SA1")] == ("judged", 0, None)


def test_a_rubric_that_failed_transiently_is_explored_again(tmp_path: Path) -> None:
    repo = tmp_path / "checkout"  # not there yet: the explorer has no repository
    task = {
        "instance_id": "acme__pkg-1",
        "problem_statement": "`parse` in pkg/core.py crashes on empty input",
        "repo_path": str(repo),
        "candidates": [
            {"id": "c1", "patch": OTHER.replace("util.py", "pkg/core.py"), "resolved": True},
            {"id": "c2", "patch": OTHER, "resolved": False},
        ],
    }
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    config = load_config(
        None,
        {"bootstrap_resamples": 0, "plots": False, "explorer": {"sandbox": {"type": "local-copy"}}},
    )
    first = run(tasks, tmp_path / "out", config)
    assert first is not None and first["rubrics"]["ok"] == 0
    assert first["rubrics"]["failed"] == {"no_repository:no_such_folder": 1}
    (repo / "pkg").mkdir(parents=True)
    (repo / "pkg" / "core.py").write_text("def parse(text):\n    return text.split()\n")
    again = run(tasks, tmp_path / "out", config)
    assert again is not None and again["rubrics"]["ok"] == 1 and again["rubrics"]["failed"] == {}


@pytest.mark.parametrize(
    ("reason", "retried"),
    [
        ("sandbox_error:SandboxError", True),
        ("no_repository", True),
        ("no_repository:fetch_failed", True),
        ("no_repository:no_such_folder", True),
        ("budget", True),
        ("model_error:transient", True),
        ("no_repository:invalid_commit", False),  # a malformed commit stays malformed
        ("rubric_not_found", False),
        ("invalid_rubric", False),
        ("explore_error:ExplorationFailed", False),
    ],
)
def test_which_rubric_failures_are_retried(reason: str, retried: bool) -> None:
    assert transient_rubric_failure(reason) is retried


def test_transport_settings_stay_out_of_the_hash_and_model_and_prompts_enter_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def config(**model: Any) -> Any:
        return load_config(
            None, {"judge": {"kind": "llm", "model": {"model": "openai/judge-a", **model}}}
        )

    base = config().content_hash()
    for transport in (
        {"api_base": "http://other:8000/v1"},
        {"timeout": 5.0},
        {"max_retries": 9},
        {"backoff_initial": 0.1},
        {"concurrency": 2},
    ):
        assert config(**transport).content_hash() == base, transport
    assert config(model="openai/judge-b").content_hash() != base
    assert config(temperature=0.7).content_hash() != base
    assert config().hashed()["prompts"]["judge"] == prompts.load_prompt("judge").hash
    # an edited judge prompt is another configuration
    edited = tmp_path / "prompts"
    shutil.copytree(prompts.prompts_dir(), edited)
    (edited / "judge.yaml").write_text(
        (edited / "judge.yaml").read_text() + "\n# one more line\n", encoding="utf-8"
    )
    monkeypatch.setattr(prompts, "SEARCH_PATH", (edited,))
    prompts.load_prompt.cache_clear()
    try:
        assert config().content_hash() != base
    finally:
        monkeypatch.undo()
        prompts.load_prompt.cache_clear()
    # so a resumed run may reach the model at another address: config.json names the new one
    tasks, rubrics = make_inputs(tmp_path, n_tasks=1)
    judging = ("explore", "judge")
    with LoopbackServer(judge_answer(1)) as one:
        run(tasks, tmp_path / "out", cfg(one, rubrics, model=ROOMY), stages=judging)
    progress = tmp_path / "out" / "progress.jsonl"
    progress.write_text("")  # the task is unfinished again, as after a kill
    with LoopbackServer(judge_answer(1)) as two:
        run(tasks, tmp_path / "out", cfg(two, rubrics, model=ROOMY), stages=judging)
        assert len(two.requests) == 2  # asked there, not answered from the first server's replies
    recorded = json.loads((tmp_path / "out" / "config.json").read_text())["config"]
    assert recorded["judge"]["model"]["api_base"] == two.url


def test_the_refusal_names_what_differs_and_what_report_can_take(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=1)
    out = tmp_path / "out"
    runner = CliRunner()
    fast = tmp_path / "fast.yaml"
    fast.write_text("bootstrap_resamples: 0\n")
    base = ["run", "--tasks", str(tasks), "--out", str(out), "--rubrics", str(rubrics),
            "--config", str(fast), "-q"]  # fmt: skip
    assert runner.invoke(app, base).exit_code == 0
    refused = runner.invoke(
        app, [*base, "--max-turns", "5", "--seed", "7", "--selectors", "rubric,random"]
    )
    assert refused.exit_code == 2
    text = refused.output
    assert "Settings that change results differ:\n  explorer.max_turns: 30 -> 5" in text
    assert "applied without a rerun by `agentic-rubrics report --out" in text
    assert "  seed: 0 -> 7" in text and "  selectors: ['self_consistency'," in text
    # and report takes them, nothing rerun
    verdicts_before = (out / "verdicts.jsonl").read_text()
    done = runner.invoke(
        app, ["report", "--out", str(out), "--seed", "7", "--selectors", "rubric,random", "-q"]
    )
    assert done.exit_code == 0, done.output
    report = json.loads((out / "report.json").read_text())
    assert report["seed"] == 7 and set(report["selectors"]) == {"rubric", "random"}
    assert report["primary_selector"] == "rubric"
    assert report["selection"]["reason"] == "given first in `report --selectors`"
    assert rows(out / "selections.jsonl")[0]["model_name_or_path"] == "agentic-rubrics/rubric"
    assert (out / "verdicts.jsonl").read_text() == verdicts_before
    # resuming with report-time settings alone is no refusal at all
    assert runner.invoke(app, ["judge", *base[1:], "--seed", "7"]).exit_code == 0


def test_a_phase_failing_for_everyone_exits_non_zero_with_the_cause_and_the_fix(
    tmp_path: Path,
) -> None:
    tasks, rubrics = make_inputs(tmp_path)
    runner = CliRunner()
    config = tmp_path / "fast.yaml"
    config.write_text(
        "bootstrap_resamples: 0\njudge: {model: {max_retries: 1, backoff_initial: 0.01}}\n"
    )
    with LoopbackServer(lambda b, n: Reply(status=503)) as srv:
        down = runner.invoke(app, [
            "run", "--tasks", str(tasks), "--out", str(tmp_path / "down"), "--rubrics", str(rubrics),
            "--model", "openai/judge-under-test", "--api-base", srv.url, "--config", str(config), "-q",
        ])  # fmt: skip
        sent = len(srv.requests)
    assert down.exit_code == 1, down.output
    assert (
        f"error: Every one of the {sent} model requests of this run failed (transient/503 {sent})"
        in down.output
    )
    assert "check that the server at --api-base is up" in down.output
    report = json.loads((tmp_path / "down" / "report.json").read_text())
    assert (
        report["problems"]["fatal"]
        and "## Problems" in (tmp_path / "down" / "report.md").read_text()
    )
    # every rubric fails: no rubric for any task in --rubrics
    config.write_text("bootstrap_resamples: 0\n")
    empty = tmp_path / "none"
    empty.mkdir()
    nothing = runner.invoke(app, [
        "run", "--tasks", str(tasks), "--out", str(tmp_path / "norubric"), "--rubrics", str(empty),
        "--selectors", "rubric,random", "--config", str(config), "-q",
    ])  # fmt: skip
    assert nothing.exit_code == 1
    assert "error: Every rubric failed (2 tasks: rubric_not_found 2)" in nothing.output
    assert "agentic-rubrics validate" in nothing.output
    assert (
        "error: The primary selector 'rubric' has a value for no candidate of any of the 2 tasks"
        in nothing.output
    )
    # a partial failure: exit 0, one warning line per cause at the end
    shutil.rmtree(rubrics / "demo__task-1")
    partial = runner.invoke(app, [
        "run", "--tasks", str(tasks), "--out", str(tmp_path / "partial"), "--rubrics", str(rubrics),
        "--selectors", "rubric,self_consistency,random", "--config", str(config), "-q",
    ])  # fmt: skip
    assert partial.exit_code == 0, partial.output
    assert "warning: 1 rubric(s) failed: rubric_not_found\n" in partial.output
    assert (
        "the primary selector 'rubric' had no value in 1 task(s); selections.jsonl took the next selector's pick there (self_consistency 1)"
        in partial.output
    )


def test_the_primary_selector_is_stated_and_falls_back_per_task(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path)
    shutil.rmtree(rubrics / "demo__task-1")  # its rubric fails: rubric S has no value there
    with LoopbackServer(judge_answer(1)) as srv:
        report = run(tasks, tmp_path / "out", cfg(srv, rubrics, selectors=None))
    assert report is not None
    selection = report["selection"]
    assert selection["primary"] == "rubric" and selection["reason"].startswith(
        "the default with a judge model"
    )
    assert (
        selection["fallbacks"] == {"offline_content": 1}
        and selection["tasks_without_primary_value"] == 1
    )
    t1 = next(t for t in report["tasks"] if t["instance_id"] == "demo__task-1")
    assert t1["selected"] == {
        "candidate_id": t1["picks"]["offline_content"]["candidate_id"],
        "selector": "offline_content",
    }
    picked = {
        r["instance_id"]: r["model_patch"] for r in rows(tmp_path / "out" / "selections.jsonl")
    }
    assert picked["demo__task-1"].strip()  # the offline pick, never the empty patch
    md = (tmp_path / "out" / "report.md").read_text()
    assert (
        "Selections (`selections.jsonl`): the `rubric` selector, the default with a judge model"
        in md
    )
    assert "the next selector with one picked: offline_content in 1 task(s)" in md
    # without a model the default primary is self_consistency, and the report says so
    plain = run(
        tasks,
        tmp_path / "plain",
        load_config(None, {"rubrics_dir": str(rubrics), "bootstrap_resamples": 0}),
    )
    assert plain is not None and plain["selection"]["reason"].startswith(
        "the default without a judge model"
    )


def test_a_report_says_which_tasks_of_its_tasks_file_were_never_scored(tmp_path: Path) -> None:
    """A run stopped before some tasks: `report` with the tasks file warns, naming them; with none
    of them scored it fails (it exited 0 with a report of what little was there)."""
    write_tasks_jsonl(tmp_path / "all.jsonl")
    lines = (tmp_path / "all.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "two.jsonl").write_text("".join(lines[:2]))
    (tmp_path / "three.jsonl").write_text("".join(lines[:3]))
    (tmp_path / "other.jsonl").write_text(lines[3])
    out = tmp_path / "run"
    done = CliRunner().invoke(
        app, ["run", "-q", "--tasks", str(tmp_path / "two.jsonl"), "--out", str(out)]
    )
    assert done.exit_code == 0, done.output
    third = json.loads(lines[2])["instance_id"]
    done = CliRunner().invoke(
        app, ["report", "-q", "--out", str(out), "--tasks", str(tmp_path / "three.jsonl")]
    )
    assert done.exit_code == 0, done.output
    assert f"1 of the 3 tasks of {tmp_path / 'three.jsonl'} have not been scored" in done.output
    assert third in done.output
    report = json.loads((out / "report.json").read_text())
    assert any(third in w for w in report["problems"]["warnings"])
    done = CliRunner().invoke(
        app, ["report", "-q", "--out", str(out), "--tasks", str(tmp_path / "other.jsonl")]
    )
    assert done.exit_code == 1 and "None of the 1 tasks" in done.output, done.output
    done = CliRunner().invoke(app, ["report", "-q", "--out", str(out)])  # its own file: complete
    assert done.exit_code == 0 and "not been scored" not in done.output, done.output


def test_an_invalid_reused_rubric_is_named_with_its_line_and_field(tmp_path: Path) -> None:
    """--rubrics DIR whose rubrics.yaml has a wrong weight: the warning names the file, the line and
    the field (it said only `1 rubric(s) failed: rubric_invalid`)."""
    _one_task(tmp_path)
    first = tmp_path / "first"
    done = CliRunner().invoke(
        app, ["run", "-q", "--tasks", str(tmp_path / "one.jsonl"), "--out", str(first)]
    )
    assert done.exit_code == 0, done.output
    (path,) = (first / "rubrics").glob("*/rubrics.yaml")
    text = path.read_text()
    line = 1 + text[: text.index("    weight: ")].count("\n")
    path.write_text(text.replace("    weight: ", "    weight: heavy #", 1))
    args = ["run", "-q", "--tasks", str(tmp_path / "one.jsonl"), "--out", str(tmp_path / "again")]
    done = CliRunner().invoke(app, [*args, "--rubrics", str(first / "rubrics")])
    assert f"rubrics.yaml:{line}:" in done.output and ".weight]" in done.output, done.output


def test_a_rubrics_folder_that_does_not_exist_is_refused_before_any_work(tmp_path: Path) -> None:
    """A typo in --rubrics: exit 2 naming it, nothing recorded, so the corrected command runs (the
    whole job ran, failed every rubric, and the folder then refused the corrected configuration)."""
    _one_task(tmp_path)
    first = tmp_path / "first"
    args = ["run", "-q", "--tasks", str(tmp_path / "one.jsonl")]
    assert CliRunner().invoke(app, [*args, "--out", str(first)]).exit_code == 0
    out = str(tmp_path / "again")
    done = CliRunner().invoke(app, [*args, "--out", out, "--rubrics", str(tmp_path / "rubricz")])
    assert (
        done.exit_code == 2
        and "--rubrics (rubrics_dir):" in done.output
        and "rubricz" in done.output
    )
    assert not (tmp_path / "again" / "config.json").exists()
    done = CliRunner().invoke(app, [*args, "--out", out, "--rubrics", str(first / "rubrics")])
    assert done.exit_code == 0, done.output


def _one_task(tmp_path: Path) -> Path:
    """The first bundled task alone, as ``tmp_path/one.jsonl``."""
    every = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "one.jsonl").write_text(every[0])
    return tmp_path / "one.jsonl"
