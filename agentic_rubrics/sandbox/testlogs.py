"""How a SWE-bench repository's own tests are run and read, as the harness does it.

The harness (``swebench/harness/constants``: ``MAP_REPO_VERSION_TO_SPECS[repo][version]["test_cmd"]``)
runs most repositories with ``pytest --no-header -rA --tb=no -p no:cacheprovider <files>`` (sphinx
through ``tox --current-env -epy39 -v --``, which runs the same pytest), sympy with
``bin/test -C --verbose <files>`` and Django with ``./tests/runtests.py --verbosity 2
--settings=test_sqlite --parallel 1 <modules>``; the files are those the test patch touches (its
"directives"), and each test's status is read from the log (``log_parsers``). Here all three are run
that way and read line by line (Django's in :mod:`~agentic_rubrics.sandbox.testlogs_django`: module
labels, a test's docstring printed in place of its name); a label is looked up in a log as the
runner's names compare (:func:`statuses`: Django's two forms of a name are one).
"""

from __future__ import annotations

import re
import shlex
from typing import Literal

from agentic_rubrics.sandbox.testrun import STATUS_WORDS, RunCommand, Status

Runner = Literal["pytest", "sympy", "django", "unsupported"]
"""``unsupported``: kept for callers that check for it; no repository maps to it today."""
# the harness's NON_TEST_EXTS: files a test patch touches that are data, not tests to run
_NOT_TESTS = (
    ".json",
    ".png",
    ".csv",
    ".txt",
    ".md",
    ".jpg",
    ".jpeg",
    ".pkl",
    ".yml",
    ".yaml",
    ".toml",
)
_DIFF = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
# bin/test --verbose ends a file's last test line with the file's status ("test_x F    [FAIL]")
_SYMPY = re.compile(r"^\s*(_*test_\w+)\s+(ok|F|E|f|X|s)\s*(?:\[(?:OK|FAIL)\])?\s*$", re.M)
# a file bin/test could not import: "sympy/x/tests/test_y.py[?]   Failed to import   [FAIL]" (an
# ImportError), or "Esympy/x/tests/test_y.py[3] " (another exception while its module ran: the "E",
# or "T" for a timeout, written before the file's name; the tests defined before it still run)
_SYMPY_IMPORT = re.compile(
    r"^\s*(?:(\S+\.py)\[\?\]\s+Failed to import|[ET](\S+\.py)\[[0-9]+\])", re.M
)
_SYMPY_STATUS: dict[str, Status] = {
    "ok": "passed",
    "F": "failed",
    "E": "error",
    "f": "xfailed",
    "X": "xpassed",
    "s": "skipped",
}
_WORDS: dict[str, Status] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
}
PYTEST_FLAGS = "-rA --tb=short -p no:cacheprovider"
"""The harness's pytest flags (``TEST_PYTEST``), with short tracebacks (a collection error says why)
and without ``--no-header``, which pytest before 6.0 refuses (exit 4): the harness runs pytest-dev's
own instances, pytest 4.4 to 5.4 among them, with ``pytest -rA``. The header is no status line: the
statuses read are the same."""


def runner_for(repo: str) -> Runner:
    """The harness's runner for ``owner/name``."""
    if repo == "django/django":
        return "django"
    if repo == "sympy/sympy":
        return "sympy"
    return "pytest"


def directives(test_patch: str) -> list[str]:
    """The test files a test patch touches (the harness's ``get_test_directives`` for file runners)."""
    seen: dict[str, None] = {}
    for match in _DIFF.finditer(test_patch):
        path = match.group(2)
        if not path.endswith(_NOT_TESTS):
            seen[path] = None
    return list(seen)


def command(runner: Runner, python: str, files: list[str]) -> str:
    """The shell command that runs ``files`` with ``runner`` under ``python``, in the tree's root."""
    quoted = " ".join(shlex.quote(f) for f in files)
    py = shlex.quote(python)
    if runner == "pytest":
        return f"PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {py} -m pytest {PYTEST_FLAGS} {quoted}"
    if runner == "sympy":
        warnings = "PYTHONWARNINGS='ignore::UserWarning,ignore::SyntaxWarning'"
        return f"{warnings} {py} bin/test -C --verbose {quoted}"
    if runner == "django":
        from agentic_rubrics.sandbox.testlogs_django import command as django_command

        return django_command(python, files)
    raise ValueError(f"no command for the {runner} runner")


def outcome_filter(runner: Runner) -> str:
    """The extended regex (grep -E) of the lines that carry a test's status in ``runner``'s log."""
    if runner == "sympy":
        return (
            r"^\s*_*test_[A-Za-z0-9_]+\s+(ok|F|E|f|X|s)\s*(\[(OK|FAIL)\])?\s*$"
            r"|\.py\[\?\]\s+Failed to import|^\s*[ET]\S+\.py\[[0-9]+\]"
        )
    if runner == "django":
        from agentic_rubrics.sandbox.testlogs_django import LINES

        return LINES
    return "^(" + "|".join(STATUS_WORDS) + ") "


def parse_outcomes(runner: Runner, lines: str) -> dict[str, Status]:
    """Test name -> status, from the filtered lines of ``runner``'s log."""
    if runner == "sympy":
        out = {m.group(1): _SYMPY_STATUS[m.group(2)] for m in _SYMPY.finditer(lines)}
        return out | {m.group(1) or m.group(2): "error" for m in _SYMPY_IMPORT.finditer(lines)}
    if runner == "django":
        from agentic_rubrics.sandbox.testlogs_django import parse_log, without_headers

        return {name: _WORDS[word] for name, word in without_headers(parse_log(lines)).items()}
    from agentic_rubrics.sandbox.testrun import parse_pytest_lines

    return parse_pytest_lines(lines)


def not_loaded(runner: Runner, name: str) -> bool:
    """Whether ``name`` (a key of :func:`parse_outcomes`) is a test module that did not load: pytest's
    file without a ``::`` test, sympy's file that bin/test could not import (``path.py``), unittest's
    stand-in for a module Django's runner could not import (``unittest.loader._FailedTest``)."""
    if runner == "sympy":
        return name.endswith(".py")
    if runner == "django":
        return "_FailedTest" in name or "ModuleImportFailure" in name
    from agentic_rubrics.sandbox.testrun import pytest_not_loaded

    return pytest_not_loaded(name)


def run_command(runner: Runner, text: str) -> RunCommand:
    """``text`` (a shell command running ``runner``) with how its log is read: the lines that carry
    a status, each test's status, and which names are modules that did not load."""
    return RunCommand(
        text,
        lines=outcome_filter(runner),
        parse=lambda lines: parse_outcomes(runner, lines),
        not_loaded=lambda name: not_loaded(runner, name),
    )


def statuses(runner: Runner, outcomes: dict[str, Status], names: list[str]) -> dict[str, Status]:
    """Each of ``names`` (the harness's labels) with its status in ``outcomes`` where it has one,
    names compared as ``runner`` prints them (Django: :func:`~agentic_rubrics.sandbox.testlogs_django.canonical`)."""
    if runner != "django":
        return {n: outcomes[n] for n in names if n in outcomes}
    from agentic_rubrics.sandbox.testlogs_django import canonical

    seen = {canonical(n): s for n, s in outcomes.items()}
    seen.update(outcomes)  # a name as printed wins over its other form
    out: dict[str, Status] = {}
    for n in names:
        status = seen.get(n, seen.get(canonical(n)))
        if status is not None:
            out[n] = status
    return out
