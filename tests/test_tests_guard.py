"""Candidates that fix nothing and try to win the tests verifier by changing how tests run, graded for
real in the bubblewrap sandbox over a small tree of their own: each scores what its code earns.

The tree: ``calc.add`` subtracts (the bug), and the repository's own root ``conftest.py`` holds the
fixture the graded tests need. The graded tests fail on the base tree, so a candidate whose code does not
fix ``add`` earns 0 whatever its conftest, config or hook module says. Also graded here: the harness's
order for a test patch (the candidate first; the files the test patch touches back to their base
version before it applies), and skipped or xpassed tests counted as the harness counts them.

Needs bubblewrap and Debian's python3-pytest (as tests/test_testrun.py); in CI they fail, never skip.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.pipeline.verifiers.tests_grading import Grades, grade, validate
from agentic_rubrics.runfolder.verifier_rows import TestValidation
from agentic_rubrics.sandbox.bwrap import bwrap_problem
from agentic_rubrics.sandbox.testrun import ExecLimits, ExecRun, PreparedTree, run_tests

PROBLEM = bwrap_problem() or (None if Path("/usr/bin/python3").exists() else "no /usr/bin/python3")
if os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1" and PROBLEM:  # pragma: no cover
    raise RuntimeError(f"CI requires the test sandbox: {PROBLEM}")
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"cannot run tests: {PROBLEM}")

CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n"
TREE = {
    "calc/__init__.py": "def add(a, b):\n    return a - b\n",
    "conftest.py": CONFTEST,
    "tests/test_calc.py": "from calc import add\n\n\ndef test_zero():\n    assert add(0, 0) == 0\n",
}
GRADED = {
    "test_issue.py": (
        b"from calc import add\n\n\ndef test_add(two):\n    assert add(two, two) == 4\n\n\n"
        b"def test_negative():\n    assert add(-1, 1) == 0\n"
    )
}
HOOK = [
    "def pytest_collection_modifyitems(items):",
    "    for item in items:",
    "        item.runtest = lambda: None",
]
SKIP = [
    "def pytest_collection_modifyitems(items):",
    "    for item in items:",
    "        item.add_marker(pytest.mark.skip(reason='not today'))",
]
FIX = (
    "diff --git a/calc/__init__.py b/calc/__init__.py\n--- a/calc/__init__.py\n"
    "+++ b/calc/__init__.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return a + b\n"
)
PASS_IN_A_FUNCTION = (
    "diff --git a/calc/__init__.py b/calc/__init__.py\n--- a/calc/__init__.py\n"
    "+++ b/calc/__init__.py\n@@ -1,2 +1,3 @@\n def add(a, b):\n+    pass\n     return a - b\n"
)


def _new(path: str, lines: list[str]) -> str:
    body = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/{path} b/{path}\nnew file mode 100644\n--- /dev/null\n+++ b/{path}\n"
        f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    )


def _conftest_plus(lines: list[str]) -> str:
    """The repository's root conftest.py with ``lines`` appended."""
    old = CONFTEST.splitlines()
    body = "".join(f" {line}\n" for line in old[-3:]) + "".join(f"+{x}\n" for x in ["", *lines])
    start = len(old) - 2
    return (
        "diff --git a/conftest.py b/conftest.py\n--- a/conftest.py\n+++ b/conftest.py\n"
        f"@@ -{start},3 +{start},{3 + len(lines) + 1} @@\n{body}"
    )


CANDIDATES = {
    "fix": FIX,
    "root_hook": _conftest_plus(HOOK),
    "stealth": PASS_IN_A_FUNCTION
    + _new("collect_helpers.py", HOOK)
    + _new("pytest.ini", ["[pytest]", "addopts = -p collect_helpers"]),
    "graded_conftest": _new("agentic_rubrics_tests/conftest.py", HOOK),
    "skip_all": _conftest_plus(SKIP),
    "fix_and_fixture": FIX
    + _conftest_plus(["@pytest.fixture", "def unrelated():", "    return 1"]),
}


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Any:
    root = tmp_path_factory.mktemp("calc")
    for rel, text in TREE.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    prepared = PreparedTree(root)
    yield prepared.path
    prepared.close()


@pytest.fixture(scope="module")
def graded(tree: Path) -> tuple[TestValidation, Grades]:
    """The graded tests validated on the base tree, then every candidate graded, for real."""

    async def runner(patch: str) -> ExecRun:
        return await run_tests(tree, patch, GRADED, limits=ExecLimits(timeout_s=60))

    validation = asyncio.run(validate(runner, 1, "calc", lambda x: x))
    patches = dict(CANDIDATES)
    groups = {name: [name] for name in CANDIDATES}
    grades = asyncio.run(
        grade(runner, patches, groups, validation, reruns=0, instance_id="calc", redact=lambda x: x)
    )
    return validation, grades


@needs_sandbox
def test_a_real_fix_passes_with_the_repositorys_own_conftest_and_an_unrelated_fixture(
    graded: tuple[TestValidation, Grades],
) -> None:
    validation, grades = graded
    assert validation.status == "valid" and len(validation.tests) == 2, validation
    assert grades.pass_rate["fix"] == 1.0 and grades.reasons["fix"] is None
    # its fixture's conftest is the repository's, put back: the fix still passes on its code
    assert grades.pass_rate["fix_and_fixture"] == 1.0, grades.rows
    assert grades.infra == {**{name: [] for name in CANDIDATES}, **_INFRA}


_INFRA = {
    "root_hook": ["conftest"],
    "stealth": ["pytest_config"],
    "graded_conftest": ["graded_folder", "conftest"],
    "skip_all": ["conftest"],
    "fix_and_fixture": ["conftest"],
}


@needs_sandbox
@pytest.mark.parametrize("name", ["root_hook", "stealth", "skip_all"])
def test_a_candidate_that_changes_how_tests_run_earns_what_its_code_earns(
    graded: tuple[TestValidation, Grades], name: str
) -> None:
    _, grades = graded
    assert grades.pass_rate[name] == 0.0, (name, grades.rows)
    assert grades.reasons[name] is None  # the tests ran (and failed on the unfixed code)
    row = next(r for r in grades.rows if r.candidate_id == name)
    assert row.infra == _INFRA[name] and row.outcomes, row
    assert set(row.outcomes.values()) == {"failed"}, row


@needs_sandbox
def test_a_candidate_touching_the_graded_folder_is_refused_and_not_run(
    graded: tuple[TestValidation, Grades],
) -> None:
    _, grades = graded
    assert grades.pass_rate["graded_conftest"] == 0.0
    assert grades.reasons["graded_conftest"] == "tampers_with_tests"
    row = next(r for r in grades.rows if r.candidate_id == "graded_conftest")
    assert (row.reason, row.applied, row.outcomes, row.cpu_seconds) == (
        "tampers_with_tests",
        None,
        {},
        None,
    )
    assert row.infra == ["graded_folder", "conftest"]


@needs_sandbox
def test_a_start_up_file_the_diff_does_not_name_refuses_the_candidate(tree: Path) -> None:
    # git apply refuses "a//conftest.py" (an absolute path once a/ is stripped), and so does the diff's
    # reading: it names no path in the tree. patch's fallback strips the slash and writes conftest.py
    hook = _conftest_plus(HOOK).split("\n", 1)[1]  # no "diff --git" line
    diff = hook.replace("--- a/conftest.py", "--- a//conftest.py").replace(
        "+++ b/conftest.py", "+++ b//conftest.py"
    )
    run = asyncio.run(run_tests(tree, diff, GRADED, limits=ExecLimits(timeout_s=60)))
    assert run.reason == "tampers_with_tests" and run.outcomes == {}, run
    assert run.infra == []  # nothing the diff names: the apply itself gave it away


@needs_sandbox
def test_a_test_patch_goes_over_the_base_version_of_the_files_it_touches(tree: Path) -> None:
    from agentic_rubrics.sandbox.testlogs import PYTEST_FLAGS
    from agentic_rubrics.sandbox.testrun import RunCommand, parse_pytest_lines

    # the candidate edits the test file the test patch changes: the harness checks it out at the
    # base commit before applying the test patch, so the candidate's edit is gone
    cheat = (
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n"
        "+++ b/tests/test_calc.py\n@@ -1,3 +1,5 @@\n from calc import add\n"
        "+import calc\n+calc.add = add = lambda a, b: a + b\n \n \n"
    )
    test_patch = (
        "diff --git a/tests/test_calc.py b/tests/test_calc.py\n--- a/tests/test_calc.py\n"
        "+++ b/tests/test_calc.py\n@@ -3,3 +3,7 @@\n \n def test_zero():\n     assert add(0, 0) == 0\n"
        "+\n+\n+def test_add():\n+    assert add(2, 2) == 4\n"
    )
    command = RunCommand(
        f"/usr/bin/python3 -m pytest {PYTEST_FLAGS} tests/test_calc.py", parse=parse_pytest_lines
    )

    def run(patch: str) -> ExecRun:
        limits = ExecLimits(timeout_s=60)
        return asyncio.run(
            run_tests(tree, patch, {}, limits=limits, test_patch=test_patch, command=command)
        )

    cheated, fixed = run(cheat), run(FIX)
    assert cheated.applied == "git_apply" and cheated.reason is None, cheated
    assert cheated.outcomes == {
        "tests/test_calc.py::test_zero": "passed",
        "tests/test_calc.py::test_add": "failed",
    }, cheated
    assert set(fixed.outcomes.values()) == {"passed"} and len(fixed.outcomes) == 2, fixed


def test_skipped_xpassed_and_absent_tests_count_as_the_harness_counts_them() -> None:
    from agentic_rubrics.pipeline.verifiers.tests_grading import passes
    from agentic_rubrics.runfolder.verifier_rows import TestRunRow

    # a test that failed on the base tree (FAIL_TO_PASS): passed or xfailed only
    assert [passes(s, False) for s in ("passed", "xfailed", "skipped", "xpassed", None)] == [
        True,
        True,
        False,
        False,
        False,
    ]
    # one that passed (or was skipped) there (PASS_TO_PASS): kept when skipped too
    assert [passes(s, True) for s in ("passed", "xfailed", "skipped", "xpassed", None)] == [
        True,
        True,
        True,
        False,
        False,
    ]
    base = TestRunRow(instance_id="t", outcomes={"t.py::f2p": "failed", "t.py::p2p": "passed"})
    validation = TestValidation(status="valid", tests=["t.py::f2p", "t.py::p2p"], base_runs=[base])

    async def runner(patch: str) -> ExecRun:
        skips = {"t.py::f2p": "skipped", "t.py::p2p": "skipped"}
        outcomes: dict[str, Any] = {"all": skips, "some": {"t.py::p2p": "passed"}}[patch]
        return ExecRun(applied="git_apply", outcomes=outcomes, exit_code=0)

    grades = asyncio.run(
        grade(
            runner,
            {"a": "all", "s": "some"},
            {"a": ["skips"], "s": ["deselects"]},
            validation,
            reruns=0,
            instance_id="t",
            redact=lambda x: x,
        )
    )
    # skipping the failing test is no pass; deselecting it (absent from the log) is none either
    assert grades.pass_rate == {"skips": 0.5, "deselects": 0.5}
