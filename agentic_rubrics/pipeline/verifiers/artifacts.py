"""What every verifier does the same way: its artifact read back from an earlier attempt, an agent run in
the explorer's sandbox over the task's tree (:func:`write_in_sandbox`: the rubric's explorer, the test
writer, the proxy author), and the writer's trajectory as the run folder keeps it.

Nothing here touches the run folder but to read: what is written travels in the task's record to the
driver, the one writer.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.repos import RepoTree
from agentic_rubrics.exceptions import (
    AgenticRubricsError,
    DataError,
    ExplorationFailed,
    ModelError,
    RepoError,
    WorkerStartError,
)
from agentic_rubrics.pipeline.context import SANDBOX_SLOT, RunContext
from agentic_rubrics.pipeline.verifiers import VerifierSpec
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.names import safe_name
from agentic_rubrics.runfolder.records import ArtifactRecord
from agentic_rubrics.runfolder.rows import RubricStatus, Trajectory
from agentic_rubrics.runfolder.verifier_rows import ArtifactStatus
from agentic_rubrics.types import SCHEMA, Task

log = logging.getLogger(__name__)


def given_names(instance_id: str) -> list[str]:
    """The folder names a task's given artifact may have in a user's ``DIR`` (``--tests``,
    ``--proxies``): its :func:`safe_name` first, then the id itself when it is a plain relative path
    (never an absolute one or one with ``..``)."""
    names = [safe_name(instance_id)]
    if not Path(instance_id).is_absolute() and ".." not in Path(instance_id).parts:
        names.append(instance_id)
    return names


Status = RubricStatus | ArtifactStatus


def trajectory_file(spec: VerifierSpec, instance_id: str) -> str:
    """Where a verifier's writer's trajectory goes, relative to the run folder."""
    return spec.trajectory.format(folder=spec.folder, id=safe_name(instance_id))


def earlier_artifact(
    folder: RunFolder,
    spec: VerifierSpec,
    instance_id: str,
    *,
    row: type[RubricStatus] | type[ArtifactStatus] = ArtifactStatus,
    names: Callable[[Any], list[str]] = lambda status: list(status.files),
    allowed: Callable[[str], bool] = lambda name: True,
    check: Callable[[dict[str, str], Any], str | None] = lambda files, status: None,
) -> ArtifactRecord | None:
    """The artifact an earlier attempt left in ``<spec.folder>/<id>/`` (``None``: none was marked
    done by its ``status.json``): its status (``row``), the files the status names (``names``; each
    one ``allowed``), and ``check`` (files, status) -> what is wrong with them, if anything.

    Raises:
        DataError: a file the status names is not one of its files, cannot be read, or fails
            ``check`` (the artifact is then written again).
    """
    status: Status | None = folder.artifact_status(spec.folder, instance_id, row)
    if status is None:
        return None
    where = folder.artifact_dir(spec.folder, instance_id)
    files: dict[str, str] = {}
    for name in names(status):
        if not allowed(name):
            raise DataError(f"{where / 'status.json'}: {name!r} is no {spec.artifact} file")
        try:
            files[name] = (where / name).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise DataError(f"{where / name}: cannot be read ({exc})") from exc
    problem = check(files, status)
    if problem is not None:
        raise DataError(f"{where}: {problem}")
    return ArtifactRecord(
        instance_id=instance_id,
        verifier=spec.name,
        folder=spec.folder,
        files=files,
        status=status,
        fresh=False,
    )


@dataclass
class Written:
    """What an agent made in the explorer's sandbox: its product, or why there is none."""

    product: Any = None
    """What it wrote (a rubric, a test script's text, a patch); ``None``: nothing."""
    failure: str = ""
    """Why nothing: ``no_repository[:<why>]``, ``sandbox_error:<type>``, ``agent_error:<type>``, or
    the agent's own reason (``turn_budget_exhausted`` …); empty when it wrote something."""
    steps: list[dict[str, Any]] = field(default_factory=list)
    """Its trajectory's steps."""
    sandbox: str | None = None
    """The sandbox's kind (``None``: none was opened)."""
    tree: RepoTree | None = None
    """The task's tree it worked on, when it had one."""

    @property
    def turns(self) -> int | None:
        """Turns a model agent used (``None``: it took none)."""
        return max((s["turn"] for s in self.steps if isinstance(s.get("turn"), int)), default=None)

    def reason(self, agent_word: str) -> str:
        """:attr:`failure` with ``agent_error`` named as its verifier names it (``explore_error``)."""
        if self.failure.startswith("agent_error:"):
            return agent_word + self.failure.removeprefix("agent_error")
        return self.failure


Work = Callable[[Any], Awaitable[tuple[Any, list[dict[str, Any]]]]]
"""The agent's part: ``work(sandbox)`` (``None``: no sandbox) -> (product, steps); it raises
:class:`ExplorationFailed` when it wrote nothing valid."""


async def write_in_sandbox(
    task: Task,
    ctx: RunContext,
    work: Work,
    *,
    uses_sandbox: bool = True,
    model_commands: bool = True,
) -> Written:
    """Run ``work`` in a sandbox of the explorer's kind over the task's tree, under one of the run's
    sandbox slots, and close it. A sandbox that needs a local tree gets the task's (fetched into the
    cache, or its ``repo_path``); without one, an agent that runs a model's commands writes nothing
    (``no_repository``), a rule-based one runs without a sandbox (``uses_sandbox`` false: never one).
    A model that cannot be used at all (:class:`ModelError`) and workers that cannot start stop the
    run; every other failure is :attr:`Written.failure`."""
    from agentic_rubrics.sandbox import open_sandbox

    cfg = ctx.config.explorer
    out = Written()
    local = cfg.sandbox.needs_repo
    if uses_sandbox and local:
        try:
            out.tree = await asyncio.to_thread(ctx.repository, task)
        except RepoError as exc:
            log.warning("%s: no repository: %s", task.instance_id, exc)
            out.failure = f"no_repository:{exc.reason}"
            return out
    needs_sandbox = uses_sandbox and not (local and out.tree is None)
    if model_commands and not needs_sandbox:
        out.failure = "no_repository"
        return out
    sandbox: Any = None
    async with ctx.limiter.slot(SANDBOX_SLOT) if needs_sandbox else _nothing():
        try:
            if needs_sandbox:
                sandbox = await open_sandbox(
                    cfg.sandbox,
                    instance_id=task.instance_id,
                    repo_path=str(out.tree.path) if out.tree is not None else task.repo_path,
                    shared_tree=out.tree is not None and out.tree.source == "cache",
                    base_commit=task.base_commit,
                    model_commands=model_commands,
                    allow_unisolated=cfg.allow_unisolated,
                )
                out.sandbox = sandbox.kind
            out.product, out.steps = await work(sandbox)
        except ExplorationFailed as failed:
            out.failure, out.steps = failed.reason, failed.steps
        except (ModelError, WorkerStartError):
            raise  # authentication, an unknown model, workers that cannot start: the whole run
        except AgenticRubricsError as exc:
            what = "sandbox_error" if sandbox is None and needs_sandbox else "agent_error"
            log.warning("%s: %s: %s", task.instance_id, what, exc)
            out.product, out.failure = None, f"{what}:{type(exc).__name__}"
        finally:
            if sandbox is not None:
                await sandbox.close()
    return out


class _nothing:
    async def __aenter__(self) -> None:
        return None

    async def __aexit__(self, *exc: object) -> None:
        return None


def writer_trajectory(
    task: Task,
    ctx: RunContext,
    written: Written,
    *,
    writer: str,
    model: str | None,
    phase: str,
    reason: str | None,
) -> Trajectory | None:
    """The writer's trajectory as the run folder keeps it (redacted), when trajectories are kept."""
    if not ctx.config.trajectories:
        return None
    record = {
        "schema": SCHEMA,
        "instance_id": task.instance_id,
        "explorer": writer,
        "model": model,
        "sandbox": written.sandbox,
        "status": "failed" if reason else "ok",
        "reason": reason or None,
        "turns": len(written.steps),
        "cost": ctx.ledger.for_task(task.instance_id).get(phase, {}),
        "steps": written.steps,
    }
    return Trajectory.model_validate(ctx.redact(record))
