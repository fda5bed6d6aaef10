"""One task's work: every verifier of the run (:mod:`agentic_rubrics.pipeline.verifiers`: its artifact
written or reused, and when judged its grades of every candidate), then the selectors' features.

The work is computed without touching the run folder and returned as a
:class:`~agentic_rubrics.runfolder.records.TaskRecord`, so it can run anywhere (this process, or a Ray
worker); the driver (:mod:`agentic_rubrics.pipeline.driver`) stores records in the run folder, one
writer, in the order they finish. Writers and graders get the task's public view only.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics.datasets.inputs import patch_rows, task_inputs
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.pipeline.context import RunContext
from agentic_rubrics.pipeline.verifiers import TaskScope
from agentic_rubrics.pipeline.verifiers.rubric_judging import generator_warning
from agentic_rubrics.pipeline.verifiers.run import verify_task
from agentic_rubrics.rank.selectors import FeatureInput, compute_features
from agentic_rubrics.rank.selectors.guard import GUARD
from agentic_rubrics.rubric.checks_repo import RepoAnalyses
from agentic_rubrics.rubric.guard import guard_of
from agentic_rubrics.runfolder.records import ArtifactRecord, TaskRecord
from agentic_rubrics.runfolder.retry import RetryPlan, merge_costs
from agentic_rubrics.runfolder.rows import ProgressRow
from agentic_rubrics.types import Task

NOT_REQUESTED = {"status": "failed", "reason": "rubric_not_requested", "source": "none"}
"""The progress row's rubric summary of a run that measures without one."""


async def baselines_for(
    task: Task, ctx: RunContext, repository: RepoAnalyses | None = None
) -> dict[str, Any]:
    """Every selector's features that need the patches (stored; the report needs no patch).

    Those that need no model are always computed: selectors are chosen at report time (see
    :mod:`agentic_rubrics.rank.selectors`). ``repository``: the task's tree with the analyses the judge
    already made (``offline_content`` reads them; without it, its features come from the diffs); with
    ``consensus_probes``, the issue's examples run on each candidate's tree first."""
    probes = None
    if ctx.config.consensus_probes:
        from agentic_rubrics.pipeline.probes import issue_outputs

        probes = await issue_outputs(task, ctx)
    given = FeatureInput(task, ctx.selector_model, repository, probes)
    return await compute_features(given, ctx.config.selectors)


async def guard_record(task: Task, analyses: RepoAnalyses | None) -> dict[str, Any]:
    """What each candidate does to the program's behaviour (on the task's tree when a verifier opened
    it, else from its diff): every selector's picks are guarded by it (``rank/selectors/guard.py``)."""
    found = await asyncio.gather(*(guard_of(c.patch, analyses) for c in task.candidates))
    return {c.id: b.row() for c, b in zip(task.candidates, found, strict=True)}


async def _baselines(scope: TaskScope, verified: dict[str, Any]) -> dict[str, Any]:
    """The selectors' features, the verifiers' records and the guard, none replacing another."""
    task = scope.task
    baselines = await baselines_for(task, scope.ctx, scope.analyses)
    clash = sorted(set(verified) & set(baselines))
    if clash:  # it would replace that selector's record: its ranking, silently wrong
        raise DataError(f"{task.instance_id}: a verifier stores {clash}, a selector's feature key")
    if GUARD in verified or GUARD in baselines:  # the guard of every pick: not theirs
        raise DataError(
            f"{task.instance_id}: a verifier or selector stores {GUARD!r}, the run's own"
        )
    return {**baselines, **verified, GUARD: await guard_record(task, scope.analyses)}


async def compute_task(
    task: Task,
    ctx: RunContext,
    plan: RetryPlan | None = None,
    earlier: dict[str, ArtifactRecord] | None = None,
) -> TaskRecord:
    """Every verifier of the run on one task, then the selectors' features; nothing is written to
    the run folder here.

    ``plan``: a retry of transient failures (grade only those, keep every other verdict);
    ``earlier``: the artifacts earlier attempts left, by verifier."""
    started = time.monotonic()
    config = ctx.config
    scope = TaskScope(task.public(), ctx, plan)
    verified = await verify_task(scope, earlier or {}, grade=True)
    baselines = await _baselines(scope, verified.baselines)
    judge_model = config.judge.model
    inputs = task_inputs(task)  # the issue's hash, the base commit, each candidate's hashes, label
    progress = ProgressRow.model_validate(
        {
            "instance_id": task.instance_id,
            "repo": task.repo,
            "problem_hash": inputs.problem_hash,
            "base_commit": inputs.base_commit,
            "candidates": inputs.candidates,
            "explorer": config.explorer.kind,
            "judge": ctx.judge.name,
            "repeats": config.judge.repeats if config.judge.kind == "llm" else 1,
            "rubric": NOT_REQUESTED,
            **verified.progress,
            "baselines": baselines,
            # sources are read only to warn: they never reach a judge or a score
            "judge_generated_candidates": (
                generator_warning(task, judge_model.model) if judge_model is not None else 0
            ),
            "cost": {
                **merge_costs(plan.cost if plan else {}, ctx.ledger.for_task(task.instance_id)),
                **verified.cost,
            },
            "seconds": round(time.monotonic() - started, 3),
        }
    )
    calls, usd = _spent(ctx, task.instance_id)
    return TaskRecord(
        instance_id=task.instance_id,
        judged=True,
        artifacts=verified.artifacts,
        verdict_rows=verified.verdicts,
        progress=progress,
        patches=patch_rows(task),
        graded_files=verified.files,
        calls=calls,
        usd=usd,
    )


async def explore_task(
    task: Task, ctx: RunContext, earlier: dict[str, ArtifactRecord] | None = None
) -> TaskRecord:
    """The ``explore`` stage alone: every verifier's artifact, no grades."""
    verified = await verify_task(TaskScope(task.public(), ctx), earlier or {}, grade=False)
    calls, usd = _spent(ctx, task.instance_id)
    return TaskRecord(
        instance_id=task.instance_id,
        judged=False,
        artifacts=verified.artifacts,
        calls=calls,
        usd=usd,
    )


def _spent(ctx: RunContext, instance_id: str) -> tuple[int, float]:
    """Model calls and known dollars of one task in this process."""
    counts = ctx.ledger.for_task(instance_id).values()
    return int(sum(c["calls"] for c in counts)), float(sum(c["usd"] for c in counts))


@dataclass
class Job:
    """One unfinished task, as an executor receives it."""

    task: Task
    plan: RetryPlan | None
    """A retry of transient failures: judge only those."""
    explore_only: bool
    earlier: dict[str, ArtifactRecord] = field(default_factory=dict)
    """The artifacts earlier attempts left, by verifier (reused, not written again)."""


async def run_job(job: Job, ctx: RunContext) -> TaskRecord:
    """One job's work, the same in every executor."""
    if job.explore_only:
        return await explore_task(job.task, ctx, job.earlier)
    return await compute_task(job.task, ctx, job.plan, job.earlier)
