"""The Ray executor: each task (explore + judge) is a Ray task; results stream back into the run folder.

The driver stays the run folder's only writer: it submits the unfinished tasks, at most ``workers`` at a
time, and stores each outcome as it arrives, exactly as the local executor does — so resuming works the
same. The run's global limits (model-call concurrency per model, concurrent sandboxes, the budget) live in
one Ray actor that every worker goes through. Ray is an optional extra: ``agentic-rubrics[ray]``.

Workers read and write the run folder's response cache (``cache/llm``); on a multi-node cluster, put the
run folder on storage every node sees, or the cache is simply not shared.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import asdict
from pathlib import Path
from typing import Any

from agentic_rubrics.config import RunConfig
from agentic_rubrics.context import RunContext, limiter_capacities
from agentic_rubrics.data import RunFolder
from agentic_rubrics.exceptions import BudgetExceeded, ConfigError
from agentic_rubrics.limits import check
from agentic_rubrics.retry import RetryPlan
from agentic_rubrics.stages import (
    RubricOutcome,
    TaskOutcome,
    compute_task,
    earlier_rubric,
    obtain_rubric,
    store_rubric,
    store_task,
)
from agentic_rubrics.types import Task


def import_ray() -> Any:
    """Ray, or a clear message on how to get it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            "--executor ray needs Ray: pip install 'agentic-rubrics[ray]' (or use --executor local)"
        ) from exc
    return ray


class Limits:
    """The run's global limits, as a Ray actor (created with ``ray.remote(Limits)``)."""

    def __init__(
        self, capacities: dict[str, int], max_cost_usd: float | None, spent: float = 0.0
    ) -> None:
        self.capacities = capacities
        self.max_cost_usd = max_cost_usd
        self.spent = spent  # what earlier processes of the run spent counts too
        self.held: dict[str, int] = defaultdict(int)
        self.peaks: dict[str, int] = defaultdict(int)
        self._cond: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:  # created on the actor's own event loop
            self._cond = asyncio.Condition()
        return self._cond

    async def acquire(self, key: str) -> None:
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self.held[key] < self.capacities.get(key, 1_000_000))
            self.held[key] += 1
            self.peaks[key] = max(self.peaks[key], self.held[key])

    async def release(self, key: str) -> None:
        cond = self._condition()
        async with cond:
            self.held[key] -= 1
            cond.notify_all()

    async def budget_problem(self) -> str | None:
        try:
            check(self.max_cost_usd, self.spent)
        except BudgetExceeded as exc:
            return str(exc)
        return None

    async def spend(self, usd: float) -> None:
        self.spent += usd

    async def state(self) -> dict[str, Any]:
        return {"spent": self.spent, "peaks": dict(self.peaks)}


class RayLimiter:
    """The worker side of :class:`Limits` (implements the ``Limiter`` protocol)."""

    def __init__(self, actor: Any, *, budgeted: bool) -> None:
        self.actor = actor
        self.budgeted = budgeted  # without a budget, no round trip is needed to check or count it

    @asynccontextmanager
    async def slot(self, key: str) -> AsyncIterator[None]:
        await self.actor.acquire.remote(key)
        try:
            yield
        finally:
            await self.actor.release.remote(key)

    async def check_budget(self) -> None:
        if not self.budgeted:
            return
        problem = await self.actor.budget_problem.remote()
        if problem:
            raise BudgetExceeded(problem)

    async def spend(self, usd: float) -> None:
        if self.budgeted:
            await self.actor.spend.remote(usd)


def work(
    task_json: dict[str, Any],
    config_json: dict[str, Any],
    root: str,
    api_key: str | None,
    limits: Any,
    earlier_json: dict[str, Any] | None,
    explore_only: bool,
    plan_json: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One task in a Ray worker: the same computation as the local executor, returned as plain data."""
    config = RunConfig.model_validate(config_json)
    task = Task.model_validate(task_json)
    earlier = RubricOutcome(**earlier_json) if earlier_json else None
    plan = RetryPlan(**plan_json) if plan_json else None

    async def go() -> dict[str, Any]:
        limiter = RayLimiter(limits, budgeted=config.max_cost_usd is not None)
        ctx = RunContext.build(config, Path(root), api_key, limiter=limiter)
        try:
            if explore_only:
                rubric = await obtain_rubric(task.public(), ctx, earlier)
                return {
                    "rubric": asdict(rubric),
                    "calls": ctx.ledger.calls,
                    "usd": ctx.ledger.spent,
                }
            outcome = await compute_task(task, ctx, earlier, plan)
            return {
                "rubric": asdict(outcome.rubric),
                "verdict_rows": outcome.verdict_rows,
                "progress": outcome.progress,
                "patches": outcome.patches,
                "calls": ctx.ledger.calls,
                "usd": ctx.ledger.spent,
            }
        finally:
            await ctx.aclose()

    return asyncio.run(go())


def run_on_ray(
    tasks: list[Task],
    config: RunConfig,
    folder: RunFolder,
    api_key: str | None,
    explore_only: bool,
    hook: Callable[[str, str, dict[str, Any]], None] | None,
    spent_before: float = 0.0,
    plans: dict[str, RetryPlan] | None = None,
) -> dict[str, Any]:
    """Run the tasks as Ray tasks and store their outcomes; returns the limits actor's final state.

    ``spent_before``: dollars the run spent in earlier processes (counted against the budget)."""
    ray = import_ray()
    started_here = False
    if not ray.is_initialized():
        ray.init(address=config.ray_address, include_dashboard=False, log_to_driver=False)
        started_here = True
    try:
        limits = ray.remote(Limits).remote(
            limiter_capacities(config), config.max_cost_usd, spent_before
        )
        remote_work = ray.remote(work).options(num_cpus=1, max_retries=0)
        workers = config.workers or max(1, int(ray.cluster_resources().get("CPU", 1)))
        config_json = config.model_dump(mode="json", context={"secrets": True})  # in memory only
        queue = list(tasks)
        pending: dict[Any, Task] = {}
        calls, spent = 0, 0.0
        while queue or pending:
            while queue and len(pending) < workers:
                task = queue.pop(0)
                earlier = earlier_rubric(folder, task.instance_id)
                plan = (plans or {}).get(task.instance_id)
                ref = remote_work.remote(
                    task.model_dump(mode="json"), config_json, str(folder.root), api_key, limits,
                    asdict(earlier) if earlier else None, explore_only,
                    asdict(plan) if plan else None,
                )  # fmt: skip
                pending[ref] = task
            done, _ = ray.wait(list(pending), num_returns=1)
            for ref in done:
                task = pending.pop(ref)
                result = ray.get(ref)  # a worker's exception (say, a failed login) stops the run
                rubric = RubricOutcome(**result["rubric"])
                calls += int(result["calls"])
                spent += float(result["usd"])
                if explore_only:
                    store_rubric(folder, rubric)
                    if hook:
                        hook(
                            "explored",
                            task.instance_id,
                            {"usd": spent, "calls": calls, "explore_only": True},
                        )
                    continue
                store_task(
                    folder,
                    TaskOutcome(
                        rubric, result["verdict_rows"], result["progress"], result["patches"]
                    ),
                )
                if hook:
                    missing = sum(1 for r in result["verdict_rows"] if r["origin"] == "missing")
                    hook(
                        "judged",
                        task.instance_id,
                        {"usd": spent, "calls": calls, "missing": missing},
                    )
        state: dict[str, Any] = ray.get(limits.state.remote())
        return state
    finally:
        if started_here:
            ray.shutdown()
