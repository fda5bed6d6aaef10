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
# the two tests that read the bundled tasks' run with their hidden tests share one worker (made once)
SHARES_HIDDEN_RUN = pytest.mark.xdist_group("test_verifier_tests.hidden_run")
SLOW = pytest.mark.slow  # started first under make test: the hidden run takes 20-40 s


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
@SHARES_HIDDEN_RUN
@SLOW
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
    assert report["verifiers"]["tests"]["graded"] == len(labels)
    assert report["verifiers"]["tests"]["missing_candidates"] == {}
    # the hybrid's weight is chosen by cross-validation over the labelled instances: the executed
    # tests are right every time here, so it leans on them (and picks as well)
    hybrid = report["fitted_weights"]["hybrid"]
    assert hybrid["source"] == "cross_validation" and hybrid["rubric_weight"] < 0.5, hybrid
    assert hybrid["run_instances_in_fit"] == len(labels)  # its figures here are in-sample
    assert report["selectors"]["hybrid"]["realised_best_at_1"] == pytest.approx(solvable)


@needs_sandbox
@SHARES_HIDDEN_RUN
@SLOW
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
        # each test's status and its own duration, as pytest timed it
        assert all(
            set(r["durations"]) == set(r["outcomes"]) for r in rows if "::" in str(r["outcomes"])
        )
        assert any(r["durations"] for r in rows)
        cost = folder.progress()[iid].cost["tests_grading"]
        assert cost["runs"] == len(rows) and cost["cpu_seconds"] > 0
    report = json.loads((hidden_run / "report.json").read_text())
    execution = report["cost"]["execution"]
    assert execution["cpu_seconds"] > 0 and execution["tasks"] == len(load_examples())
    assert execution["validation_cpu_seconds"] > 0
    assert "CPU-seconds" in (hidden_run / "report.md").read_text()


# --------------------------------------------------------------------------- the test-writing agent

WRITTEN = ["harbourline__pagewise-214"]


def _some_tasks(root: Path, ids: list[str]) -> Path:
    every = write_tasks_jsonl(root / "all.jsonl")
    keep = [
        line for line in every.read_text().splitlines() if json.loads(line)["instance_id"] in ids
    ]
    out = root / "tasks.jsonl"
    out.write_text("\n".join(keep) + "\n")
    return out


def _unique_lines(text: str, known: str) -> list[str]:
    """Lines of ``text`` (a diff's added lines, or a file's) long enough to tell, found nowhere in
    ``known`` (the repository and the issue): seen in a request, they came from ``text``."""
    lines = [line.removeprefix("+").strip() for line in text.splitlines()]
    return [x for x in lines if len(x) >= 25 and not x.startswith("++") and x not in known]


@needs_sandbox
def test_the_fake_test_writer_runs_end_to_end_and_sees_no_candidate(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from agentic_rubrics.cli.app import app
    from agentic_rubrics.testing import LoopbackServer, fake_model
    from agentic_rubrics.testing.tests_agent import ROLE

    tasks, out = _some_tasks(tmp_path, WRITTEN), tmp_path / "run"
    with LoopbackServer(fake_model()) as srv:
        result = CliRunner().invoke(
            app,
            ["run", "--tasks", str(tasks), "--out", str(out), "--explorer", "agent",
             "--explorer-model", "openai/fake", "--api-base", srv.url, "--verifiers", "tests",
             "--test-reruns", "0", "--quiet"],
        )  # fmt: skip
        bodies = [json.dumps(b) for b in srv.requests]
    assert result.exit_code == 0, result.output
    writer = [b for b in bodies if ROLE in b]
    assert len(writer) >= 4 * len(WRITTEN)
    folder = RunFolder(out)
    examples = {e.task.instance_id: e for e in load_examples()}
    for iid in WRITTEN:
        status = folder.artifact_status("tests", iid)
        assert status is not None and status.status == "ok", status
        assert status.source == "writer:agent" and status.files == ["test_issue.py"]
        assert status.validation is not None and status.turns
        script = (folder.artifact_dir("tests", iid) / "test_issue.py").read_text()
        assert "def test_the_module_imports" in script
        trajectory = json.loads((folder.artifact_dir("tests", iid) / "trajectory.json").read_text())
        assert [s["tool"] for s in trajectory["steps"]][:3] == ["bash", "search", "bash"]
        last = trajectory["steps"][-1]  # the script came as the submit's content
        assert last["tool"] == "submit" and last["argument"].strip() == script.strip()
        record = folder.progress()[iid].baselines["tests"]
        assert set(record["pass_rate"]) == {c.id for c in examples[iid].task.candidates}
        if status.validation.status == "excluded":  # every candidate says why, none scores 0
            assert set(record["reasons"].values()) == {status.validation.reason}
            assert set(record["pass_rate"].values()) == {None}
        # what the writer was shown: the issue and the repository, never a candidate, the gold
        # patch or the hidden tests
        example = examples[iid]
        known = example.task.problem_statement + "".join(
            p.read_text(errors="replace") for p in example.repo_dir.rglob("*.py")
        )
        secret = [example.gold_patch, *(c.patch for c in example.task.candidates)]
        secret += [p.read_text() for p in (example.folder / "hidden_tests").iterdir()]
        unique = [x for text in secret for x in _unique_lines(text, known)]
        assert unique  # the check can fail
        shown = [x for x in unique if any(json.dumps(x)[1:-1] in b for b in writer)]
        assert shown == []
    cost = folder.progress()[WRITTEN[0]].cost
    assert cost["tests_writer"]["calls"] >= 4


# --------------------------------------------------------------------------- validation, limits

PAGEWISE = "harbourline__pagewise-214"
HOSTILE_SCRIPTS = {
    # name: (script, the reason every candidate of its task is missing with)
    "loops": ("def test_loop():\n    while True:\n        pass\n", "timeout"),
    "forks": (
        "import os\ndef test_fork():\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n",
        "timeout",
    ),
    "fills_the_disk": (
        "def test_fill():\n    with open('big', 'wb') as f:\n        while True:\n"
        "            f.write(b'x' * (1 << 20))\n",
        "disk_limit",
    ),
    "reads_the_network": (
        "import socket\ndef test_net():\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n",
        "network",
    ),
    "writes_outside": (
        "def test_out():\n    open('/usr/agentic-escape', 'w').write('x')\n",
        "write_outside_tree",
    ),
    "prints_a_gigabyte": (
        "import sys\ndef test_print():\n    for _ in range(1024):\n"
        "        sys.stdout.write('x' * (1 << 20))\n",
        "disk_limit",
    ),
    "eats_memory": ("def test_mem():\n    x = bytearray(8 << 30)\n", "memory_limit"),
    "passes_on_base": ("def test_nothing():\n    assert 1 + 1 == 2\n", "tests_pass_on_base"),
    "collects_nothing": ("import no_such_module_here\n", "tests_not_collected"),
    "defines_no_test": ("X = 1\n", "tests_not_collected"),
}


def _variant_tasks(root: Path, cases: dict[str, list[tuple[str, str]]]) -> Path:
    """Copies of the pagewise task under other ids, each with the candidates given."""
    base = next(e.task for e in load_examples() if e.task.instance_id == PAGEWISE)
    rows = []
    for name, candidates in cases.items():
        task = base.model_copy(
            update={
                "instance_id": f"case-{name}",
                "candidates": [
                    c.model_copy(update={"id": cid, "patch": patch})
                    for c, (cid, patch) in zip(base.candidates, candidates, strict=False)
                ],
            }
        )
        rows.append(task.model_dump(mode="json"))
    out = root / "tasks.jsonl"
    out.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return out


def _limited(given: Path, **tests: Any) -> RunConfig:
    """Tests from ``given``, 16 MiB to write, no reruns, and room to finish on a loaded machine."""
    limits = {"timeout_s": 60, "max_write_mib": 16, "reruns": 0, **tests}
    return RunConfig(verifiers=["tests"], tests_dir=str(given), tests=limits, **FAST)


@needs_sandbox
def test_hostile_and_signal_free_scripts_leave_every_candidate_missing_and_the_run_goes_on(
    tmp_path: Path,
) -> None:
    base = next(e for e in load_examples() if e.task.instance_id == PAGEWISE)
    two = [(c.id, c.patch) for c in base.task.candidates[:2]]
    tasks = _variant_tasks(tmp_path, dict.fromkeys(HOSTILE_SCRIPTS, two))
    given = tmp_path / "given"
    for name, (source, _) in HOSTILE_SCRIPTS.items():
        (given / f"case-{name}").mkdir(parents=True)
        (given / f"case-{name}" / "test_issue.py").write_text(source)
    # 3 s stops the endless scripts (a run of their own); the others get room to finish
    endless = {f"case-{n}" for n, (_, reason) in HOSTILE_SCRIPTS.items() if reason == "timeout"}
    lines = tasks.read_text().splitlines(keepends=True)
    (tmp_path / "endless.jsonl").write_text(
        "".join(x for x in lines if json.loads(x)["instance_id"] in endless)
    )
    (tmp_path / "others.jsonl").write_text(
        "".join(x for x in lines if json.loads(x)["instance_id"] not in endless)
    )
    run(tmp_path / "endless.jsonl", tmp_path / "endless", _limited(given, timeout_s=3))
    finished = run(tmp_path / "others.jsonl", tmp_path / "run", _limited(given))
    baselines = {**_baselines(tmp_path / "endless"), **_baselines(tmp_path / "run")}
    assert set(baselines) == {f"case-{n}" for n in HOSTILE_SCRIPTS}  # every task finished
    for name, (_, reason) in HOSTILE_SCRIPTS.items():
        record = baselines[f"case-{name}"]["tests"]
        assert record["status"] == "missing" and record["reason"] == reason, (name, record)
        assert record["pass_rate"] == dict.fromkeys(["c01", "c02"]), name  # never 0
        assert record["reasons"] == dict.fromkeys(["c01", "c02"], reason), name
        where = tmp_path / ("endless" if f"case-{name}" in endless else "run")
        status = RunFolder(where).artifact_status("tests", f"case-{name}")
        assert status is not None and status.validation is not None
        assert status.validation.status == "excluded" and status.validation.reason == reason
        assert all(len(r.excerpt) <= 1500 for r in status.validation.base_runs)
    assert not Path("/usr/agentic-escape").exists()
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert report["selectors"]["tests"]["scored_candidates"]["n"] == 0
    reasons: dict[str, int] = {}
    for _, reason in HOSTILE_SCRIPTS.values():
        if reason != "timeout":
            reasons[reason] = reasons.get(reason, 0) + 1
    summary = report["verifiers"]["tests"]
    assert summary["graded"] == 0 and summary["excluded"] == dict(sorted(reasons.items()))
    assert summary["missing_candidates"] == {k: 2 * v for k, v in sorted(reasons.items())}
    # the run could not do the job it was asked: the command exits non-zero and says why
    from agentic_rubrics.report.problems import diagnose

    assert finished is not None
    assert any("tests verifier scored no candidate" in f for f in diagnose(finished).fatal)
    assert "Tests verifier: 0 of 8 tasks graded" in (tmp_path / "run" / "report.md").read_text()


@needs_sandbox
def test_each_candidate_runs_apart_and_its_failures_are_its_own(tmp_path: Path) -> None:
    example = next(e for e in load_examples() if e.task.instance_id == PAGEWISE)
    # a candidate whose package never finishes importing (the tests import it)
    first = (example.folder / "repo/pagewise/__init__.py").read_text().splitlines()[0]
    hangs = (
        "--- a/pagewise/__init__.py\n+++ b/pagewise/__init__.py\n@@ -1 +1,3 @@\n"
        f"+while True:\n+    pass\n {first}\n"
    )
    stray = "--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n"
    cases = {"mixed": [("gold", example.gold_patch), ("stray", stray), ("hangs", hangs)]}
    tasks = _variant_tasks(tmp_path, cases)
    given = tmp_path / "given" / "case-mixed"
    shutil.copytree(example.folder / "hidden_tests", given)
    run(tasks, tmp_path / "run", _limited(given.parent, timeout_s=8))  # hangs: 8 s
    record = _baselines(tmp_path / "run")["case-mixed"]["tests"]
    assert record["status"] == "graded"
    assert record["pass_rate"] == {"gold": 1.0, "stray": 0.0, "hangs": None}
    assert record["reasons"] == {"gold": None, "stray": "patch_does_not_apply", "hangs": "timeout"}
    rows = [r for _, r in read_jsonl(tmp_path / "run" / "tests" / "case-mixed" / "outcomes.jsonl")]
    assert {r["candidate_id"]: r["reason"] for r in rows} == {
        "gold": None,
        "stray": "patch_does_not_apply",
        "hangs": "timeout",
    }
    gold = next(r for r in rows if r["candidate_id"] == "gold")
    assert gold["exit_code"] == 0 and set(gold["outcomes"].values()) == {"passed"}


# --------------------------------------------------------------------------- flaky tests


class ScriptedRuns:
    """A runner (the grading's interface: a patch -> one run of the script on that tree) answering
    from a script of runs per patch, in order, and counting the calls."""

    def __init__(self, runs: dict[str, list[dict[str, str] | str]]) -> None:
        self.runs = {patch: list(items) for patch, items in runs.items()}
        self.calls: list[str] = []

    async def __call__(self, patch: str) -> Any:
        from agentic_rubrics.sandbox.testrun import ExecRun

        self.calls.append(patch)
        item = self.runs[patch].pop(0)
        if isinstance(item, str):  # a run that ended without outcomes
            return ExecRun(applied="none", reason=item, seconds=1.0)
        failed = any(v == "failed" for v in item.values())
        return ExecRun(applied="none", outcomes=dict(item), exit_code=int(failed), seconds=0.1)


def _validate(runs: list[dict[str, str] | str]) -> Any:
    import asyncio

    from agentic_rubrics.pipeline.verifiers.tests_grading import validate

    return asyncio.run(validate(ScriptedRuns({"": runs}), len(runs), "t", lambda x: x))


def test_a_test_whose_outcome_flips_on_the_base_tree_is_excluded_as_flaky() -> None:
    flaky = _validate(
        [
            {"t.py::a": "failed", "t.py::b": "passed", "t.py::f": "passed"},
            {"t.py::a": "failed", "t.py::b": "passed", "t.py::f": "failed"},
        ]
    )
    assert (flaky.status, flaky.tests, flaky.excluded) == (
        "valid",
        ["t.py::a", "t.py::b"],
        {"t.py::f": "flaky"},
    )
    # a script whose only test is flaky, or whose only failure on the base was the flaky one
    assert _validate([{"t.py::f": "passed"}, {"t.py::f": "failed"}]).reason == "all_tests_flaky"
    only = _validate(
        [{"t.py::f": "failed", "t.py::b": "passed"}, {"t.py::f": "passed", "t.py::b": "passed"}]
    )
    assert (only.status, only.reason) == ("excluded", "tests_pass_on_base")
    # a script that hangs on the base tree is not run again
    hangs = _validate(["timeout", {"t.py::a": "failed"}])
    assert (hangs.reason, len(hangs.base_runs)) == ("timeout", 1)


def test_a_test_that_flips_on_a_candidates_tree_is_excluded_for_every_candidate() -> None:
    import asyncio

    from agentic_rubrics.pipeline.verifiers.tests_grading import grade
    from agentic_rubrics.runfolder.verifier_rows import TestValidation

    validation = TestValidation(status="valid", tests=["t.py::a", "t.py::b"])
    both = {"t.py::a": "passed", "t.py::b": "passed"}
    runner = ScriptedRuns(
        {
            "p1": [both, {"t.py::a": "failed", "t.py::b": "passed"}],  # a flips here
            "p2": [
                {"t.py::a": "failed", "t.py::b": "failed"},
                {"t.py::a": "failed", "t.py::b": "failed"},
            ],
            "p3": ["timeout"],  # not run again
        }
    )
    grades = asyncio.run(
        grade(
            runner,
            {"h1": "p1", "h2": "p2", "h3": "p3"},
            {"h1": ["c1", "c4"], "h2": ["c2"], "h3": ["c3"]},
            validation,
            reruns=1,
            instance_id="t",
            redact=lambda x: x,
        )
    )
    assert grades.excluded == {"t.py::a": "flaky"} and grades.counted == ["t.py::b"]
    assert grades.pass_rate == {"c1": 1.0, "c4": 1.0, "c2": 0.0, "c3": None}
    assert grades.reasons["c3"] == "timeout"
    assert sorted(runner.calls) == ["p1", "p1", "p2", "p2", "p3"]  # one patch, one run for both ids
    assert [(r.candidate_id, r.run) for r in grades.rows if r.patch_hash == "h1"] == [
        ("c1", 0),
        ("c1", 1),
    ]


# --------------------------------------------------------------------------- written once, resumed


@needs_sandbox
def test_the_tests_artifact_is_written_once_and_resumed_from_the_run_folder(tmp_path: Path) -> None:
    example = next(e for e in load_examples() if e.task.instance_id == PAGEWISE)
    two = [(c.id, c.patch) for c in example.task.candidates[:2]]
    tasks = _variant_tasks(tmp_path, {"resumed": two})
    given = tmp_path / "given" / "case-resumed"
    shutil.copytree(example.folder / "hidden_tests", given)
    out = tmp_path / "run"
    config = _limited(given.parent)
    run(tasks, out, config, stages=("explore",))
    folder = RunFolder(out)
    where = folder.artifact_dir("tests", "case-resumed")
    assert (where / "status.json").is_file() and not (where / "outcomes.jsonl").exists()
    written = (where / "status.json").read_text()
    # the given folder changes after exploring: judging grades with the script the run folder holds
    (given / "test_hidden.py").write_text("def test_other():\n    assert True\n")
    run(tasks, out, config, stages=("judge", "report"))
    assert (where / "status.json").read_text() == written
    record = _baselines(out)["case-resumed"]["tests"]
    assert record["status"] == "graded" and None not in record["pass_rate"].values()
    # a stored script edited by hand is not trusted: it is written (and validated) again
    (where / "test_hidden.py").write_text("def test_edited():\n    assert False\n")
    folder.forget({"case-resumed"})
    run(tasks, out, config)
    status = folder.artifact_status("tests", "case-resumed")
    assert status is not None and status.validation is not None
    assert status.validation.reason == "tests_pass_on_base"  # the given folder's script now
    # --restart starts from nothing
    run(tasks, out, config, restart=True)
    assert folder.artifact_status("tests", "case-resumed") is not None


@needs_sandbox
def test_resuming_grades_again_what_failed_transiently(tmp_path: Path) -> None:
    example = next(e for e in load_examples() if e.task.instance_id == PAGEWISE)
    two = [(c.id, c.patch) for c in example.task.candidates[:2]]
    tasks = _variant_tasks(tmp_path, {"retried": two})
    given = tmp_path / "given" / "case-retried"
    shutil.copytree(example.folder / "hidden_tests", given)
    out, config = tmp_path / "run", _limited(given.parent)
    run(tasks, out, config)
    graded = _baselines(out)["case-retried"]["tests"]
    # as a run whose sandbox would not start for c01 and then for the script's validation left it
    progress = out / "progress.jsonl"
    row = json.loads(progress.read_text())
    row["baselines"]["tests"]["pass_rate"]["c01"] = None
    row["baselines"]["tests"]["reasons"]["c01"] = "sandbox_error"
    progress.write_text(json.dumps(row) + "\n")
    run(tasks, out, config, retry_missing=False)
    assert _baselines(out)["case-retried"]["tests"]["reasons"]["c01"] == "sandbox_error"
    run(tasks, out, config)
    assert _baselines(out)["case-retried"]["tests"] == graded
    status_path = RunFolder(out).artifact_status_path("tests", "case-retried")
    status = json.loads(status_path.read_text())
    status.update(status="failed", reason="sandbox_error:SandboxError", files=[], hash=None)
    status.pop("validation")
    status_path.write_text(json.dumps(status))
    run(tasks, out, config)
    assert json.loads(status_path.read_text())["status"] == "ok"
    assert _baselines(out)["case-retried"]["tests"] == graded
    # a script whose validation gave no reading (here: a container that failed) is validated again
    # on resume, not kept excluded
    for reason in ("container_failed", "image_missing"):
        status = json.loads(status_path.read_text())
        status["validation"].update(status="excluded", reason=reason, tests=[])
        status_path.write_text(json.dumps(status))
        row = json.loads(progress.read_text())
        missing = dict.fromkeys(graded["pass_rate"])
        row["baselines"]["tests"] = {"status": "missing", "reason": reason, "pass_rate": missing,
                                     "reasons": dict.fromkeys(missing, reason)}  # fmt: skip
        progress.write_text(json.dumps(row) + "\n")
        run(tasks, out, config)
        assert json.loads(status_path.read_text())["validation"]["status"] == "valid", reason
        assert _baselines(out)["case-retried"]["tests"] == graded, reason


def test_the_hybrid_without_labels_enough_uses_its_documented_default_weight() -> None:
    from types import SimpleNamespace

    from agentic_rubrics.rank.selectors.hybrid import DEFAULT_RUBRIC_WEIGHT, HybridSelector

    def score(cid: str, s: float | None) -> Any:
        return SimpleNamespace(candidate_id=cid, score=s, empty_patch=False)

    task = SimpleNamespace(
        instance_id="t",
        progress=SimpleNamespace(repo="o/r"),
        labels={"a": True, "b": False, "c": None, "d": None},
        scores={
            "a": score("a", 0.2),
            "b": score("b", 1.0),
            "c": score("c", None),
            "d": score("d", 0.8),
        },
        baselines={"tests": {"pass_rate": {"a": 1.0, "b": 0.0, "c": 0.5, "d": 0.5}}},
    )
    hybrid = HybridSelector()
    hybrid.prepare([task])
    assert hybrid.chosen["source"] == "default" and DEFAULT_RUBRIC_WEIGHT == 0.5
    assert "needs 10" in hybrid.chosen["why"]
    ranking = hybrid.ranking(task)  # type: ignore[arg-type]
    # min-max per task: S' = (0, 1, -, 0.75), P' = (1, 0, 0.5, 0.5); c has the pass rate alone
    assert ranking == {"a": 0.5, "b": 0.5, "c": 0.5, "d": 0.625}
    fitted = hybrid.fitted_on(["t"])
    assert fitted is not None and fitted["rubric_weight"] == 0.5


def test_the_test_writers_submit_carries_the_script_and_is_checked() -> None:
    import asyncio

    from agentic_rubrics.explore.agent_actions import CONTENT_SUBMIT, native_action, tool_schemas
    from agentic_rubrics.explore.agent_tools import Run, Tools
    from agentic_rubrics.explore.test_writer import TestWriterAgent, check_script
    from agentic_rubrics.prompts import load_prompt
    from agentic_rubrics.protocols import Completion, ToolCall

    prompt = load_prompt("tests_agent")
    submit = next(
        t for t in tool_schemas(prompt, CONTENT_SUBMIT) if t["function"]["name"] == "submit"
    )
    assert list(submit["function"]["parameters"]["properties"]) == ["content"]
    rubric_submit = next(t for t in tool_schemas(prompt) if t["function"]["name"] == "submit")
    assert (
        rubric_submit["function"]["parameters"]["properties"] == {}
    )  # the rubric agent's is unchanged
    good = "def test_x():\n    assert False\n"
    call = ToolCall(id="1", name="submit", arguments=json.dumps({"content": good}))
    action = native_action(Completion(content="", tool_calls=[call]), CONTENT_SUBMIT)
    assert (action.tool, action.argument, action.problems) == ("submit", good, [])

    class NoFile:  # a sandbox without test_issue.py: the submitted content is what is checked
        workdir = "/workspace"

        async def read_file(self, path: str, *, max_bytes: int = 200_000) -> str:
            raise AssertionError("the file is not read when the submit carries the script")

    tools = Tools(prompt, 30, 5.0, 2000, "test_issue.py", TestWriterAgent.validate, content=True)
    run = Run(task=None, sandbox=NoFile())  # type: ignore[arg-type]
    run.steps.append({})
    observation, accepted = asyncio.run(tools.run(run, "submit", good, 3))
    assert accepted == good
    observation, accepted = asyncio.run(tools.run(run, "submit", "def broken(:\n", 3))
    assert accepted is None and "not valid Python" in observation
    assert check_script("X = 1\n")[1].endswith(
        "defines no test (a top-level function named test_...)"
    )


@needs_sandbox
def test_judging_with_the_tests_verifier_alone_needs_no_rubric(tmp_path: Path) -> None:
    example = next(e for e in load_examples() if e.task.instance_id == PAGEWISE)
    tasks = _variant_tasks(
        tmp_path, {"alone": [(c.id, c.patch) for c in example.task.candidates[:1]]}
    )
    given = tmp_path / "given" / "case-alone"
    shutil.copytree(example.folder / "hidden_tests", given)
    report = run(tasks, tmp_path / "run", _limited(given.parent), stages=("judge", "report"))
    assert report is not None and report["primary_selector"] == "tests"
    record = _baselines(tmp_path / "run")["case-alone"]["tests"]
    assert record["status"] == "graded" and record["pass_rate"]["c01"] is not None
