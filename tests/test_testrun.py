"""Test scripts executed against candidates in the bubblewrap sandbox: right outcomes, hard limits.

Needs bubblewrap and a ``python3`` with pytest on the system (Debian's python3-pytest; .ci/run installs
both). In CI (AGENTIC_RUBRICS_REQUIRE_BWRAP=1) these fail, never skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from pathlib import Path

import pytest

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR
from agentic_rubrics.sandbox.bwrap import bwrap_problem
from agentic_rubrics.sandbox.testrun import ExecLimits, ExecRun, PreparedTree, run_tests


def _python_problem() -> str | None:
    if not Path("/usr/bin/python3").exists():
        return "no /usr/bin/python3"
    done = subprocess.run(["/usr/bin/python3", "-c", "import pytest"], capture_output=True)
    return (
        None
        if done.returncode == 0
        else "no pytest for /usr/bin/python3 (apt install python3-pytest)"
    )


PROBLEM = bwrap_problem() or _python_problem()
if os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1" and PROBLEM:  # pragma: no cover
    raise RuntimeError(f"CI requires the test sandbox: {PROBLEM}")
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"cannot run tests here: {PROBLEM}")

TASK = EXAMPLES_DIR / "harbourline__pagewise-214"


def _run(tree: Path, patch: str, tests: dict[str, bytes], **limits: float) -> ExecRun:
    return asyncio.run(run_tests(tree, patch, tests, limits=ExecLimits(**limits)))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def tree() -> object:
    prepared = PreparedTree(TASK / "repo")
    yield prepared.path
    prepared.close()


def test_the_hidden_tests_give_the_labels(tree: Path) -> None:
    tests = {p.name: p.read_bytes() for p in (TASK / "hidden_tests").iterdir() if p.is_file()}
    labels = json.loads((TASK / "labels.json").read_text())["candidates"]
    for patch in sorted((TASK / "candidates").glob("*.diff")):
        run = _run(tree, patch.read_text(), tests)
        resolved = run.exit_code == 0 and run.failed == 0 and run.passed > 0
        assert resolved == labels[patch.stem]["resolved"], (patch.stem, run)
    base = _run(tree, "", tests)
    assert base.applied == "none" and base.failed > 0 and base.passed > 0
    assert not (tree / "agentic_rubrics_tests").exists()  # the prepared tree is never written


def test_a_patch_that_does_not_apply_is_said_so(tree: Path) -> None:
    patch = "--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n"
    run = _run(tree, patch, {"test_x.py": b"def test_x():\n    assert True\n"})
    assert (run.applied, run.reason, run.outcomes) == (None, "patch_does_not_apply", {})


HOSTILE = {
    "loops": ("def test_loop():\n    while True:\n        pass\n", "timeout"),
    "forks": (
        "import os\ndef test_fork():\n    while True:\n        try:\n            os.fork()\n"
        "        except OSError:\n            pass\n",
        "timeout",
    ),
    "fills_the_disk": (
        "def test_fill():\n    with open('big', 'wb') as f:\n        while True:\n"
        "            f.write(b'x' * (1 << 20))\n",
        None,
    ),
    "reads_the_network": (
        "import socket\ndef test_net():\n    socket.create_connection(('1.1.1.1', 53), timeout=2)\n",
        None,
    ),
    "writes_outside": ("def test_out():\n    open('/usr/agentic-escape', 'w').write('x')\n", None),
    "prints_a_lot": ("def test_print():\n    print('x' * (50 << 20))\n    assert False\n", None),
}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_hostile_test_script_is_stopped_and_recorded(tree: Path, case: str) -> None:
    source, reason = HOSTILE[case]
    # 3 s stops the endless ones; the others get room to finish on a loaded machine
    timeout = 3 if reason == "timeout" else 60
    run = _run(tree, "", {"test_hostile.py": source.encode()}, timeout_s=timeout, max_write_mib=16)
    assert run.reason == reason, run
    if reason is None:
        assert run.outcomes and set(run.outcomes.values()) <= {"failed", "error"}, run
    assert len(run.excerpt) <= 1500
    assert not Path("/usr/agentic-escape").exists()


def test_a_pytest_before_6_2_runs_without_durations_min(tree: Path) -> None:
    """pytest before 6.2 refuses ``--durations-min`` (a usage error, exit 4): the library's run is
    made again without it, as for pytest-dev's own instances, whose pytest is the tree's."""
    import shutil
    import tempfile

    tmp_path = Path(tempfile.mkdtemp(prefix="agentic-rubrics-oldpytest-"))
    old = tmp_path / "old_python"
    old.write_text(  # /usr/bin/python3, with pytest's answer to an option it does not know
        '#!/bin/sh\ncase "$*" in *--durations-min*)\n'
        "  echo 'error: unrecognized arguments: --durations-min=0' >&2; exit 4;;\nesac\n"
        'exec /usr/bin/python3 "$@"\n'
    )
    old.chmod(0o755)
    tmp_path.chmod(0o755)  # the sandbox's unprivileged user walks through it (pytest's are closed)
    tests = {p.name: p.read_bytes() for p in (TASK / "hidden_tests").iterdir() if p.is_file()}
    seen = {str(tmp_path): tmp_path}  # the sandbox sees the folder read-only where it is
    try:
        run = asyncio.run(
            run_tests(tree, "", tests, python=str(old), limits=ExecLimits(), read_only=seen)
        )
    finally:
        shutil.rmtree(tmp_path, ignore_errors=True)
    assert run.reason is None and run.passed > 0 and run.failed > 0, run.excerpt
    assert run.exit_code == 1  # the second run's: tests failed on the base tree
