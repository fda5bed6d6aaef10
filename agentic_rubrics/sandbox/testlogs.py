"""How a SWE-bench repository's own tests are run and read, as the harness does it.

The harness (``swebench/harness/constants``: ``MAP_REPO_VERSION_TO_SPECS[repo][version]["test_cmd"]``)
runs most repositories with ``pytest --no-header -rA --tb=no -p no:cacheprovider <files>`` (sphinx
through ``tox --current-env -epy39 -v --``, which runs the same pytest), sympy with
``bin/test -C --verbose <files>`` and Django with ``./tests/runtests.py --verbosity 2
--settings=test_sqlite --parallel 1 <modules>``; the files are those the test patch touches (its
"directives"), and each test's status is read from the log (``log_parsers``). Here: pytest and sympy
are run that way and read line by line; Django's runner (module names, a test's docstring printed in
place of its name) is ``unsupported``, said so rather than guessed.
"""

from __future__ import annotations

import re
import shlex
from typing import Literal

from agentic_rubrics.sandbox.testrun import STATUS_WORDS, Status

Runner = Literal["pytest", "sympy", "unsupported"]
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
_SYMPY = re.compile(r"^\s*(_*test_\w+)\s+(ok|F|E|f|X|s)\s*$", re.M)
_SYMPY_STATUS: dict[str, Status] = {
    "ok": "passed",
    "F": "failed",
    "E": "error",
    "f": "xfailed",
    "X": "xpassed",
    "s": "skipped",
}
PYTEST_FLAGS = "--no-header -rA --tb=short -p no:cacheprovider"
"""The harness's pytest flags (``TEST_PYTEST``), with short tracebacks: a collection error says why."""


def runner_for(repo: str) -> Runner:
    """The harness's runner for ``owner/name``."""
    if repo == "django/django":
        return "unsupported"
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
    raise ValueError(f"no command for the {runner} runner")


def outcome_filter(runner: Runner) -> str:
    """The extended regex (grep -E) of the lines that carry a test's status in ``runner``'s log."""
    if runner == "sympy":
        return r"^\s*_*test_[A-Za-z0-9_]+\s+(ok|F|E|f|X|s)\s*$"
    return "^(" + "|".join(STATUS_WORDS) + ") "


def parse_outcomes(runner: Runner, lines: str) -> dict[str, Status]:
    """Test name -> status, from the filtered lines of ``runner``'s log."""
    if runner == "sympy":
        return {m.group(1): _SYMPY_STATUS[m.group(2)] for m in _SYMPY.finditer(lines)}
    from agentic_rubrics.sandbox.testrun import parse_pytest_lines

    return parse_pytest_lines(lines)
