"""The package's worker processes: how they start, end, and say why they could not start.

Every worker ends when the process that started it ends: a parent killed outright (SIGKILL, out of
memory) runs no clean-up; a worker waiting on a pipe or a queue whose other end it also holds, or whose
reading thread has died, would otherwise wait for ever and keep the parent's terminal and pipes open.

Workers start with ``spawn`` (a clean interpreter), which first imports the parent's main module again
under the name ``__mp_main__``. A script that calls the package at top level, without an
``if __name__ == "__main__":`` guard, would run its whole job again in each worker (and, once the parent
has let go of its run folder, write to it). Where the package starts such work — a run folder's lock,
a pool of workers — :func:`refuse_in_bootstrap` ends a process that is still importing the main module
to start, with :data:`MAIN_REIMPORTED` as its exit code; the parent reads that code from the dead
worker and :func:`start_failure` says which cause it was and what to change. (CPython refuses the same
mistake one step later, when the worker itself starts a process: "An attempt has been made to start a
new process before the current process has finished its bootstrapping phase".)
"""

from __future__ import annotations

import contextlib
import multiprocessing as mp
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

MAIN_REIMPORTED = 86
"""Exit code of a worker that was importing the main module when that module called the package."""

GUARD = 'if __name__ == "__main__":'


def exit_with_parent() -> None:  # pragma: no cover - runs in a worker process
    """In a worker started by :mod:`multiprocessing`: end this process when its parent is gone."""
    parent = mp.parent_process()
    if parent is None:
        return

    def watch() -> None:
        multiprocessing.connection.wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def in_bootstrap() -> bool:
    """Whether this process is a worker that :mod:`multiprocessing` is still starting: it is importing
    the parent's main module again (the flag ``spawn`` and ``forkserver`` set for that step, the one
    CPython's own ``_check_not_importing_main`` reads)."""
    return bool(getattr(mp.current_process(), "_inheriting", False))


def refuse_in_bootstrap(what: str) -> None:
    """End this process if it is a worker still importing the main module (see the module's text):
    ``what`` would be the parent's job run again. One line on standard error, then exit code
    :data:`MAIN_REIMPORTED` (no traceback: the parent explains)."""
    if not in_bootstrap():
        return
    sys.stderr.write(
        f"agentic_rubrics: worker process {os.getpid()} stopped: while starting, it imported"
        f" {_main_name('__mp_main__')} again, whose top-level code {what}; put that code under `{GUARD}`\n"
    )
    sys.stderr.flush()
    # the exit code can be read too late on a loaded machine: the parent finds this mark too
    with contextlib.suppress(OSError):
        _mark(os.getppid()).touch()
    raise SystemExit(MAIN_REIMPORTED)


def _mark(parent: int) -> Path:
    """The empty file a worker of ``parent`` leaves when it stopped as :data:`MAIN_REIMPORTED`."""
    return Path(tempfile.gettempdir()) / f"agentic-rubrics-main-reimported-{parent}"


def main_reimported(codes: Iterable[int | None]) -> bool:
    """Whether a worker of this process stopped because it imported the main module again: its exit
    code says so, or the mark it left (read once: the mark is removed)."""
    mark = _mark(os.getpid())
    try:
        mark.unlink()
        marked = True
    except OSError:
        marked = False
    return marked or MAIN_REIMPORTED in list(codes)


def _main_name(module_name: str = "__main__") -> str:
    main = sys.modules.get(module_name)
    spec = getattr(main, "__spec__", None)
    if spec is not None and getattr(spec, "name", None) not in (None, "__mp_main__"):
        return f"the main module {spec.name}"
    path = getattr(main, "__file__", None)
    return f"the script {path}" if path else "the main module"


def _reimports_main() -> bool:
    """Whether ``spawn`` workers import this process's main module again: a script by its path, or a
    module run with ``python -m`` by its name (but not a package's ``__main__``, nor ``-c`` or an
    interactive session: CPython's ``spawn.get_preparation_data`` and ``_fixup_main_from_name``)."""
    main = sys.modules.get("__main__")
    name = getattr(getattr(main, "__spec__", None), "name", None)
    if name is not None:
        return name != "__main__" and not name.endswith(".__main__")
    return getattr(main, "__file__", None) is not None


def _exit_text(code: int | None) -> str:
    if code is None:
        return "exit status unknown"
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit code {code}"


def start_failure(workers: str, codes: Iterable[int | None], reimported: bool | None = None) -> str:
    """Why ``workers`` (e.g. "the post-image analysis's worker processes") died before answering,
    read from their exit codes (and ``reimported``: :func:`main_reimported`, read here when not
    given), and what to change."""
    codes = list(codes)
    if main_reimported(codes) if reimported is None else reimported:
        return (
            f"{workers} could not start: each one imports {_main_name()} again first (multiprocessing"
            " 'spawn'), and its top-level code calls agentic_rubrics, so every worker would have run"
            f" the whole job again; they stopped instead (exit code {MAIN_REIMPORTED}). Put the"
            f" script's top-level code under `{GUARD}` (Python's multiprocessing documentation,"
            " 'Safe importing of main module'), then run it again."
        )
    seen = ", ".join(sorted({_exit_text(c) for c in codes})) or "exit status unknown"
    text = (
        f"{workers} died while starting, before running anything ({seen}): the run cannot go on"
        " without them. Their own error is on standard error above."
    )
    if _reimports_main():
        text += (
            f" Each one imports {_main_name()} again first (multiprocessing 'spawn'): if that error"
            f" comes from its top-level code, put that code under `{GUARD}`."
        )
    return text
