"""benchmarks/compare_verifiers.py: the cost table's arithmetic, and the script end to end on one bundled
task with its hidden tests as the tests artifact (needs the test sandbox, as tests/test_verifier_tests.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.exceptions import DataError

from .test_verifier_tests import SLOW, needs_sandbox

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from compare_table import METHODS  # noqa: E402
from compare_verifiers import cost_table, figures, hidden_check, main  # noqa: E402


def _phase(usd: float, estimated: float, calls: int) -> dict[str, Any]:
    return {"usd": usd, "estimated_usd": estimated, "calls": calls}


def _report() -> dict[str, Any]:
    """A run's report.json as far as the cost table reads it: 2 tasks, 20 candidates."""
    phases = {
        "explore": _phase(0.4, 0.5, 12),
        "tests_writer": _phase(0.2, 0.3, 10),
        "proxy": _phase(0.6, 0.7, 8),
        "judge": _phase(0.2, 0.4, 20),
        "similarity": _phase(0.1, 0.2, 6),
        "classifier": _phase(0.04, 0.08, 20),
    }
    execution = {"cpu_seconds_per_candidate": 0.25, "validation_cpu_seconds": 1.0}
    return {
        "counts": {"tasks": 2, "candidates": 20},
        "cost": {"by_phase": phases, "execution": execution},
    }


def test_the_cost_table_adds_each_methods_verifiers_and_totals_at_k16() -> None:
    turns = {"rubric": 6.0, "tests": 5.0, "similarity": 4.0}
    table = cost_table(_report(), turns)
    assert set(table) == set(METHODS)
    rubric, tests, hybrid = table["rubric"], table["tests"], table["hybrid"]
    assert rubric["artifact_per_task"]["usd"] == pytest.approx(0.2)  # explore 0.4 over 2 tasks
    assert rubric["artifact_per_task"]["agent_turns"] == 6.0
    assert rubric["grading_per_candidate"]["usd"] == pytest.approx(0.01)  # judge 0.2 over 20
    assert rubric["total_per_task_at_k16"]["usd"] == pytest.approx(0.2 + 16 * 0.01)
    assert rubric["total_per_task_at_k16"]["estimated_usd"] == pytest.approx(0.25 + 16 * 0.02)
    # the tests verifier grades by execution: CPU-seconds, no dollars for grading
    assert tests["grading_per_candidate"] == {"usd": 0, "estimated_usd": 0, "cpu_seconds": 0.25}
    assert tests["artifact_per_task"]["cpu_seconds"] == pytest.approx(0.5)
    assert tests["total_per_task_at_k16"]["cpu_seconds"] == pytest.approx(0.5 + 16 * 0.25)
    # the hybrid needs both artifacts and both gradings
    assert hybrid["artifact_per_task"]["agent_turns"] == 11.0
    assert hybrid["total_per_task_at_k16"]["usd"] == pytest.approx(0.2 + 0.1 + 16 * 0.01)
    assert table["similarity"]["grading_per_candidate"]["usd"] == pytest.approx(0.005)
    assert table["patch_classifier"]["artifact_per_task"]["usd"] == 0
    assert table["patch_classifier"]["grading_per_candidate"]["usd"] == pytest.approx(0.002)
    for free in ("random", "oracle", "self_consistency"):
        assert table[free]["total_per_task_at_k16"] == {
            "usd": 0,
            "estimated_usd": 0,
            "cpu_seconds": 0,
        }


def test_a_hostile_report_is_refused_naming_the_field() -> None:
    report = _report()
    report["cost"]["by_phase"]["judge"]["usd"] = "0.2"
    with pytest.raises(DataError, match=r"cost field by_phase\.judge\.usd is not a number"):
        cost_table(report, {})
    with pytest.raises(DataError, match="no figures for the selector 'random'"):
        figures({"selectors": {}, "counts": {"candidates": 1}, "oracle_pass_at_k": {"1": 1.0}})


def test_hidden_tests_are_given_only_for_bundled_tasks_and_a_bad_line_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    every = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()
    for bad, why in (
        (
            '{"instance_id": "..", "candidates": []}',
            "'..' is not a bundled task with hidden_tests/",
        ),
        ("{not json", "not a task with an instance_id and candidates"),
    ):
        tasks = tmp_path / "tasks.jsonl"
        tasks.write_text(every[0] + "\n" + bad + "\n")
        argv = ["--tasks", str(tasks), "--out", str(tmp_path / "out"), "--tests-from-hidden"]
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert f"{tasks}:2: " in err and why in err, err
    assert not (tmp_path / "out" / "run").exists()  # refused before any run


@needs_sandbox
@SLOW
def test_the_comparison_on_a_bundled_task_with_its_hidden_tests(tmp_path: Path) -> None:
    # one bundled task with 5 of its candidates (one resolved), to keep the test short
    task = json.loads(write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()[0])
    task["candidates"] = task["candidates"][:5]
    assert [c["resolved"] for c in task["candidates"]] == [True, False, False, False, False]
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(task) + "\n")
    out = tmp_path / "out"
    argv = ["--tasks", str(tasks), "--out", str(out), "--tests-from-hidden"]
    assert main([*argv, "--bootstrap", "0", "--test-reruns", "0"]) == 0
    results = json.loads((out / "results.json").read_text())
    assert set(results["methods"]) == set(METHODS) == set(results["cost"])
    report = json.loads((out / "run" / "report.json").read_text())
    for method in METHODS:  # the report's figures, as it gives them
        want = report["oracle_pass_at_k"] if method == "oracle" else None
        want = want or report["selectors"][method]["best_at_k"]
        assert results["methods"][method]["best_at_k"] == want
    check = results["hidden_check"]
    assert check["ok"] and check["candidates_checked"] == 5, check
    assert check["tests_realised_best_at_1"] == check["oracle_realised_best_at_1"] == 1.0
    cost = results["cost"]
    assert cost["tests"]["grading_per_candidate"]["cpu_seconds"] > 0  # executed, and recorded
    assert cost["rubric"]["artifact_per_task"]["agent_turns"] > 0  # the fake explorer's turns
    assert cost["similarity"]["artifact_per_task"]["agent_turns"] > 0  # the proxy author's
    assert cost["tests"]["artifact_per_task"]["agent_turns"] == 0  # given, not written
    assert cost["rubric"]["grading_per_candidate"]["estimated_usd"] > 0
    # the check can fail: the tests' Best@K off the oracle's at one K
    report["selectors"]["tests"]["best_at_k"]["2"] -= 0.1
    wrong = hidden_check(out / "run", report, tasks)
    assert not wrong["ok"] and list(wrong["best_at_k_differs_from_oracle"]) == ["2"]
    md = (out / "results.md").read_text()
    assert "measure the machinery, not a method's quality" in md
    assert "| hybrid |" in md and "Best@K equals the oracle's at every K" in md
    assert (out / "best_at_k.png").read_bytes()[:4] == b"\x89PNG"
