"""What every worker process the package starts does first: end when the process that started it ends.

A parent killed outright (SIGKILL, out of memory) runs no clean-up; a worker waiting on a pipe or a
queue whose other end it also holds, or whose reading thread has died, would otherwise wait for ever
and keep the parent's terminal and pipes open.
"""

from __future__ import annotations

import multiprocessing as mp
import multiprocessing.connection
import os
import threading


def exit_with_parent() -> None:  # pragma: no cover - runs in a worker process
    """In a worker started by :mod:`multiprocessing`: end this process when its parent is gone."""
    parent = mp.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()
