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
import threading
import weakref
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from agentic_rubrics.children import exit_with_parent
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
        try:
            future = loop.run_in_executor(pool, analyze_patch, Path(repo_dir), patch, config)
            return await asyncio.wait_for(future, timeout=limit)
        except TimeoutError:
            log.warning("post-image analysis ran past %.0f s; its worker was stopped", limit)
            _stopped.add(pool)
            _discard(pool, kill=True)
            return _failed("analysis_timeout")
        except BrokenProcessPool:
            if pool in _stopped:
                continue  # stopped for another patch's time limit, not for this one
            log.warning("a post-image analysis worker died; a new one starts on the next patch")
            _discard(pool, kill=False)
            return _failed("analysis_crashed")
    return _failed("analysis_crashed")
