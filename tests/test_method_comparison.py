"""``agentic-rubrics compare RUN``: every method of a reported run side by side, each number checked
against figures computed here, independently — report.json's selectors, spend.jsonl's rows by phase,
the tests' outcomes and base runs, the writers' trajectories.

Two run folders: two bundled tasks with the shipped fake in every role (``--explorer agent --verifiers
rubric,tests``, every selector of the comparison but similarity), and the same two tasks with the
static explorer alone, unlabelled until reported with a labels file (no model, no tests verifier).
"""

from __future__ import annotations

import json
import shutil
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import agentic_rubrics as ar
from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.method_comparison import METHODS

from .test_verifier_tests import SLOW, needs_sandbox

pytestmark = pytest.mark.xdist_group("test_method_comparison")  # each run made once
IDS = ["harbourline__pagewise-214", "ferrow__bankdays-114"]
SELECTORS = "rubric,random,self_consistency,patch_classifier,tests,hybrid"


def two_tasks(root: Path, *, labels: bool = True) -> Path:
    rows = [r for _, r in read_jsonl(write_tasks_jsonl(root / "all.jsonl"))]
    keep = [r for r in rows if r["instance_id"] in IDS]
    if not labels:
        for row in keep:
            for c in row["candidates"]:
                c.pop("resolved", None)
    out = root / "tasks.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in keep))
    return out


def cli(*args: str) -> Any:
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def fake_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from agentic_rubrics.testing import LoopbackServer, fake_model

    root = tmp_path_factory.mktemp("compare")
    settings = root / "settings.yaml"
    settings.write_text("bootstrap_resamples: 50\nplots: false\n")
    with LoopbackServer(fake_model()) as srv:
        done = cli("run", "--tasks", str(two_tasks(root)), "--out", str(root / "run"),
                   "--model", "openai/fake", "--api-base", srv.url, "--explorer", "agent",
                   "--verifiers", "rubric,tests", "--selectors", SELECTORS, "--test-reruns", "0",
                   "--config", str(settings), "--quiet")  # fmt: skip
    assert done.exit_code == 0, done.output
    return root / "run"


@pytest.fixture(scope="module")
def static_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The static explorer and the checks-only judge (no model), with no label at all."""
    root = tmp_path_factory.mktemp("static")
    done = cli("run", "--tasks", str(two_tasks(root, labels=False)), "--out", str(root / "run"),
               "--selectors", "rubric,random,self_consistency", "--quiet")  # fmt: skip
    assert done.exit_code == 0, done.output
    return root / "run"


def spend_by_phase(run: Path) -> dict[str, dict[str, float]]:
    """spend.jsonl summed by phase, from its rows (a request's phase is on its ``sent`` row)."""
    phase_of: dict[str, str] = {}
    out: dict[str, dict[str, float]] = defaultdict(lambda: {"usd": 0.0, "estimated_usd": 0.0})
    for _, row in read_jsonl(run / "spend.jsonl"):
        if row["event"] == "sent":
            phase_of[row["call"]] = row["phase"]
        elif row["event"] == "answered":
            for key in ("usd", "estimated_usd"):
                out[phase_of[row["call"]]][key] += row.get(key) or 0.0
    return out


def cpu_of_the_tests(run: Path, tasks: list[dict[str, Any]]) -> tuple[float, float]:
    """The tests verifier's CPU-seconds: its validation per task (the base runs of each status.json)
    and its grading per candidate of the graded tasks (each outcomes.jsonl's runs)."""
    validation = grading = 0.0
    graded = 0
    for task in tasks:
        folder = run / "tests" / task["instance_id"]
        status = json.loads((folder / "status.json").read_text())
        validation += sum(r["cpu_seconds"] or 0 for r in status["validation"]["base_runs"])
        if (folder / "outcomes.jsonl").exists():
            graded += task["candidates"]
            grading += sum(r["cpu_seconds"] or 0 for _, r in read_jsonl(folder / "outcomes.jsonl"))
    return validation / len(tasks), grading / graded


def trajectory_turns(path: Path) -> int:
    return max(s["turn"] for s in json.loads(path.read_text())["steps"])


@needs_sandbox
@SLOW  # the fake run's setup: 20-40 s
def test_every_number_is_the_reports_or_the_artifacts(fake_run: Path) -> None:
    done = cli("compare", str(fake_run))
    assert done.exit_code == 0, done.output
    made = json.loads((fake_run / "comparison.json").read_text())
    assert made == ar.MethodComparison.model_validate(made).to_json()  # typed, as written
    assert made["schema"] == ar.SCHEMA and set(made["methods"]) == set(METHODS) == set(made["cost"])
    report = json.loads((fake_run / "report.json").read_text())
    for method in ("random", "self_consistency", "patch_classifier", "rubric", "tests", "hybrid"):
        got, want = made["methods"][method], report["selectors"][method]
        for key in ("best_at_k", "best_at_k_ci", "realised_best_at_1", "roc_auc", "roc_auc_ci"):
            assert got[key] == want[key], (method, key)
        assert got["coverage"] == want["scored_candidates"] and got["not_measured"] is None
    oracle = made["methods"]["oracle"]
    assert oracle["best_at_k"] == report["oracle_pass_at_k"]
    assert oracle["coverage"]["n"] == report["counts"]["candidates_labelled"]
    assert made["methods"]["similarity"]["not_measured"] == "verifier_not_in_run:similarity"
    # the costs: spend.jsonl by phase over the run's tasks and candidates, the tests' own runs
    tasks, candidates = report["counts"]["tasks"], report["counts"]["candidates"]
    assert tasks == 2
    phases = spend_by_phase(fake_run)
    validation, grading = cpu_of_the_tests(fake_run, report["tasks"])
    cost = made["cost"]
    rubric, tests, hybrid = cost["rubric"], cost["tests"], cost["hybrid"]
    explore, judge = phases["explore"]["estimated_usd"], phases["judge"]["estimated_usd"]
    assert explore > 0 and judge > 0 and grading > 0  # the fake's calls are unpriced: estimated
    assert rubric["artifact_per_task"]["estimated_usd"] == pytest.approx(explore / tasks)
    assert rubric["grading_per_candidate"]["estimated_usd"] == pytest.approx(judge / candidates)
    assert rubric["artifact_per_task"]["usd"] == 0.0  # nothing priced, nothing invented
    classifier = phases["classifier"]["estimated_usd"] / candidates
    assert cost["patch_classifier"]["grading_per_candidate"]["estimated_usd"] == pytest.approx(
        classifier
    )
    writer = phases["tests_writer"]["estimated_usd"] / tasks
    assert tests["artifact_per_task"]["estimated_usd"] == pytest.approx(writer)
    assert tests["artifact_per_task"]["cpu_seconds"] == pytest.approx(validation, abs=1e-3)
    assert tests["grading_per_candidate"]["cpu_seconds"] == pytest.approx(grading, abs=1e-3)
    assert tests["grading_per_candidate"]["estimated_usd"] == 0.0  # executed, not judged
    ids = [t["instance_id"] for t in report["tasks"]]
    rubric_turns = sum(trajectory_turns(fake_run / "trajectories" / f"{i}.json") for i in ids)
    tests_turns = sum(trajectory_turns(fake_run / "tests" / i / "trajectory.json") for i in ids)
    assert rubric["artifact_per_task"]["agent_turns"] == rubric_turns / tasks > 0
    assert tests["artifact_per_task"]["agent_turns"] == tests_turns / tasks > 0
    assert hybrid["artifact_per_task"]["agent_turns"] == (rubric_turns + tests_turns) / tasks
    total = hybrid["total_per_task_at_k16"]
    assert total["estimated_usd"] == pytest.approx(
        (explore + writer * tasks) / tasks + 16 * judge / candidates
    )
    assert total["cpu_seconds"] == pytest.approx(validation + 16 * grading, abs=1e-2)
    for free in ("random", "oracle", "self_consistency"):  # measured, and free
        assert cost[free]["total_per_task_at_k16"] == {
            "usd": 0.0,
            "estimated_usd": 0.0,
            "cpu_seconds": 0.0,
        }
    # the printed table is comparison.md's, and says the figures as the file has them
    md = (fake_run / "comparison.md").read_text()
    assert done.stdout == md
    roc = report["selectors"]["self_consistency"]["roc_auc"]
    assert "| self_consistency | " in md and f"{roc:.3f}" in md
    assert "| similarity | not measured |" in md and "similarity verifier" in md


@needs_sandbox
def test_turns_an_older_status_did_not_record_are_unknown_never_0(
    fake_run: Path, tmp_path: Path
) -> None:
    old = tmp_path / "run"
    shutil.copytree(fake_run, old)
    for status in (old / "rubrics").glob("*/status.json"):
        record = json.loads(status.read_text())
        assert record.pop("turns") > 0  # recorded for an ok rubric since the comparison
        status.write_text(json.dumps(record))
    made = ar.compare_methods(old)
    assert made.cost["rubric"].artifact_per_task is not None
    assert made.cost["rubric"].artifact_per_task.agent_turns is None
    hybrid = made.cost["hybrid"].artifact_per_task
    assert hybrid is not None and hybrid.agent_turns is None
    tests = made.cost["tests"].artifact_per_task
    assert tests is not None and tests.agent_turns  # its own turns are recorded
    md = (old / "comparison.md").read_text()
    assert "| rubric | 0.0000 |" in md and "| — |" in md and "before agentic-rubrics recorded" in md


def test_a_run_without_the_tests_verifier_shows_its_methods_as_not_measured(
    static_run: Path, tmp_path: Path
) -> None:
    run = tmp_path / "run"  # reported again below: a copy
    shutil.copytree(static_run, run)
    # no label at all: refused, saying how to give them
    done = cli("compare", str(run))
    assert done.exit_code == 2 and "no candidate has a label" in done.output
    assert "--labels FILE" in done.output and not (run / "comparison.json").exists()
    # labels for the first task only: the second counts in no figure, and the table says so
    tasks = [r for _, r in read_jsonl(write_tasks_jsonl(tmp_path / "all.jsonl"))]
    first = next(t for t in tasks if t["instance_id"] == IDS[0])
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(
        json.dumps({"instance_id": IDS[0], "candidate_id": c["id"], "resolved": c["resolved"]}) + "\n"
        for c in first["candidates"]
    ))  # fmt: skip
    assert cli("report", "--out", str(run), "--labels", str(labels), "-q").exit_code == 0
    done = cli("compare", str(run), "--format", "json")
    assert done.exit_code == 0, done.output
    made = json.loads(done.stdout)
    assert made == json.loads((run / "comparison.json").read_text())
    assert made["tasks"] == 2 and made["tasks_without_labels"] == 1
    assert made["verifiers"] == ["rubric"]
    for method, why in (
        ("tests", "verifier_not_in_run:tests"),
        ("hybrid", "verifier_not_in_run:tests"),
        ("similarity", "verifier_not_in_run:similarity"),
        ("patch_classifier", "selector_not_in_run"),
    ):
        figures, cost = made["methods"][method], made["cost"][method]
        assert figures["not_measured"] == cost["not_measured"] == why, method
        assert figures["best_at_k"] is None and figures["roc_auc"] is None  # never 0
        assert cost["artifact_per_task"] is cost["total_per_task_at_k16"] is None
    # the static explorer and the checks-only judge: measured, no model, no agent: 0 for real
    rubric = made["cost"]["rubric"]
    assert rubric["not_measured"] is None
    assert rubric["artifact_per_task"] == {
        "usd": 0.0, "estimated_usd": 0.0, "cpu_seconds": 0.0, "agent_turns": 0.0
    }  # fmt: skip
    md = (run / "comparison.md").read_text()
    assert "2 tasks (1 without a label: they count in no figure)" in md
    header = next(line for line in md.splitlines() if line.startswith("| K |"))
    assert "tests" not in header and "hybrid" not in header and "rubric" in header
    assert "| tests | not measured | not measured | not measured |" in md
    assert "| hybrid |" + " not measured |" * 10 in md
    assert "hybrid (the run did not run the tests verifier)" in md
    assert "patch_classifier (its selector is not among the report's)" in md


def test_a_folder_not_reported_or_of_another_shape_is_refused(
    static_run: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "run"
    shutil.copytree(static_run, folder)
    report = json.loads((folder / "report.json").read_text())
    report["cost"]["by_phase"]["judge"] = {"usd": "lots"}
    (folder / "report.json").write_text(json.dumps(report))
    with pytest.raises(DataError, match=r"report\.json: cost\.by_phase\.judge\.usd"):
        ar.compare_methods(folder)
    (folder / "report.json").unlink()
    done = cli("compare", str(folder))
    assert done.exit_code == 2 and f"agentic-rubrics report --out {folder}" in done.output
    done = cli("compare", str(tmp_path / "nowhere"))
    assert done.exit_code == 2 and "not a run folder" in done.output
    assert not (tmp_path / "nowhere").exists()
    assert cli("compare", str(folder), "--format", "yaml").exit_code == 2
