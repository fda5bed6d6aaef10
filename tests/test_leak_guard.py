"""The suite's guard against resources left open (tests/leak_guard.py) catches each kind of leak.

This suite runs under it: a child of this very test that leaks is in its log. And a tiny test file is
run by pytest in a subprocess with the project's own configuration (pyproject.toml: filterwarnings)
and the guard's plugin, in one process and under pytest-xdist: a file left open in the test, one left
open by a child process whose stderr goes nowhere, and one left open by a child that ends after its
test did each fail the run; the clean test beside them passes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from . import leak_guard

ROOT = Path(__file__).resolve().parents[1]

LEAKY = '''
import os
import subprocess
import sys
from pathlib import Path

LEAK = "import os; open(os.devnull)"  # a file object dropped unclosed
LATE = """# late-leaker
import os, sys, time
go = sys.argv[1]
for _ in range(1200):
    if os.path.exists(go):
        break
    time.sleep(0.05)
open(os.devnull)
"""


def test_clean(tmp_path):
    with (tmp_path / "f").open("w") as f:
        f.write("closed")
    subprocess.run([sys.executable, "-c", "print('nothing left open')"], check=True)


def test_leaks_a_file(tmp_path):
    open(tmp_path / "f", "w").write("left open")


def test_a_child_leaks_a_file():
    subprocess.run([sys.executable, "-c", LEAK], check=True, stderr=subprocess.DEVNULL)


def test_a_child_leaks_after_the_test(tmp_path):
    go = tmp_path / "go"
    argv = [sys.executable, "-c", LATE, str(go)]
    os.environ["LATE_LEAKER"] = f"{os.posix_spawn(sys.executable, argv, os.environ)} {go}"
'''

CONFTEST = '''
import os
from pathlib import Path


def pytest_sessionfinish(session):
    """The late leaker leaks now: after its test's teardown, before the guard reads the logs."""
    if "LATE_LEAKER" in os.environ:
        pid, go = os.environ["LATE_LEAKER"].split()
        Path(go).touch()
        os.waitpid(int(pid), 0)
'''


def inner_pytest(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """pytest on LEAKY with the project's configuration and the guard (``tests`` importable)."""
    (tmp_path / "test_leaky.py").write_text(textwrap.dedent(LEAKY))
    (tmp_path / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    argv = [sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", ".",
            "-p", "tests.leak_guard", "-p", "no:cacheprovider", "-q", "-rA", "--basetemp", "base",
            *args]  # fmt: skip
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("workers", ["0", "2"])
def test_every_leak_fails_the_run_in_one_process_and_under_xdist(
    tmp_path: Path, workers: str
) -> None:
    done = inner_pytest(tmp_path, "-n", workers, "test_leaky.py")
    out = done.stdout
    assert done.returncode == 1, out + done.stderr
    assert "PASSED test_leaky.py::test_clean" in out, out
    # in pytest's own process: filterwarnings "error" (the file's finalizer: an unraisable exception)
    assert "FAILED test_leaky.py::test_leaks_a_file" in out, out
    assert "ResourceWarning: unclosed file" in out, out
    # in a child, its stderr thrown away: the guard's log, read at the test's teardown
    assert "ERROR test_leaky.py::test_a_child_leaks_a_file" in out, out
    assert "a process started by the tests left a resource open" in out, out
    # in a child that ended after its test: the run fails at the end of the session
    assert "PASSED test_leaky.py::test_a_child_leaks_after_the_test" in out, out
    summary = out.split("processes started by the tests left resources open", 1)
    assert len(summary) == 2 and "late-leaker" in summary[1], out
    assert "late-leaker" not in summary[0], out


def test_a_clean_run_passes(tmp_path: Path) -> None:
    done = inner_pytest(tmp_path, "-n", "0", "test_leaky.py::test_clean")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "left a resource open" not in done.stdout
    assert "left resources open" not in done.stdout


def test_a_child_of_this_suite_that_leaks_is_in_the_guard_s_log(
    pytestconfig: pytest.Config,
) -> None:
    leak = "import os; open(os.devnull)"
    subprocess.run([sys.executable, "-c", leak], check=True, stderr=subprocess.DEVNULL)
    leaks = leak_guard._new_leaks(pytestconfig)  # read here: this test's teardown finds nothing new
    assert "ResourceWarning: unclosed file <_io.TextIOWrapper name='/dev/null'" in leaks, leaks
    assert leak in leaks  # the process is named by its command line
