"""One task's work: explore (or reuse) its rubric, judge its candidates (:mod:`agentic_rubrics.pipeline.judging`),
compute its baselines.

The work is computed without touching the run folder and returned as a
:class:`~agentic_rubrics.records.TaskRecord`, so it can run anywhere (this process, or a Ray worker); the
driver (:mod:`agentic_rubrics.pipeline.driver`) stores records in the run folder, one writer, in the order they
finish. Explorers and judges get the task's public view only.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.inputs import patch_rows, task_inputs, text_hash
from agentic_rubrics.datasets.repos import RepoTree
from agentic_rubrics.exceptions import (
    AgenticRubricsError,
    DataError,
    ExplorationFailed,
    ModelError,
    RepoError,
    RubricError,
    WorkerStartError,
)
from agentic_rubrics.pipeline.context import SANDBOX_SLOT, RunContext
from agentic_rubrics.pipeline.judging import baselines_for, generator_warning, judge_task
from agentic_rubrics.pipeline.verify import verify_task
from agentic_rubrics.records import ArtifactRecord, RubricRecord, TaskRecord
from agentic_rubrics.rubric.checks_repo import repo_analyses
from agentic_rubrics.rubric.file import (
    dump_rubric_document,
    load_rubric,
    parse_rubric,
    rubric_document,
)
from agentic_rubrics.rubric.grounding import grounding_record, repository_source
from agentic_rubrics.runfolder.folder import RunFolder, rows_digest, safe_name
from agentic_rubrics.runfolder.retry import RetryPlan, merge_costs, merge_rows
from agentic_rubrics.runfolder.rows import (
    ProgressRow,
    RubricStatus,
    RubricSummary,
    Trajectory,
)
from agentic_rubrics.types import SCHEMA, Rubric, Task

log = logging.getLogger(__name__)

# --------------------------------------------------------------------------- records


def earlier_rubric(folder: RunFolder, instance_id: str) -> RubricRecord | None:
    """The rubric an earlier attempt left in the run folder, if any."""
    status = folder.rubric_status(instance_id)
    if status is None:
        return None
    ok = status.status == "ok"
    text = folder.rubric_path(instance_id).read_text(encoding="utf-8") if ok else None
    return RubricRecord(instance_id=instance_id, rubric_yaml=text, status=status, fresh=False)


# --------------------------------------------------------------------------- exploring


async def obtain_rubric(task: Task, ctx: RunContext, earlier: RubricRecord | None) -> RubricRecord:
    """The task's rubric: from an earlier attempt, from ``--rubrics``, or explored now."""
    if earlier is not None or "rubric" not in ctx.config.verifiers:
        return earlier or _not_requested(task)  # other verifiers alone: no rubric, no call
    config, explorer = ctx.config, ctx.explorer
    started = time.monotonic()
    status: dict[str, Any] = {"schema": SCHEMA, "instance_id": task.instance_id}
    status.update(base_commit=task.base_commit, problem_hash=text_hash(task.problem_statement))
    rubric: Rubric | None = None
    trajectory: list[dict[str, Any]] = []
    sandbox_kind = None
    if config.rubrics_dir is not None:
        status["source"] = "reused"
        rubric, status = _reuse_rubric(task, Path(config.rubrics_dir), status)
    else:
        status["source"] = f"explorer:{explorer.name}"
        rubric, trajectory, status, sandbox_kind = await _explore(task, ctx, status)
    text = None
    warnings: list[Any] = []
    if rubric is not None:
        text = _redacted_yaml(rubric, ctx)
        try:  # what is written must load back: the report reads it from disk; judged as read back
            rubric, warnings = parse_rubric(text, f"rubrics/{task.instance_id}/rubrics.yaml")
        except RubricError as exc:
            rubric, text = None, None
            status.update(status="failed", reason="invalid_rubric", problems=len(exc.problems))
    if rubric is not None:
        status.update(
            status="ok",
            reason=None,
            hash=rubric.content_hash(),
            items=sum(1 for _ in rubric.items()),
            checked_items=sum(1 for _, i in rubric.items() if i.check is not None),
            lint_warnings=len(warnings),
        )
    status["seconds"] = round(time.monotonic() - started, 3)
    record = None
    if config.trajectories and status["source"] != "reused":
        record = Trajectory.model_validate(
            ctx.redact(
                {
                    "schema": SCHEMA,
                    "instance_id": task.instance_id,
                    "explorer": explorer.name,
                    "model": config.explorer.model.model if config.explorer.model else None,
                    "sandbox": sandbox_kind,
                    "status": status["status"],
                    "reason": status.get("reason"),
                    "turns": len(trajectory),
                    "cost": ctx.ledger.for_task(task.instance_id).get("explore", {}),
                    "steps": trajectory,
                }
            )
        )
    return RubricRecord(
        instance_id=task.instance_id,
        rubric_yaml=text,
        status=RubricStatus.model_validate(status),
        trajectory=record,
    ).with_parsed(rubric)


def _not_requested(task: Task) -> RubricRecord:
    off = {"schema": SCHEMA, "instance_id": task.instance_id, "source": "none"}
    off.update(status="failed", reason="rubric_not_requested")
    status = RubricStatus.model_validate(off)
    return RubricRecord(instance_id=task.instance_id, rubric_yaml=None, status=status)


def _redacted_yaml(rubric: Rubric, ctx: RunContext) -> str:
    """rubrics.yaml with secrets replaced: an explorer can quote what it saw (an echoed key ...)."""
    doc = rubric_document(rubric)
    return dump_rubric_document(ctx.redact(doc))


def reused_rubric_path(rubrics_dir: Path, instance_id: str) -> Path | None:
    """Where ``--rubrics DIR`` holds a task's rubrics.yaml, never outside ``DIR``.

    First ``DIR/<safe name>/rubrics.yaml`` (what a run folder's ``rubrics/`` holds), then
    ``DIR/<instance_id>/rubrics.yaml`` for an id that is a plain relative path (``owner/name-1``) and
    stays inside ``DIR`` once resolved: an id like ``../../x`` or ``/abs`` is never read.
    """
    root = rubrics_dir.resolve()
    names = [safe_name(instance_id)]
    parts = Path(instance_id).parts
    if (
        parts
        and not Path(instance_id).is_absolute()
        and ".." not in parts
        and "\x00" not in instance_id
    ):
        names.append(instance_id)
    for name in names:
        try:
            path = (rubrics_dir / name / "rubrics.yaml").resolve()
            if path.is_relative_to(root) and path.is_file():
                return path
        except (OSError, ValueError):  # a name the file system cannot hold (too long, a NUL)
            continue
    return None


def _reuse_rubric(
    task: Task, rubrics_dir: Path, status: dict[str, Any]
) -> tuple[Rubric | None, dict[str, Any]]:
    path = reused_rubric_path(rubrics_dir, task.instance_id)
    if path is None:
        return None, {**status, "status": "failed", "reason": "rubric_not_found"}
    try:
        rubric, _ = load_rubric(path)
    except RubricError as exc:
        failed = {"status": "failed", "reason": "rubric_invalid", "problems": len(exc.problems)}
        return None, {**status, **failed}
    return rubric, status


def _turns(steps: list[dict[str, Any]], ctx: RunContext) -> dict[str, Any]:
    """A model explorer's turns used and the validator's last error on its file (redacted)."""
    turns = [s["turn"] for s in steps if isinstance(s.get("turn"), int)]
    errors = [s["validation"] for s in steps if s.get("validation")]
    out: dict[str, Any] = {}
    if turns:
        out["turns"] = max(turns)
    if errors:
        out["last_validation_error"] = ctx.redact(errors[-1])
    return out


async def _explore(
    task: Task, ctx: RunContext, status: dict[str, Any]
) -> tuple[Rubric | None, list[dict[str, Any]], dict[str, Any], str | None]:

    from agentic_rubrics.sandbox import open_sandbox

    cfg = ctx.config.explorer
    local = cfg.sandbox.needs_repo
    tree: RepoTree | None = None
    if cfg.uses_sandbox and local:
        try:
            tree = await asyncio.to_thread(ctx.repository, task)
        except RepoError as exc:
            log.warning("%s: no repository: %s", task.instance_id, exc)
            failed = {"status": "failed", "reason": f"no_repository:{exc.reason}"}
            return None, [], {**status, **failed}, None
        if tree is not None:
            status["repository"] = tree.record()
    needs_sandbox = cfg.uses_sandbox and not (local and tree is None)
    if cfg.model_commands and not needs_sandbox:
        return None, [], {**status, "status": "failed", "reason": "no_repository"}, None
    sandbox: Any = None
    async with ctx.limiter.slot(SANDBOX_SLOT) if needs_sandbox else _nothing():
        try:
            if needs_sandbox:
                sandbox = await open_sandbox(
                    cfg.sandbox,
                    instance_id=task.instance_id,
                    repo_path=str(tree.path) if tree is not None else task.repo_path,
                    shared_tree=tree is not None and tree.source == "cache",
                    base_commit=task.base_commit,
                    model_commands=cfg.model_commands,
                    allow_unisolated=cfg.allow_unisolated,
                )
            # with no repository the static explorer writes the issue-only static rubric
            kind = sandbox.kind if sandbox is not None else None
            try:
                rubric, steps = await ctx.explorer.explore(task, sandbox)
            except ExplorationFailed as failed:
                why = {"status": "failed", "reason": failed.reason, **_turns(failed.steps, ctx)}
                return None, failed.steps, {**status, **why}, kind
            root = tree.path if tree is not None else None
            grounding = grounding_record(rubric, root, static_leads=cfg.static_leads)
            return rubric, steps, {**status, "grounding": grounding}, kind
        except AgenticRubricsError as exc:
            if isinstance(exc, ModelError | WorkerStartError):
                raise  # authentication, an unknown model, workers that cannot start: the whole run
            reason = "sandbox_error" if sandbox is None and needs_sandbox else "explore_error"
            log.warning("%s: %s: %s", task.instance_id, reason, exc)
            failed_status = {
                **status,
                "status": "failed",
                "reason": f"{reason}:{type(exc).__name__}",
            }
            return None, [], failed_status, None
        finally:
            if sandbox is not None:
                await sandbox.close()


class _nothing:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


# --------------------------------------------------------------------------- one task


async def compute_task(
    task: Task,
    ctx: RunContext,
    earlier: RubricRecord | None = None,
    plan: RetryPlan | None = None,
    artifacts: dict[str, ArtifactRecord] | None = None,
) -> TaskRecord:
    """Explore (or reuse) and judge one task; nothing is written to the run folder here.

    ``plan``: a retry of transient failures (judge only those, keep every other verdict);
    ``artifacts``: the other verifiers' artifacts earlier attempts left."""
    started = time.monotonic()
    config = ctx.config
    public = task.public()
    rubric_outcome = await obtain_rubric(public, ctx, earlier)
    repeats = config.judge.repeats if config.judge.kind == "llm" else 1
    only = plan.pairs() if plan is not None and not plan.redo_rubric else None
    repository = await repo_analyses(public, rubric_outcome.rubric, ctx.repository)
    rows = await judge_task(
        public,
        rubric_outcome.rubric,
        ctx.judge,
        repeats=repeats,
        concurrency=config.judge.concurrency,
        only=only,
        repository=repository,
    )
    edited: dict[str, Any] = {}  # written only when true: rows keep the shape they had
    if plan is not None and only is not None:
        rows = merge_rows(plan.kept_rows, rows, task)
        edited = {"verdicts_changed": True} if plan.rows_changed else {}
    baselines = await baselines_for(public, ctx, repository)
    verified = await verify_task(public, ctx, artifacts or {}, grade=True)
    clash = sorted(set(verified.baselines) & set(baselines))
    if clash:  # it would replace that selector's record: its ranking, silently wrong
        raise DataError(f"{task.instance_id}: a verifier stores {clash}, a selector's feature key")
    baselines.update(verified.baselines)
    judge_model = config.judge.model
    own_output = generator_warning(task, judge_model.model) if judge_model is not None else 0
    status = rubric_outcome.status
    # the hash, the base commit, each candidate's hashes and label
    inputs = task_inputs(task)
    progress = ProgressRow(
        instance_id=task.instance_id,
        repo=task.repo,
        problem_hash=inputs.problem_hash,
        base_commit=inputs.base_commit,
        candidates=inputs.candidates,
        explorer=config.explorer.kind if config.rubrics_dir is None else "reused",
        judge=ctx.judge.name,
        repeats=repeats,
        rubric=RubricSummary(
            status=status.status,
            reason=status.reason,
            hash=status.hash,
            source=status.source,
            items=status.items,
            repository=repository_source(status),
            grounding=status.grounding,
            turns=status.turns,
            last_validation_error=status.last_validation_error,
        ),
        baselines=baselines,
        verdict_rows=len(rows),
        verdicts_digest=rows_digest([v.to_row() for v in rows]),
        **edited,
        judge_generated_candidates=own_output,
        cost={
            **merge_costs(plan.cost if plan else {}, ctx.ledger.for_task(task.instance_id)),
            **verified.cost,
        },
        seconds=round(time.monotonic() - started, 3),
    )
    calls, usd = _spent(ctx, task.instance_id)
    return TaskRecord(
        instance_id=task.instance_id,
        rubric=rubric_outcome,
        judged=True,
        verdict_rows=rows,
        progress=progress,
        patches=patch_rows(task),
        artifacts=verified.artifacts,
        graded_files=verified.files,
        calls=calls,
        usd=usd,
    )


async def explore_task(
    task: Task, ctx: RunContext, earlier: RubricRecord | None, artifacts: dict[str, ArtifactRecord]
) -> TaskRecord:
    """The ``explore`` stage alone: the task's rubric and the other verifiers' artifacts, no
    verdicts."""
    rubric = await obtain_rubric(task.public(), ctx, earlier)
    verified = await verify_task(task.public(), ctx, artifacts, grade=False)
    calls, usd = _spent(ctx, task.instance_id)
    return TaskRecord(
        instance_id=task.instance_id,
        rubric=rubric,
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
    earlier: RubricRecord | None
    """The rubric an earlier attempt left (reused, not explored again)."""
    plan: RetryPlan | None
    """A retry of transient failures: judge only those."""
    explore_only: bool
    artifacts: dict[str, ArtifactRecord] = field(default_factory=dict)
    """The other verifiers' artifacts earlier attempts left (reused)."""


async def run_job(job: Job, ctx: RunContext) -> TaskRecord:
    """One job's work, the same in every executor."""
    if job.explore_only:
        return await explore_task(job.task, ctx, job.earlier, job.artifacts)
    return await compute_task(job.task, ctx, job.earlier, job.plan, job.artifacts)
