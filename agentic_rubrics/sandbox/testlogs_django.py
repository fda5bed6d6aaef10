"""Django's own test runner as the SWE-bench harness runs and reads it.

The harness (``swebench/harness/constants``: ``TEST_DJANGO``) runs ``./tests/runtests.py --verbosity 2
--settings=test_sqlite --parallel 1`` with the test patch's files as dotted labels
(``get_test_directives``: ``.py`` and the ``tests/`` prefix stripped, ``/`` made ``.``), and reads each
test's status from the log with ``parse_log_django`` (``swebench/harness/log_parsers/python.py``),
reproduced here rule for rule:

- ``<name> ... ok`` (``OK``, ``  OK``) passed, ``<name> ... skipped ...`` skipped, ``<name> ... FAIL``
  failed, ``<name> ... ERROR`` error; ``FAIL: <name> (...)`` / ``ERROR: <name> (...)`` (the failure
  report's headers) failed / error under the word after the colon;
- a line starting ``ok`` after a test's ``<name> ... `` (the test printed between) passes that test;
- a test with a docstring is printed ``test_x (module.Class)`` then ``<docstring's first line> ... ok``:
  the docstring's line is its name, as in SWE-bench's FAIL_TO_PASS / PASS_TO_PASS;
- the three multi-line shapes the harness knows (``... System check identified no issues (0
  silenced)\\nok`` and its kin) pass the test they start with.

Python 3.11 prints a test ``test_x (module.Class.test_x)`` where earlier ones print ``test_x
(module.Class)``; SWE-bench's labels use whichever the instance's environment printed (Django 5.0
instances: the long form). :func:`canonical` makes the two forms one, so a label is found in a log of
either Python.
"""

from __future__ import annotations

import re
import shlex

TEST_DJANGO = "./tests/runtests.py --verbosity 2 --settings=test_sqlite --parallel 1"
"""The harness's Django command (``TEST_DJANGO``), run here by the environment's interpreter."""
LINES = r" \.\.\. |^\s*ok|^(FAIL|ERROR):|--version is equivalent to version"
"""The extended regex (``grep -E``) of the log's lines the parser reads: every line it reads is one."""
_PASS_SUFFIXES = (" ... ok", " ... OK", " ...  OK")
_MULTILINE = (
    r"^(.*?)\s\.\.\.\sTesting\ against\ Django\ installed\ in\ ((?s:.*?))\ silenced\)\.\nok$",
    r"^(.*?)\s\.\.\.\sInternal\ Server\ Error:\ \/(.*)\/\nok$",
    r"^(.*?)\s\.\.\.\sSystem check identified no issues \(0 silenced\)\nok$",
)
_BARE = re.compile(r"^\w+$")
_LONG = re.compile(r"^(\w+) \(([\w.]+)\.(\w+)\)$")


def labels(files: list[str]) -> list[str]:
    """The harness's Django directives: test files (the test patch's, data files left out by
    :func:`~agentic_rubrics.sandbox.testlogs.directives`) as dotted module labels."""
    out = []
    for path in files:
        path = path[: -len(".py")] if path.endswith(".py") else path
        path = path[len("tests/") :] if path.startswith("tests/") else path
        out.append(path.replace("/", "."))
    return out


def command(python: str, files: list[str]) -> str:
    """The shell command running ``files`` (paths in the tree) with Django's runner under ``python``,
    in the tree's root; the tree's root first on ``sys.path`` (the harness's ``pip install -e .``)."""
    quoted = " ".join(shlex.quote(label) for label in labels(files))
    path = 'PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"'
    return f"{path} {shlex.quote(python)} {TEST_DJANGO} {quoted}".rstrip()


def parse_log(log: str) -> dict[str, str]:
    """Test name -> the harness's status word (``PASSED``, ``SKIPPED``, ``FAILED``, ``ERROR``), as
    ``parse_log_django`` reads ``log``."""
    status: dict[str, str] = {}
    prev_test: str | None = None
    for raw in log.split("\n"):
        line = raw.strip()
        if "--version is equivalent to version" in line:
            status["--version is equivalent to version"] = "PASSED"
        if " ... " in line:
            prev_test = line.split(" ... ")[0]
        for suffix in _PASS_SUFFIXES:
            if line.endswith(suffix):
                # the harness's own fix for django__django-7188 (a migration's output before it)
                if line.startswith("Applying sites.0002_alter_domain_unique...test_no_migrations"):
                    line = line.split("...", 1)[-1].strip()
                status[line.rsplit(suffix, 1)[0]] = "PASSED"
                break
        if " ... skipped" in line:
            status[line.split(" ... skipped")[0]] = "SKIPPED"
        if line.endswith(" ... FAIL"):
            status[line.split(" ... FAIL")[0]] = "FAILED"
        if line.startswith("FAIL:") and len(line.split()) > 1:
            status[line.split()[1].strip()] = "FAILED"
        if line.endswith(" ... ERROR"):
            status[line.split(" ... ERROR")[0]] = "ERROR"
        if line.startswith("ERROR:") and len(line.split()) > 1:
            status[line.split()[1].strip()] = "ERROR"
        if line.startswith("ok") and prev_test is not None:
            status[prev_test] = "PASSED"
    for pattern in _MULTILINE:
        for match in re.finditer(pattern, log, re.MULTILINE):
            status[match.group(1)] = "PASSED"
    return status


def without_headers(status: dict[str, str]) -> dict[str, str]:
    """``status`` without the bare method names the failure reports' headers add (``FAIL: test_x
    (module.Class)`` gives ``test_x``) where the test is there under its full name too: one test,
    counted once (SWE-bench's labels never hold a bare name)."""
    full = {name.split(" (", 1)[0] for name in status if " (" in name}
    return {n: s for n, s in status.items() if not (_BARE.match(n) and n in full)}


def canonical(name: str) -> str:
    """``test_x (module.Class)`` for Python 3.11's ``test_x (module.Class.test_x)``; any other name
    as it is (a docstring's line, the short form)."""
    match = _LONG.match(name)
    if match is not None and match.group(1) == match.group(3):
        return f"{match.group(1)} ({match.group(2)})"
    return name
