"""The Ray executor: each task (explore, or explore + judge) is a Ray task returning its record.

The driver (:mod:`agentic_rubrics.pipeline.driver`) stays the run folder's only writer: it starts at most
``workers`` tasks at a time and stores each record as it arrives, exactly as with the local executor —
so resuming works the same. The run's global limits (model-call concurrency per model, concurrent
sandboxes, the budget) are the local limiter's own code living in one Ray actor (:class:`Limits`) that
every worker goes through. Ray is an optional extra: ``agentic-rubrics[ray]``.

Workers read and write the run folder's response cache (``cache/llm``); on a multi-node cluster, put the
run folder on storage every node sees, or the cache is simply not shared.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import BudgetExceeded, ConfigError
from agentic_rubrics.limits import LocalLimiter
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.pipeline.context import RunContext, limiter_capacities
from agentic_rubrics.pipeline.stages import Job, run_job
from agentic_rubrics.rank.selectors import handed_over, register_selector
from agentic_rubrics.runfolder.records import TaskRecord


def import_ray() -> Any:
    """Ray, or a clear message on how to get it."""
    try:
        import ray
    except ImportError as exc:
        raise ConfigError(
            "--executor ray needs Ray: pip install 'agentic-rubrics[ray]' (or use --executor local)"
        ) from exc
    return ray


class Limits(LocalLimiter):
    """The run's global limits as a Ray actor (``ray.remote(Limits)``): a :class:`LocalLimiter` on the
    actor's event loop, its methods reached remotely."""

    async def give_back(self, key: str) -> None:
        self.release(key)  # on the actor's loop, where the slot's semaphore lives

    async def budget_problem(self) -> str | None:
        try:
            await self.check_budget()
        except BudgetExceeded as exc:
            return str(exc)
        return None

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
            await self.actor.give_back.remote(key)

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
    job: Job,
    config_json: dict[str, Any],
    root: str,
    api_key: str | None,
    limits: Any,
    given: dict[str, Any] | None = None,
) -> TaskRecord:
    """One job in a Ray worker: the same computation as the local executor (``given``: the selectors
    the driver was handed in Python, by name, registered here before the configuration names them)."""
    for name, selector in (given or {}).items():
        register_selector(selector, name)
    config = RunConfig.model_validate(config_json)

    async def go() -> TaskRecord:
        limiter = RayLimiter(limits, budgeted=config.max_cost_usd is not None)
        ctx = RunContext.build(config, Path(root), api_key, limiter=limiter)
        try:
            return await run_job(job, ctx)
        finally:
            await ctx.aclose()

    return asyncio.run(go())


class RayExecutor:
    """Jobs as Ray tasks, at most ``workers`` in flight (default: the cluster's CPUs)."""

    def __init__(self, config: RunConfig, root: Path, api_key: str | None, spent: float) -> None:
        self.ray = ray = import_ray()
        self.started_here = False
        if not ray.is_initialized():
            ray.init(address=config.executor.address, include_dashboard=False, log_to_driver=False)
            self.started_here = True
        self.limits = ray.remote(Limits).remote(
            limiter_capacities(config), config.max_cost_usd, spent
        )
        self.remote_work = ray.remote(work).options(num_cpus=1, max_retries=0)
        self.capacity = config.executor.workers or max(
            1, int(ray.cluster_resources().get("CPU", 1))
        )
        # in memory only
        self.config_json = config.model_dump(mode="json", context={"secrets": True})
        self.root, self.api_key = str(root), api_key
        self.given = handed_over(config.selectors)

    def start(self, job: Job) -> Any:
        return self.remote_work.remote(
            job, self.config_json, self.root, self.api_key, self.limits, self.given
        )

    async def finished(self, handles: list[Any]) -> list[Any]:
        done, _ = await asyncio.to_thread(self.ray.wait, handles, num_returns=1)
        return list(done)

    def record(self, handle: Any) -> TaskRecord:
        result: TaskRecord = self.ray.get(handle)
        return result

    async def close(self) -> dict[str, Any]:
        try:
            state: dict[str, Any] = await asyncio.to_thread(
                self.ray.get, self.limits.state.remote()
            )
            return state
        finally:
            # ended here, not left to Ray's collection of the handle: an async actor ended that way
            # exits without closing its event loop (a ResourceWarning in the worker, on a cluster
            # that outlives the run)
            self.ray.kill(self.limits)
            if self.started_here:
                self.ray.shutdown()
