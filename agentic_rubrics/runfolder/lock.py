"""The run folder's lock: one process writes to a run folder at a time.

An advisory ``flock`` on ``<run folder>/.lock``, held for as long as a process writes there (``run``,
``explore``, ``judge``, ``report``). The kernel releases it when the process ends, however it ends, so a
killed run never leaves a stale lock behind. The file names the holder (process id, host, start time)
for the message a second process gets. (On network file systems, ``flock`` holds across machines only
where the file system supports it, e.g. NFSv4 on Linux.)
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from agentic_rubrics.exceptions import RunFolderBusy
from agentic_rubrics.worker_processes import refuse_in_bootstrap

LOCK_NAME = ".lock"


@contextmanager
def folder_lock(root: Path) -> Iterator[None]:
    """Hold the run folder's lock for the duration of the block.

    Raises:
        RunFolderBusy: another process holds it; the message names that process.
        SystemExit: this is a worker process still importing the main module, which calls this
            (see :func:`agentic_rubrics.worker_processes.refuse_in_bootstrap`): the parent's job, not its own.
    """
    refuse_in_bootstrap(f"calls agentic_rubrics to write to the run folder {root}")
    root.mkdir(parents=True, exist_ok=True)
    path = root / LOCK_NAME
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunFolderBusy(
                f"{root}: another process is writing to this run folder ({_holder(path)}); wait for"
                " it to finish or stop it, or use another --out folder. (The lock goes away by"
                " itself when that process ends, even if it is killed.)"
            ) from None
        os.ftruncate(fd, 0)
        info = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "since": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        os.write(fd, json.dumps(info).encode())
        try:
            yield
        finally:
            os.ftruncate(fd, 0)
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


def _holder(path: Path) -> str:
    try:
        info = json.loads(path.read_text(encoding="utf-8") or "{}")
    except (OSError, ValueError, RecursionError):
        info = {}
    if not isinstance(info, dict) or not info:
        return "process unknown"
    return f"process {info.get('pid')} on {info.get('host')}, since {info.get('since')}"
