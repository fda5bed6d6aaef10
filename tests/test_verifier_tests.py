"""The tests verifier end to end: a test script per task, validated on the base tree, executed against
every candidate in the bubblewrap sandbox; its selectors (``tests``, ``hybrid``) in the report.

Needs bubblewrap and a ``python3`` with pytest on the system (as tests/test_testrun.py); in CI
(AGENTIC_RUBRICS_REQUIRE_BWRAP=1) these fail, never skip.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR, load_examples, write_tasks_jsonl
from agentic_rubrics.exceptions import ConfigError
from agentic_rubrics.pipeline.config import RunConfig, load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.sandbox.bwrap import bwrap_problem


def _python_problem() -> str | None:
    import subprocess

    if not Path("/usr/bin/python3").exists():
        return "no /usr/bin/python3"
    done = subprocess.run(["/usr/bin/python3", "-c", "import pytest"], capture_output=True)
    return None if done.returncode == 0 else "no pytest for /usr/bin/python3"


PROBLEM = bwrap_problem() or _python_problem()
if os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1" and PROBLEM:  # pragma: no cover
    raise RuntimeError(f"CI requires the test sandbox: {PROBLEM}")
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"cannot run tests: {PROBLEM}")
FAST = {"bootstrap_resamples": 0, "plots": False}


def _labels() -> dict[str, dict[str, bool]]:
    out = {}
    for folder in sorted(EXAMPLES_DIR.iterdir()):
        if (folder / "labels.json").exists():
            data = json.loads((folder / "labels.json").read_text())
            out[folder.name] = {c: v["resolved"] for c, v in data["candidates"].items()}
    return out


def _hidden_tests(root: Path) -> Path:
    """``DIR/<instance_id>/``: each bundled task's hidden_tests/ files (what ``--tests DIR`` reads)."""
    for folder in sorted(EXAMPLES_DIR.iterdir()):
        if (folder / "hidden_tests").is_dir():
            shutil.copytree(folder / "hidden_tests", root / folder.name)
    return root


def _baselines(out: Path) -> dict[str, dict[str, Any]]:
    return {iid: row.baselines for iid, row in RunFolder(out).progress().items()}


# --------------------------------------------------------------------------- configuration


def test_verifiers_default_to_the_rubric_and_keep_the_hash_of_a_run_without_the_setting() -> None:
    plain = RunConfig()
    assert plain.verifiers == ["rubric"]
    assert "verifiers" not in plain.hashed() and "tests" not in plain.hashed()
    both = RunConfig(verifiers=["rubric", "tests"])
    assert both.content_hash() != plain.content_hash()
    assert both.hashed()["verifiers"] == ["rubric", "tests"] and "tests" in both.hashed()
    assert RunConfig(verifiers=["rubric", "tests"], tests={"reruns": 3}).content_hash() != (
        both.content_hash()
    )
    # the verifier's selectors join the comparison; the rubric's lead stays first
    assert both.selectors[0] == plain.selectors[0] and both.selectors[-2:] == ["tests", "hybrid"]
    assert RunConfig(verifiers=["tests"]).selectors[0] == "tests"


def test_an_unknown_or_repeated_verifier_is_refused_naming_the_known_ones() -> None:
    for bad in (["rubric", "nope"], ["tests", "tests"], []):
        with pytest.raises(
            ConfigError, match="verifiers must be distinct names among rubric, tests"
        ):
            load_config(None, {"verifiers": bad})


# --------------------------------------------------------------------------- execution


@pytest.fixture(scope="module")
def hidden_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bundled tasks with each task's hidden tests given as the tests artifact."""
    root = tmp_path_factory.mktemp("hidden")
    tasks = write_tasks_jsonl(root / "tasks.jsonl")
    given = _hidden_tests(root / "given")
    out = root / "run"
    # no reruns here (they would add half the time): test_a_flaky_test_is_excluded covers them
    config = RunConfig(
        verifiers=["rubric", "tests"], tests_dir=str(given), tests={"reruns": 0}, **FAST
    )
    run(tasks, out, config)
    return out


@needs_sandbox
def test_the_hidden_tests_as_the_artifact_give_the_labels_and_the_oracle(hidden_run: Path) -> None:
    labels = _labels()
    baselines = _baselines(hidden_run)
    assert set(baselines) == set(labels)
    for iid, record in baselines.items():
        tests = record["tests"]
        assert tests["status"] == "graded", (iid, tests)
        for cid, resolved in labels[iid].items():
            rate = tests["pass_rate"][cid]
            assert rate is not None, (iid, cid, tests["reasons"][cid])
            assert (rate == 1.0) == resolved, (iid, cid, rate, tests["reasons"][cid])
    report = json.loads((hidden_run / "report.json").read_text())
    tests_figures = report["selectors"]["tests"]
    # Best@K (a selector's pick among K candidates drawn at random) is the oracle's at every K, and
    # its pick among all candidates resolves every task that has a resolved candidate
    for k, oracle in report["oracle_pass_at_k"].items():
        assert tests_figures["best_at_k"][k] == pytest.approx(oracle), k
    solvable = sum(1 for t in labels.values() if any(t.values())) / len(labels)
    assert tests_figures["realised_best_at_1"] == pytest.approx(solvable)
    assert tests_figures["roc_auc"] == 1.0
    hybrid = report["fitted_weights"]["hybrid"]
    assert hybrid["source"] in ("default", "cross_validation") and 0 <= hybrid["rubric_weight"] <= 1


@needs_sandbox
def test_the_run_folder_keeps_the_tests_beside_the_rubrics(hidden_run: Path) -> None:
    folder = RunFolder(hidden_run)
    for example in load_examples():
        task = example.task
        iid = task.instance_id
        assert folder.rubric_path(iid).is_file()
        status = folder.artifact_status("tests", iid)
        assert status is not None and status.status == "ok" and status.source == "given"
        assert status.files == ["test_hidden.py"]
        given = (EXAMPLES_DIR / iid / "hidden_tests" / "test_hidden.py").read_text()
        assert (folder.artifact_dir("tests", iid) / "test_hidden.py").read_text() == given
        assert status.validation is not None and status.validation.status == "valid"
        assert len(status.validation.base_runs) == 2
        rows = [r for _, r in read_jsonl(folder.artifact_dir("tests", iid) / "outcomes.jsonl")]
        assert rows and all(r["schema"] == "agentic-rubrics/1" for r in rows)
        assert {r["candidate_id"] for r in rows} <= {c.id for c in task.candidates}
        assert all(len(r["excerpt"]) <= 1500 and r["seconds"] > 0 for r in rows)
        cost = folder.progress()[iid].cost["tests_grading"]
        assert cost["runs"] == len(rows) and cost["cpu_seconds"] > 0
    report = json.loads((hidden_run / "report.json").read_text())
    execution = report["cost"]["execution"]
    assert execution["cpu_seconds"] > 0 and execution["tasks"] == len(load_examples())
    assert execution["validation_cpu_seconds"] > 0
    assert "CPU-seconds" in (hidden_run / "report.md").read_text()
