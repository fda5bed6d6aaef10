"""The suite fails on a resource left open, in its own processes and in those its tests start.

In pytest's processes (the main one and pytest-xdist's workers) pyproject.toml's ``filterwarnings =
["error"]`` does it: a ResourceWarning is an error, and one raised in a finalizer (``__del__``) arrives as
a PytestUnraisableExceptionWarning, an error too. A process a test starts (the CLI, a worker, a fake
server, a benchmark script) is out of pytest's reach: every such Python process imports
``leak_guard_site/sitecustomize.py`` (put on their PYTHONPATH here), which appends each ResourceWarning
and unraisable exception to a log of this pytest process, without changing what the process does. The
test that was running when one was written fails at its teardown; at the end of the session the main
process fails the run on anything any process wrote (a child that ended after its test did). Under
pytest-xdist (``make test``) a worker is such a process too, so what it still holds when it exits is
checked; with ``-n 0`` the main process's own exit is not (an object it keeps to the end). A process
started with an environment of its own (no PYTHONPATH or log) is out of reach, and so is an event loop
of Ray's own worker runtime left open at a Ray worker's exit (leak_guard_site says why). Rerun with
``PYTHONTRACEMALLOC=20`` to see where the object was allocated.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

LOG = "AGENTIC_RUBRICS_TESTS_LEAK_LOG"
"""The file a process started by the tests appends its leaks to (read by leak_guard_site)."""
FOLDER = "AGENTIC_RUBRICS_TESTS_LEAK_FOLDER"
"""The session's folder of logs, one per pytest process (the main one and each xdist worker)."""
SITE = Path(__file__).resolve().parent / "leak_guard_site"
HINT = "(rerun with PYTHONTRACEMALLOC=20 to see where each object was allocated)"

_read = pytest.StashKey[int]()
_log = pytest.StashKey[Path]()


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")


def pytest_configure(config: pytest.Config) -> None:
    if not _is_worker(config):  # the workers inherit the folder and the path from the main process
        os.environ[FOLDER] = tempfile.mkdtemp(prefix="agentic-rubrics-leaks-")
        paths = [str(SITE), *filter(None, os.environ.get("PYTHONPATH", "").split(os.pathsep))]
        os.environ["PYTHONPATH"] = os.pathsep.join(paths)
    name = config.workerinput["workerid"] if _is_worker(config) else "main"  # type: ignore[attr-defined]
    log = Path(os.environ[FOLDER]) / f"{name}.log"
    log.touch()
    os.environ[LOG] = str(log)
    config.stash[_log], config.stash[_read] = log, 0


def _new_leaks(config: pytest.Config) -> str:
    """What this process's log gained since it was last read."""
    with config.stash[_log].open("rb") as f:
        f.seek(config.stash[_read])
        text = f.read()
    config.stash[_read] += len(text)
    return text.decode("utf-8", "replace")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> object:
    """After the test's fixtures are torn down (a server of its own has ended by then)."""
    result = yield
    if leaks := _new_leaks(item.config):
        pytest.fail(f"a process started by the tests left a resource open {HINT}:\n{leaks}")
    return result


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker says how much of its log its tests reported; the main process, after every worker
    ended, fails the run on the rest of every log (a child that ended after its test did)."""
    config = session.config
    if _is_worker(config):
        config.stash[_log].with_suffix(".read").write_text(str(config.stash[_read]))
        return
    folder = config.stash[_log].parent
    leaks = ""
    for log in sorted(folder.glob("*.log")):
        read = log.with_suffix(".read")  # the main process's own offset is in its stash
        start = int(read.read_text()) if read.exists() else 0
        start = config.stash[_read] if log.stem == "main" else start
        leaks += log.read_bytes()[start:].decode("utf-8", "replace")
    shutil.rmtree(folder, ignore_errors=True)
    if leaks:
        writer = config.get_terminal_writer()
        writer.line(f"processes started by the tests left resources open {HINT}:", red=True)
        writer.line(leaks)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
