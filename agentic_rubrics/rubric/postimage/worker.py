"""Post-image analysis in worker processes, so that it neither blocks the event loop nor shares ``ast``.

The analysis parses and lints files with ``ast`` and pyflakes, for up to a second or more on large
modules. Run in the event loop's thread, it would stall every model call in flight (their timeouts would
measure the analysis); run in a thread, it would meet CPython 3.11's interpreter-wide ``ast`` state
(``SystemError: AST constructor recursion depth mismatch`` when two threads parse at once, and the
explorer and tracebacks parse too). So each analysis runs in a worker process (``spawn``: a clean
interpreter, no inherited threads or event loop), started on first use and shared by the tasks of the
process (at most ``max_workers`` at once).

A new pool's first worker must answer a no-op before any analysis is sent: a pool whose workers die
before that cannot start at all (:class:`~agentic_rubrics.exceptions.WorkerStartError`, which says why
from their exit codes; see :mod:`agentic_rubrics.worker_processes`), and the run stops instead of recording
every analysis as crashed.

A worker that runs past ``timeout_s`` is killed, and so is the pool (a new one starts on the next
call); the patch's result then holds the reason ``analysis_timeout``. A worker that dies (out of
memory, a crash in C code) gives ``analysis_crashed``. Either way nothing is guessed: the result has no
findings and the repository-aware items it would decide stay ``missing: check_error``
(``analysis_incomplete``). The result travels back pickled (frozen pydantic models).
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing as mp
import multiprocessing.connection
import os
import signal
import threading
import time
import weakref
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import WorkerStartError
from agentic_rubrics.rubric.postimage.analyze import analyze_patch
from agentic_rubrics.rubric.postimage.model import (
    ApplyInfo,
    PostimageConfig,
    PostimageResult,
    Timings,
)
from agentic_rubrics.worker_processes import (
    MAIN_REIMPORTED,
    exit_with_parent,
    main_reimported,
    refuse_in_bootstrap,
    start_failure,
)

log = logging.getLogger(__name__)

MAX_WORKERS = max(1, min(4, os.cpu_count() or 1))
"""Analyses at once in one process's pool (one core each)."""

_lock = threading.Lock()
_pool: ProcessPoolExecutor | None = None
_stopped: weakref.WeakSet[ProcessPoolExecutor] = weakref.WeakSet()
"""Pools killed on purpose (a time limit): their other calls are not crashes."""
_started: weakref.WeakSet[ProcessPoolExecutor] = weakref.WeakSet()
"""Pools whose workers have shown they start (they answered :func:`_ready`)."""
_start_error: str | None = None
"""Set when the workers could not start because each imports the main module again and it calls the
package at top level: that cannot change in this process, so every later call raises it at once."""
_unstartable: weakref.WeakKeyDictionary[ProcessPoolExecutor, str] = weakref.WeakKeyDictionary()
"""Pools whose workers could not start, with why: the calls waiting on them raise the same error."""
START_TIMEOUT = 120.0
"""Seconds a new pool's first worker may take to start and answer."""
WORKERS = "the post-image analysis's worker processes"
_spawned: weakref.WeakKeyDictionary[ProcessPoolExecutor, dict[int, Any]] = (
    weakref.WeakKeyDictionary()
)
"""Every worker each pool has started, as each submit saw them: a broken pool forgets its own list,
and the worker whose exit broke it may have been started by another call's submit."""


def _ready() -> int:  # pragma: no cover - runs in a worker process
    """What a new pool is asked first: a worker that answers has started."""
    return os.getpid()


def _start_worker(max_memory_bytes: int) -> None:  # pragma: no cover - runs in a worker process
    """A worker's first steps: end with its parent; cap its address space (``RLIMIT_AS``), so that
    a hostile file costs a ``MemoryError`` in this worker (``memory_limit``), never the machine."""
    exit_with_parent()
    import resource

    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    cap = max_memory_bytes if hard == resource.RLIM_INFINITY else min(hard, max_memory_bytes)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))


def _get_pool(max_memory_bytes: int) -> ProcessPoolExecutor:
    global _pool
    refuse_in_bootstrap("starts the post-image analysis's workers (it runs agentic_rubrics)")
    if _start_error is not None:
        raise WorkerStartError(_start_error)
    with _lock:
        if _pool is None:
            _pool = ProcessPoolExecutor(
                max_workers=MAX_WORKERS,
                mp_context=mp.get_context("spawn"),
                initializer=_start_worker,
                initargs=(max_memory_bytes,),
            )
        return _pool


def _discard(pool: ProcessPoolExecutor, *, kill: bool) -> None:
    """Forget ``pool`` (the next call starts another); ``kill``: end its workers now."""
    global _pool
    with _lock:
        if _pool is pool:
            _pool = None
    if kill:
        # ProcessPoolExecutor has no public way to stop a running call before Python 3.14
        processes = dict(getattr(pool, "_processes", None) or {})
        for process in processes.values():
            if process.is_alive():
                process.kill()
    pool.shutdown(wait=False, cancel_futures=True)


def shutdown() -> None:
    """End the shared pool's workers (they are also ended when the process exits)."""
    with _lock:
        pool = _pool
    if pool is not None:
        _discard(pool, kill=False)


def default_timeout(config: PostimageConfig) -> float:
    """Seconds one analysis may take: its two apply commands, the repository scan, and a margin of
    60 s for parsing and linting (files are at most ``max_file_bytes``) and the worker's start."""
    return 2 * config.apply_timeout_s + config.scan_timeout_s + 60.0


def _failed(reason: str) -> PostimageResult:
    return PostimageResult(
        apply=ApplyInfo(method="not_attempted"),
        files=(),
        removed_names=(),
        timings=Timings(),
        reasons=(reason,),
    )


async def analyze_in_worker(
    repo_dir: Path,
    patch: str | bytes,
    config: PostimageConfig | None = None,
    *,
    timeout_s: float | None = None,
) -> PostimageResult:
    """:func:`~agentic_rubrics.rubric.postimage.analyze_patch` in a worker process; never raises (a worker
    that times out or dies is a reason code on the result). A call whose pool was stopped because of
    another patch's time limit is run again on a fresh pool: it did not fail on its own."""
    config = config or PostimageConfig()
    limit = default_timeout(config) if timeout_s is None else timeout_s
    loop = asyncio.get_running_loop()
    for _ in range(3):
        pool = _get_pool(config.max_memory_bytes)
        if pool not in _started and not await _check_start(pool, loop):
            continue  # stopped for another patch's time limit while starting: a fresh pool
        try:
            future = loop.run_in_executor(pool, analyze_patch, Path(repo_dir), patch, config)
            _note_workers(pool)
            return await asyncio.wait_for(future, timeout=limit)
        except TimeoutError:
            log.warning("post-image analysis ran past %.0f s; its worker was stopped", limit)
            _stopped.add(pool)
            _discard(pool, kill=True)
            return _failed("analysis_timeout")
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if pool not in _stopped or (task is not None and task.cancelling()):
                raise  # this call itself was cancelled
            continue  # still queued when another patch's time limit stopped the pool: a fresh one
        except BrokenProcessPool:
            if pool in _stopped:
                continue  # stopped for another patch's time limit, not for this one
            log.warning("a post-image analysis worker died; a new one starts on the next patch")
            _discard(pool, kill=False)
            return _failed("analysis_crashed")
    return _failed("analysis_crashed")


async def _check_start(pool: ProcessPoolExecutor, loop: asyncio.AbstractEventLoop) -> bool:
    """Wait until a new pool's worker answers (``True``); a pool that breaks first cannot start at
    all, unless it was stopped on purpose meanwhile (``False``: try a fresh one).

    Raises:
        WorkerStartError: the workers die before running anything; the message says why, from their
            exit codes (:func:`agentic_rubrics.worker_processes.start_failure`).
    """
    global _start_error
    try:
        ready = loop.run_in_executor(pool, _ready)
        _note_workers(pool)
        await asyncio.wait_for(ready, timeout=START_TIMEOUT)
    except (BrokenProcessPool, RuntimeError) as exc:  # RuntimeError: shut down meanwhile
        if pool in _unstartable:  # another call on this pool found out first
            raise WorkerStartError(_unstartable[pool]) from exc
        if pool in _stopped or _pool is not pool:
            return False  # stopped for another patch's time limit: not a failure to start
        _note_workers(pool)
        codes = await asyncio.to_thread(_exit_codes, list(_spawned.get(pool, {}).values()))
        reimported = main_reimported(codes)
        _unstartable[pool] = message = start_failure(WORKERS, codes, reimported)
        if reimported:
            _start_error = message
        # its other workers are still starting: none may outlive this error (each would import the
        # main module too, and run what it runs)
        _discard(pool, kill=True)
        raise WorkerStartError(message) from None  # its BrokenProcessPool says no more
    except TimeoutError as exc:
        _discard(pool, kill=True)
        raise WorkerStartError(
            f"no post-image analysis worker answered within {START_TIMEOUT:.0f} s of starting"
            " (each one imports the main module again first: a script whose top-level code takes"
            ' that long must keep it under `if __name__ == "__main__":`)'
        ) from exc
    _started.add(pool)
    return True


def _note_workers(pool: ProcessPoolExecutor) -> None:
    """Remember the workers ``pool`` has started so far (see :data:`_spawned`)."""
    with _lock:
        seen = _spawned.setdefault(pool, {})
        seen.update(dict(getattr(pool, "_processes", None) or {}))


def _exit_codes(processes: list[Any], wait_s: float = 30.0) -> list[int]:
    """The exit codes of a pool's workers that have ended (within ``wait_s``: the one whose end
    broke the pool may not have been reaped yet, and a loaded machine schedules it late). A worker that
    stopped as :data:`MAIN_REIMPORTED` is the cause: the wait ends there. A broken pool ends its other
    workers with SIGTERM: those codes say nothing about the cause, and are left out when there are others."""
    deadline = time.monotonic() + wait_s
    codes = []
    for process in sorted(processes, key=lambda p: p.exitcode is None):  # the ended ones first
        process.join(max(0.0, deadline - time.monotonic()))
        if process.exitcode == MAIN_REIMPORTED:
            return [MAIN_REIMPORTED]
        if process.exitcode is not None:
            codes.append(process.exitcode)
    own = [c for c in codes if c != -signal.SIGTERM]
    return own or codes
