"""``processes="auto"``: litellm worker processes only where this process's calls would saturate a core."""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable

from agentic_rubrics.exceptions import WorkerStartError
from agentic_rubrics.llm.pool import WorkerPool

log = logging.getLogger(__name__)


AUTO_MIN_CALLS = 200
"""Calls answered in this process before ``auto`` first decides (a run with fewer never starts workers:
starting them costs about a second of CPU each, more than a few calls save)."""
AUTO_EVERY = 100
"""Calls between two decisions while no worker runs (a run's calls can get faster, e.g. judging after
exploring)."""
AUTO_SATURATION = 0.75
"""Cores of CPU the calls would need at the run's concurrency from which ``auto`` starts workers."""
AUTO_MAX_PROCESSES = 4
"""Most workers ``auto`` starts (the judge throughput benchmark: 2 and 4 reach the same ratio)."""


def planned_processes(
    concurrency: int,
    cpu_per_call: float,
    seconds_per_call: float,
    cpus: int,
    *,
    saturation: float = AUTO_SATURATION,
    max_processes: int = AUTO_MAX_PROCESSES,
) -> tuple[float, int]:
    """Cores the calls would need at ``concurrency`` (``concurrency * cpu_per_call / seconds_per_call``)
    and the workers to start for them (0: none; else ``min(max_processes, cpus, max(2, ceil(need)))``)."""
    need = concurrency * cpu_per_call / seconds_per_call if seconds_per_call > 0 else math.inf
    if need < saturation or cpus < 2:
        return need, 0
    return need, min(max_processes, cpus, max(2, math.ceil(need)))


class AutoPool:
    """``processes="auto"``: whether this process's model calls would saturate one core, and if so a pool.

    Over each window of calls answered in this process it measures the CPU per call (all of this
    process's CPU over the window divided by its calls: litellm, the library and whatever else runs)
    and the mean time per call (sending to answer), and asks :func:`planned_processes` how many
    workers that needs at the run's concurrency. The first window ends after :data:`AUTO_MIN_CALLS`
    calls (the first call, which also imports litellm, is not measured), the next ones every
    :data:`AUTO_EVERY`. Calls stay in this process until a worker has started, and come back to it
    should every worker die; a pool, once started, stays. The last measurement and the decision are
    in :attr:`decision`.
    """

    def __init__(
        self,
        concurrency: int,
        cpus: int | None = None,
        *,
        min_calls: int = AUTO_MIN_CALLS,
        every: int = AUTO_EVERY,
        saturation: float = AUTO_SATURATION,
        max_processes: int = AUTO_MAX_PROCESSES,
        start: Callable[[int], WorkerPool] = WorkerPool,
    ) -> None:
        self.concurrency = concurrency
        self.start = start
        """Starts a pool of N workers (:class:`WorkerPool`)."""
        self.cpus = cpus if cpus is not None else len(os.sched_getaffinity(0))
        self.every, self.saturation, self.max_processes = every, saturation, max_processes
        self.pool: WorkerPool | None = None
        self.decision: dict[str, float | int | bool] = {"started": False}
        self._calls = 0
        self._seconds = 0.0
        self._next = min_calls
        self._window: tuple[float, int, float] | None = None  # from the end of the first call

    def ready_pool(self) -> WorkerPool | None:
        """The pool, once one of its workers has started and while one runs (else calls go on in
        this process: also after every worker has died).

        Raises:
            WorkerStartError: every worker of the pool ended without starting (see
                :meth:`WorkerPool.start_error`): the run stops rather than go on without them.
        """
        if self.pool is not None and self.pool.is_serving():
            return self.pool
        if self.pool is not None:
            error = self.pool.start_error()
            if error is not None:
                raise WorkerStartError(error)
        return None

    def record(self, seconds: float) -> None:
        """One call answered in this process after ``seconds``; decide when a window is full."""
        self._calls += 1
        self._seconds += seconds
        if self._window is None:  # the first call also imported litellm: not a call's cost
            self._window = (time.process_time(), self._calls, self._seconds)
            return
        if self.pool is not None or self._calls < self._next:
            return
        cpu0, calls0, seconds0 = self._window
        now = time.process_time()
        calls = self._calls - calls0
        per_call, latency = (now - cpu0) / calls, (self._seconds - seconds0) / calls
        need, processes = planned_processes(
            self.concurrency,
            per_call,
            latency,
            self.cpus,
            saturation=self.saturation,
            max_processes=self.max_processes,
        )
        self.decision = {
            "started": processes > 0,
            "processes": processes,
            "after_calls": self._calls,
            "cpu_ms_per_call": round(1000 * per_call, 3),
            "seconds_per_call": round(latency, 4),
            "cores_needed": round(need, 3),
        }
        self._window = (now, self._calls, self._seconds)
        self._next = self._calls + self.every
        if processes:
            log.info(
                "model calls would need %.2f cores at concurrency %d (%.2f ms of CPU and %.3f s each):"
                " starting %d litellm worker processes",
                need,
                self.concurrency,
                1000 * per_call,
                latency,
                processes,
            )
            self.pool = self.start(processes)
