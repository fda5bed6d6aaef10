"""The graded tests where the repository's runner finds them: each runner's folder and command, the
test writer told and checked per layout, and a Django test module graded with Django's runner on a
Django-shaped tree (a real unittest runner at ``--verbosity 2``, :mod:`tests.django_sdist`).

The graded run needs bubblewrap and ``/usr/bin/python3`` (as tests/test_testrun.py)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentic_rubrics.explore.test_writer import check_script
from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.sandbox.bwrap import bwrap_problem
from agentic_rubrics.sandbox.testlayout import LAYOUTS, layout_for
from agentic_rubrics.sandbox.testlogs import outcome_filter
from agentic_rubrics.test_infra import GRADED_FOLDERS
from tests.django_sdist import GOLD, RELEASED

PROBLEM = bwrap_problem() or (None if Path("/usr/bin/python3").exists() else "no /usr/bin/python3")
if os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1" and PROBLEM:  # pragma: no cover
    raise RuntimeError(f"CI requires the test sandbox: {PROBLEM}")
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"cannot run tests: {PROBLEM}")

DJANGO_TEST = '''\
from unittest import TestCase

from calc import add


class IssueTests(TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_documented(self):
        """add() of zeros is zero."""
        self.assertEqual(add(0, 0), 0)
'''


def test_each_runner_finds_the_graded_tests_in_its_own_place() -> None:
    assert layout_for("django/django").folder == "tests/agentic_rubrics_tests"
    assert layout_for("sympy/sympy").folder == "sympy/agentic_rubrics_tests/tests"
    assert layout_for("psf/requests").folder == "agentic_rubrics_tests"
    assert layout_for(None) is LAYOUTS["pytest"]
    for layout in LAYOUTS.values():  # every folder is one a candidate is refused for touching
        assert any(layout.folder == f or layout.folder.startswith(f + "/") for f in GRADED_FOLDERS)
    django = LAYOUTS["django"].command("/py", ["__init__.py", "test_issue.py"])
    assert django is not None and django.command.endswith(
        "/py ./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
        " agentic_rubrics_tests"
    )
    assert LAYOUTS["django"].extra == {"__init__.py": ""}
    sympy = LAYOUTS["sympy"].command("/py", ["test_issue.py", "data.txt"])
    assert sympy is not None
    assert sympy.command.endswith(
        "bin/test -C --verbose sympy/agentic_rubrics_tests/tests/test_issue.py"
    )
    assert sympy.parse("test_one ok\ntest_two F\n") == {"test_one": "passed", "test_two": "failed"}
    assert LAYOUTS["pytest"].command("/py", ["test_issue.py"]) is None  # the library's own pytest


def test_the_writer_is_checked_for_tests_its_runner_runs() -> None:
    assert check_script(DJANGO_TEST, "django")[0] == DJANGO_TEST
    assert check_script(DJANGO_TEST, "pytest")[0] is None  # IssueTests: not a Test... class
    only_functions = "def test_x():\n    assert 1\n"
    assert check_script(only_functions, "sympy")[0] == only_functions
    assert "TestCase class" in check_script(only_functions, "django")[1]
    in_class = "class TestX:\n    def test_x(self):\n        assert 1\n"
    assert check_script(in_class, "sympy")[0] is None and check_script(in_class, "pytest")[0]


def test_the_writer_is_told_where_and_how_its_runner_runs_the_file() -> None:
    from agentic_rubrics.explore.test_writer import TestWriterAgent
    from agentic_rubrics.llm.door import LLM, LLMConfig

    prompt = load_prompt("tests_agent")
    base = {"workspace": "/w", "max_turns": 3, "repo": "django/django", "native_tools": False}
    llm = LLM(LLMConfig(model="fake/none"))
    for runner, says in (
        ("django", "django.test.SimpleTestCase"),
        ("sympy", "sympy/**/tests/test_*.py"),
        ("pytest", "a standalone pytest file"),
    ):
        writer = TestWriterAgent(llm, layout=LAYOUTS[runner])
        assert writer.file == LAYOUTS[runner].writer_file
        text = prompt.render("system", **base, **writer.prompt_variables())
        assert says in text and LAYOUTS[runner].writer_run in text
        assert f"/w/{LAYOUTS[runner].writer_file}" in text
        # the check its tools run is its runner's
        assert (writer.validate(DJANGO_TEST)[0] is not None) == (runner == "django")


@pytest.fixture
def django_tree() -> Iterator[Path]:
    """A Django-shaped tree before the fix (``add`` subtracts), readable by the sandbox's user."""
    root = Path(tempfile.mkdtemp(prefix="agentic-rubrics-layout-"))
    root.chmod(0o755)
    tree = root / "tree"
    for rel, text in RELEASED.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    (tree / "calc/__init__.py").write_text("def add(a, b):\n    return a - b\n")
    yield tree
    shutil.rmtree(root, ignore_errors=True)


@needs_sandbox
def test_a_django_test_module_is_graded_with_djangos_runner(django_tree: Path) -> None:
    from agentic_rubrics.pipeline.verifiers.tests import TestsConfig
    from agentic_rubrics.pipeline.verifiers.tests_grading import runner_for
    from agentic_rubrics.sandbox.testrun import PreparedTree

    prepared = PreparedTree(django_tree)
    try:
        run = runner_for(
            prepared.path,
            {"test_issue.py": DJANGO_TEST},
            TestsConfig(python="/usr/bin/python3", timeout_s=60),
            contextlib.nullcontext,
            layout=LAYOUTS["django"],
        )
        base, fixed = asyncio.run(run("")), asyncio.run(run(GOLD))
        touching = GOLD + (
            "diff --git a/tests/agentic_rubrics_tests/test_issue.py"
            " b/tests/agentic_rubrics_tests/test_issue.py\n--- /dev/null\n"
            "+++ b/tests/agentic_rubrics_tests/test_issue.py\n@@ -0,0 +1 @@\n+x = 1\n"
        )
        refused = asyncio.run(run(touching))
    finally:
        prepared.close()
    name = "test_add (agentic_rubrics_tests.test_issue.IssueTests.test_add)"
    assert base.outcomes == {name: "failed", "add() of zeros is zero.": "passed"}, base.excerpt
    assert fixed.outcomes == {name: "passed", "add() of zeros is zero.": "passed"}
    assert refused.reason == "tampers_with_tests" and not refused.outcomes


SYMPY_LOG = """\
sympy/agentic_rubrics_tests/tests/test_issue.py[2] \\
test_add ok
test_sub F                                                                [FAIL]
sympy/agentic_rubrics_tests/tests/test_other.py[?]   Failed to import     [FAIL]
Esympy/agentic_rubrics_tests/tests/test_third.py[1]
test_before_the_error ok
"""


def test_each_runner_says_which_module_did_not_load() -> None:
    """A module that does not import is reported in each runner's own way, and the run is not
    collected: its tests cannot be validated or graded (``tests_not_collected``)."""
    from agentic_rubrics.pipeline.verifiers.tests_grading import collected
    from agentic_rubrics.sandbox.testrun import ExecRun

    def run(runner: str, lines: str) -> ExecRun:
        from agentic_rubrics.protocols import CommandResult
        from agentic_rubrics.sandbox.testrun import outcome

        command = LAYOUTS[runner].command("/py", ["test_issue.py"])
        done = CommandResult(output="@@APPLY none\n" + lines + "@@EXIT 1\n", exit_code=0)
        return outcome(done, command)

    sympy = run("sympy", SYMPY_LOG)
    assert sympy.outcomes == {
        "test_add": "passed",
        "test_sub": "failed",
        "test_before_the_error": "passed",
        "sympy/agentic_rubrics_tests/tests/test_other.py": "error",  # an ImportError
        "sympy/agentic_rubrics_tests/tests/test_third.py": "error",  # another exception
    }
    assert sympy.not_loaded == [
        "sympy/agentic_rubrics_tests/tests/test_other.py",
        "sympy/agentic_rubrics_tests/tests/test_third.py",
    ]
    kept = [ln for ln in SYMPY_LOG.splitlines() if re.search(outcome_filter("sympy"), ln)]
    assert len(kept) == len(SYMPY_LOG.splitlines()) - 1  # all but the first file's header
    assert not collected(sympy)
    loaded = run("sympy", "test_add ok\ntest_sub F    [FAIL]\n")
    assert loaded.not_loaded == [] and collected(loaded)  # sympy's names have no "::"
    broken = (
        "agentic_rubrics_tests.test_issue (unittest.loader._FailedTest."
        "agentic_rubrics_tests.test_issue) ... ERROR\n"
    )
    django = run(
        "django", "test_add (agentic_rubrics_tests.test_issue.IssueTests) ... ok\n" + broken
    )
    assert len(django.not_loaded) == 1 and not collected(django)
    ok = run("django", "test_add (agentic_rubrics_tests.test_issue.IssueTests) ... ok\n")
    assert collected(ok)
    pytest_run = run("pytest", "PASSED t.py::test_a\nERROR agentic_rubrics_tests/test_b.py\n")
    assert pytest_run.not_loaded == ["agentic_rubrics_tests/test_b.py"]


@needs_sandbox
def test_a_django_test_module_is_validated_on_the_base_tree(django_tree: Path) -> None:
    """Django's names (no pytest ``::``) validate: the script fails on the base tree and counts its
    tests; a module that does not import is ``tests_not_collected``."""
    from agentic_rubrics.pipeline.verifiers.tests import TestsConfig
    from agentic_rubrics.pipeline.verifiers.tests_grading import runner_for, validate
    from agentic_rubrics.sandbox.testrun import PreparedTree

    prepared = PreparedTree(django_tree)
    config = TestsConfig(python="/usr/bin/python3", timeout_s=60)
    try:
        good = runner_for(
            prepared.path,
            {"test_issue.py": DJANGO_TEST},
            config,
            contextlib.nullcontext,
            layout=LAYOUTS["django"],
        )
        bad = runner_for(
            prepared.path,
            {"test_issue.py": DJANGO_TEST.replace("from calc", "from nowhere")},
            config,
            contextlib.nullcontext,
            layout=LAYOUTS["django"],
        )
        valid = asyncio.run(validate(good, 2, "calc-1", lambda x: x))
        broken = asyncio.run(validate(bad, 1, "calc-1", lambda x: x))
    finally:
        prepared.close()
    assert valid.status == "valid", valid
    assert len(valid.tests) == 2
    assert broken.status == "excluded" and broken.reason == "tests_not_collected"


def test_a_limit_named_in_a_runners_output_leaves_its_failing_tests_without_a_score() -> None:
    """sympy's and Django's runners print no per-test summary line: a sandbox limit named in the
    run's output stops its failing tests there (no score), as pytest's summary line does."""
    from agentic_rubrics.pipeline.verifiers.tests_grading import limit_hit
    from agentic_rubrics.runfolder.retry import TRANSIENT_CONTAINERS
    from agentic_rubrics.sandbox.docker_cli import DOCKER_REASONS
    from agentic_rubrics.sandbox.testrun import ExecRun

    tail = "Traceback ...\nOSError: [Errno 28] No space left on device\n"
    run = ExecRun("git_apply", {"test_a": "failed", "test_b": "passed"}, excerpt=tail)
    assert limit_hit(run, "test_a") == "disk_limit" and limit_hit(run, "test_b") is None
    assert (
        limit_hit(ExecRun("git_apply", {"test_a": "failed"}, excerpt="AssertionError"), "test_a")
        is None
    )
    pytest_run = ExecRun("git_apply", {"t.py::test_a": "failed"}, excerpt=tail)
    assert limit_hit(pytest_run, "t.py::test_a") is None  # pytest's own line for it says why
    assert set(DOCKER_REASONS) >= TRANSIENT_CONTAINERS
