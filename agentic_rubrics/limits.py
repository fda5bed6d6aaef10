"""Accounting and the run's global limits: model-call concurrency, concurrent sandboxes, the budget.

A :class:`Ledger` counts calls, tokens and dollars by phase and task in one process (progress rows carry
a task's counts). A limiter enforces the limits for the whole run: :class:`LocalLimiter` in one process,
and the Ray executor's actor (a :class:`LocalLimiter` living in one Ray actor) when tasks run on many
workers — the same limits, by the same code, either way.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Protocol

from agentic_rubrics.exceptions import BudgetExceeded
from agentic_rubrics.protocols import Usage


@dataclass
class Ledger:
    """Calls, tokens and known dollars, by phase and by task, in this process."""

    entries: dict[tuple[str, str], dict[str, float]] = field(
        default_factory=lambda: defaultdict(
            lambda: {
                "calls": 0,
                "cached_calls": 0,
                "failed_calls": 0,
                "prompt_tokens": 0,
                "completion_tokens": 0,
                "usd": 0.0,
                "unknown_cost_calls": 0,
            }
        )
    )

    @property
    def spent(self) -> float:
        """Known dollars spent so far (calls with an unknown price add nothing here)."""
        return sum(e["usd"] for e in self.entries.values())

    @property
    def calls(self) -> int:
        """Model calls sent so far (cache hits not counted)."""
        return sum(int(e["calls"]) for e in self.entries.values())

    def record(self, phase: str, task: str, usage: Usage | None, *, failed: bool = False) -> None:
        """Count one call (a cache hit counts as a cached call and costs nothing)."""
        e = self.entries[(phase, task)]
        if failed or usage is None:
            e["failed_calls"] += 1
            return
        if usage.cached:
            e["cached_calls"] += 1
            return
        e["calls"] += 1
        e["prompt_tokens"] += usage.prompt_tokens
        e["completion_tokens"] += usage.completion_tokens
        if usage.cost_usd is None:
            e["unknown_cost_calls"] += 1
        else:
            e["usd"] += usage.cost_usd

    def for_task(self, task: str) -> dict[str, dict[str, float]]:
        """The task's counts by phase."""
        return {phase: dict(v) for (phase, t), v in self.entries.items() if t == task}


class Limiter(Protocol):
    """The run's global limits, wherever its tasks run."""

    def slot(self, key: str) -> AbstractAsyncContextManager[None]:
        """An async context manager holding one of the ``key`` slots (a model, or ``sandbox``)."""
        ...

    async def check_budget(self) -> None:
        """Raise :class:`BudgetExceeded` once the run's known spending reached its limit."""
        ...

    async def spend(self, usd: float) -> None:
        """Add a call's known cost to the run's spending."""
        ...


class LocalLimiter:
    """The limits for tasks that all run in this process (one event loop)."""

    def __init__(
        self, capacities: dict[str, int], max_cost_usd: float | None = None, spent: float = 0.0
    ) -> None:
        self.capacities = capacities
        self.max_cost_usd = max_cost_usd
        self.spent = spent  # what earlier processes of the run spent counts too
        self._semaphores: dict[str, asyncio.Semaphore] = {}
        self.peaks: dict[str, int] = defaultdict(int)
        self._held: dict[str, int] = defaultdict(int)

    async def acquire(self, key: str) -> None:
        """Take one ``key`` slot, waiting while all are held (unlimited for a key without a capacity)."""
        if key not in self._semaphores:  # made on first use, on the loop that uses it
            self._semaphores[key] = asyncio.Semaphore(self.capacities.get(key, 1_000_000))
        await self._semaphores[key].acquire()
        self._held[key] += 1
        self.peaks[key] = max(self.peaks[key], self._held[key])

    def release(self, key: str) -> None:
        """Give one ``key`` slot back."""
        self._held[key] -= 1
        self._semaphores[key].release()

    @asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        """Hold one ``key`` slot for the block."""
        await self.acquire(key)
        try:
            yield
        finally:
            self.release(key)

    async def check_budget(self) -> None:
        """Raise once the known spending reached the limit."""
        check(self.max_cost_usd, self.spent)

    async def spend(self, usd: float) -> None:
        """Count known dollars."""
        self.spent += usd


def check(max_cost_usd: float | None, spent: float) -> None:
    """The budget rule, shared by every limiter."""
    if max_cost_usd is not None and spent >= max_cost_usd:
        raise BudgetExceeded(f"cost limit ${max_cost_usd:.4f} reached (${spent:.4f})")
