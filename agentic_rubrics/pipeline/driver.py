"""One driver for every executor: it hands out the unfinished tasks, stores each finished record in the
run folder (its only writer), and reports progress.

An executor only computes: it starts a task (:class:`Job`) somewhere — in this process
(:class:`LocalExecutor`) or as a Ray task (:class:`agentic_rubrics.pipeline.executor_ray.RayExecutor`) — and
hands back a :class:`~agentic_rubrics.runfolder.records.TaskRecord` once it is done. The driver keeps at most
``capacity`` tasks in flight and stores records in the order they finish; the run's global limits
(model-call concurrency, sandboxes, budget) are one :class:`~agentic_rubrics.limits.LocalLimiter`,
shared by the tasks of this process or living in a Ray actor.
"""

from __future__ import annotations

import asyncio
import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from agentic_rubrics.limits import LocalLimiter
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.pipeline.context import RunContext, limiter_capacities
from agentic_rubrics.pipeline.stages import Job, run_job
from agentic_rubrics.pipeline.verifiers.run import earlier_artifacts
from agentic_rubrics.runfolder.files import atomic_write_json, atomic_write_text
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.records import TaskRecord
from agentic_rubrics.runfolder.retry import RetryPlan
from agentic_rubrics.types import Task

ProgressHook = Callable[[str, str, dict[str, Any]], None]
"""Called as ``hook(event, instance_id, info)`` with events ``explored``, ``judged``, ``skipped``;
``info`` holds the task's missing verdicts (``missing``) and the run's spending so far in this process
(``usd``, ``calls``)."""


class Executor(Protocol):
    """Where tasks run. The driver starts jobs, waits for some to finish, and takes their records."""

    capacity: int
    """Jobs in flight at once."""

    def start(self, job: Job) -> Any:
        """Start a job; returns its handle."""
        ...

    async def finished(self, handles: list[Any]) -> list[Any]:
        """Wait until at least one of ``handles`` is done; return the done ones."""
        ...

    def record(self, handle: Any) -> TaskRecord:
        """The record of a finished job (its exception, if it raised: that stops the run)."""
        ...

    async def close(self) -> dict[str, Any]:
        """Stop what is still running and release everything; returns the limits' final state
        (``spent``, ``peaks``)."""
        ...


class LocalExecutor:
    """Tasks in this process, ``task_concurrency`` at a time, sharing one context and limiter."""

    def __init__(self, config: RunConfig, root: Path, api_key: str | None, spent: float) -> None:
        self.limiter = LocalLimiter(limiter_capacities(config), config.max_cost_usd, spent)
        self.ctx = RunContext.build(config, root, api_key, limiter=self.limiter)
        self.capacity = config.task_concurrency
        self._running: set[asyncio.Task[TaskRecord]] = set()

    def start(self, job: Job) -> asyncio.Task[TaskRecord]:
        handle = asyncio.create_task(run_job(job, self.ctx))
        self._running.add(handle)
        return handle

    async def finished(self, handles: list[Any]) -> list[Any]:
        done, _ = await asyncio.wait(handles, return_when=asyncio.FIRST_COMPLETED)
        return list(done)

    def record(self, handle: Any) -> TaskRecord:
        self._running.discard(handle)
        result: TaskRecord = handle.result()
        return result

    async def close(self) -> dict[str, Any]:
        for handle in self._running:
            handle.cancel()
        await asyncio.gather(*self._running, return_exceptions=True)
        await self.ctx.aclose()
        return {"spent": self.limiter.spent, "peaks": dict(self.limiter.peaks)}


def store(folder: RunFolder, record: TaskRecord) -> None:
    """Write a finished task: each fresh artifact's files, its trajectory, then its status (the
    status marks it written); then, if judged, what grading wrote, its patches, verdicts and the
    progress row that commits them."""
    for artifact in record.artifacts:
        if not artifact.fresh:
            continue
        where = folder.artifact_dir(artifact.folder, artifact.instance_id)
        for name, text in artifact.files.items():
            atomic_write_text(where / name, text)
        if artifact.trajectory is not None and artifact.trajectory_file is not None:
            atomic_write_json(folder.root / artifact.trajectory_file, artifact.trajectory.to_json())
        atomic_write_json(where / "status.json", artifact.status.to_json())  # last: it is done
    if record.judged:
        assert record.progress is not None  # a judged record always has its progress row
        for path, text in record.graded_files.items():
            atomic_write_text(folder.root / path, text)
        folder.record_task(record.verdict_rows, record.progress, record.patches)


async def drive(
    executor: Executor, jobs: list[Job], folder: RunFolder, hook: ProgressHook | None = None
) -> dict[str, Any]:
    """Run every job on ``executor``, storing each record as it finishes; returns the limits' state."""
    queue = list(jobs)
    pending: list[Any] = []
    calls, usd = 0, 0.0
    try:
        while queue or pending:
            while queue and len(pending) < executor.capacity:
                pending.append(executor.start(queue.pop(0)))
            for handle in await executor.finished(pending):
                pending.remove(handle)
                # a task's exception (a failed login) stops the run
                record = executor.record(handle)
                store(folder, record)
                calls, usd = calls + record.calls, usd + record.usd
                if hook is None:
                    continue
                if record.judged:
                    hook(
                        "judged",
                        record.instance_id,
                        {"usd": usd, "calls": calls, "missing": record.missing},
                    )
                else:
                    hook(
                        "explored",
                        record.instance_id,
                        {"usd": usd, "calls": calls, "explore_only": True},
                    )
    finally:
        state = await executor.close()
    return state


def open_executor(config: RunConfig, root: Path, api_key: str | None, spent: float) -> Executor:
    """The executor ``config.executor`` names (its ``runs_on``), for the run in folder ``root``
    (``spent``: dollars spent by earlier processes)."""
    module, _, name = config.executor.runs_on.partition(":")
    executor: Executor = getattr(importlib.import_module(module), name)(
        config, root, api_key, spent
    )
    return executor


async def run_tasks(
    tasks: list[Task],
    config: RunConfig,
    folder: RunFolder,
    api_key: str | None,
    *,
    explore_only: bool = False,
    hook: ProgressHook | None = None,
    spent_before: float = 0.0,
    plans: dict[str, RetryPlan] | None = None,
) -> dict[str, Any]:
    """The tasks on the configured executor (``local`` or ``ray``), stored as they finish.

    ``spent_before``: dollars the run spent in earlier processes (counted against the budget)."""
    executor = open_executor(config, folder.root, api_key, spent_before)
    jobs = [
        Job(
            t,
            (plans or {}).get(t.instance_id),
            explore_only,
            earlier_artifacts(folder, t.instance_id, config.verifiers),
        )
        for t in tasks
    ]
    return await drive(executor, jobs, folder, hook)
