"""The ``tests`` verifier's script written by the test-writing agent
(:mod:`agentic_rubrics.explore.test_writer`) in the explorer's sandbox, with the explorer's model.

The agent gets the task with no candidates at all (and, as every explorer, no labels, gold patch or
hidden tests): what it writes cannot be fitted to the patches it will grade.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from agentic_rubrics.exceptions import (
    AgenticRubricsError,
    ExplorationFailed,
    ModelError,
    RepoError,
    WorkerStartError,
)
from agentic_rubrics.pipeline.context import SANDBOX_SLOT, RunContext
from agentic_rubrics.runfolder.rows import Trajectory
from agentic_rubrics.types import SCHEMA, Task

log = logging.getLogger(__name__)


async def write_tests(
    task: Task, ctx: RunContext
) -> tuple[dict[str, str], str, Trajectory | None, int | None]:
    """The script (``{file name: text}``, empty when none was written), why not, the trajectory
    (when trajectories are kept) and the turns used."""
    from agentic_rubrics.explore.test_writer import TEST_FILE, TestWriterAgent
    from agentic_rubrics.sandbox import open_sandbox

    cfg = ctx.config.explorer
    assert ctx.explorer_model is not None, "the test writer needs the explorer's model"
    writer = TestWriterAgent(
        ctx.explorer_model,
        max_turns=cfg.max_turns,
        command_timeout=cfg.command_timeout,
        max_observation=cfg.max_observation,
        tool_calls=cfg.tool_calls,
    )
    shown = task.model_copy(update={"candidates": []})  # never a candidate's patch
    try:
        repo_path, shared = await _repository(task, ctx)
    except RepoError as exc:
        return {}, f"no_repository:{exc.reason}", None, None
    if repo_path is None and cfg.sandbox.needs_repo:
        return {}, "no_repository", None, None
    steps: list[dict[str, Any]] = []
    text, reason = None, ""
    sandbox: Any = None
    async with ctx.limiter.slot(SANDBOX_SLOT):
        try:
            sandbox = await open_sandbox(
                cfg.sandbox,
                instance_id=task.instance_id,
                repo_path=repo_path,
                shared_tree=shared,
                base_commit=task.base_commit,
                model_commands=True,
                allow_unisolated=cfg.allow_unisolated,
            )
            text, steps = await writer.write(shown, sandbox)
        except ExplorationFailed as failed:
            reason, steps = failed.reason, failed.steps
        except (ModelError, WorkerStartError):
            raise  # a model that cannot be used at all stops the run
        except AgenticRubricsError as exc:
            log.warning("%s: the test writer failed: %s", task.instance_id, exc)
            what = "sandbox_error" if sandbox is None else "writer_error"
            reason = f"{what}:{type(exc).__name__}"
        finally:
            if sandbox is not None:
                await sandbox.close()
    turns = max((s["turn"] for s in steps if isinstance(s.get("turn"), int)), default=None)
    kind = getattr(sandbox, "kind", None)
    trajectory = _trajectory(task, ctx, writer, steps, text is not None, reason, kind)
    files = {TEST_FILE: str(ctx.redact(text))} if text is not None else {}
    return files, reason, trajectory, turns


async def _repository(task: Task, ctx: RunContext) -> tuple[str | None, bool]:
    """The tree the writer's sandbox opens over, and whether it is the shared cache's."""
    if not ctx.config.explorer.sandbox.needs_repo:
        return task.repo_path, False
    tree = await asyncio.to_thread(ctx.repository, task)
    if tree is None:
        return None, False
    return str(tree.path), tree.source == "cache"


def _trajectory(
    task: Task,
    ctx: RunContext,
    writer: Any,
    steps: list[dict[str, Any]],
    ok: bool,
    reason: str,
    sandbox: str | None,
) -> Trajectory | None:
    """The writer's trajectory (redacted), when trajectories are kept."""
    if not ctx.config.trajectories:
        return None
    cfg = ctx.config.explorer
    record = {
        "schema": SCHEMA,
        "instance_id": task.instance_id,
        "explorer": writer.name,
        "model": cfg.model.model if cfg.model else None,
        "sandbox": sandbox,
        "status": "ok" if ok else "failed",
        "reason": reason or None,
        "turns": len(steps),
        "cost": ctx.ledger.for_task(task.instance_id).get(writer.phase, {}),
        "steps": steps,
    }
    return Trajectory.model_validate(ctx.redact(record))
