"""Post-image analysis in worker processes, so that it neither blocks the event loop nor shares ``ast``.

The analysis parses and lints files with ``ast`` and pyflakes, for up to a second or more on large
modules. Run in the event loop's thread, it would stall every model call in flight (their timeouts would
measure the analysis); run in a thread, it would meet CPython 3.11's interpreter-wide ``ast`` state
(``SystemError: AST constructor recursion depth mismatch`` when two threads parse at once, and the
explorer and tracebacks parse too). So each analysis runs in a worker process (``spawn``: a clean
interpreter, no inherited threads or event loop), started on first use and shared by the tasks of the
process (at most ``max_workers`` at once).

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
import sys
import threading
import weakref
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from agentic_rubrics.children import exit_with_parent
from agentic_rubrics.exceptions import WorkerStartError
from agentic_rubrics.rubric.postimage.analyze import analyze_patch
from agentic_rubrics.rubric.postimage.model import (
    ApplyInfo,
    PostimageConfig,
    PostimageResult,
    Timings,
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
START_TIMEOUT = 120.0
"""Seconds a new pool's first worker may take to start and answer."""


def _ready() -> int:  # pragma: no cover - runs in a worker process
    """What a new pool is asked first: a worker that answers has started."""
    return os.getpid()


def start_failure() -> str:
    """Why the workers could not start, and the fix: each one imports the main module again
    (``spawn``), so a script that does its work at top level runs it again in every worker."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if path is None or getattr(getattr(main, "__spec__", None), "name", None) is not None:
        where = "the main module"
    else:
        where = f"the script {path}"
    return (
        "the post-image analysis's worker processes died before running anything, so no patch"
        " could be analysed (every repository-aware item would be missing: analysis_crashed)."
        f" Each worker starts a fresh interpreter that imports {where} again (multiprocessing's"
        " 'spawn'): a script that calls agentic_rubrics at top level runs the whole job again in"
        ' every worker. Put its top-level code under `if __name__ == "__main__":` (Python\'s'
        " multiprocessing documentation, 'Safe importing of main module'); the worker's own error"
        " is on standard error above."
    )


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
        WorkerStartError: the workers die before running anything (see :func:`start_failure`).
    """
    try:
        await asyncio.wait_for(loop.run_in_executor(pool, _ready), timeout=START_TIMEOUT)
    except (BrokenProcessPool, RuntimeError) as exc:  # RuntimeError: shut down meanwhile
        if pool in _stopped or _pool is not pool:
            return False  # stopped for another patch's time limit: not a failure to start
        _discard(pool, kill=False)
        raise WorkerStartError(start_failure()) from exc
    except TimeoutError as exc:
        _discard(pool, kill=True)
        raise WorkerStartError(
            f"no post-image analysis worker answered within {START_TIMEOUT:.0f} s of starting"
        ) from exc
    _started.add(pool)
    return True
