"""The rubric verifier's artifact: a task's ``rubrics.yaml``, reused from ``--rubrics DIR`` or written by
the run's explorer (:mod:`agentic_rubrics.explore`) in its sandbox, then loaded back as the report will
read it (redacted: an explorer can quote what it saw), with its status (``rubrics/<id>/status.json``)
and the explorer's trajectory (``trajectories/<id>.json``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.inputs import text_hash
from agentic_rubrics.exceptions import RubricError
from agentic_rubrics.pipeline.context import RunContext
from agentic_rubrics.pipeline.verifiers import VerifierSpec
from agentic_rubrics.pipeline.verifiers.artifacts import (
    Written,
    trajectory_file,
    write_in_sandbox,
    writer_trajectory,
)
from agentic_rubrics.rubric.compound import compound_items
from agentic_rubrics.rubric.file import (
    dump_rubric_document,
    load_rubric,
    parse_rubric,
    rubric_document,
)
from agentic_rubrics.rubric.grounding import grounding_record
from agentic_rubrics.runfolder.names import safe_name
from agentic_rubrics.runfolder.records import ArtifactRecord
from agentic_rubrics.runfolder.rows import RubricStatus
from agentic_rubrics.types import SCHEMA, Rubric, Task

RUBRIC_FILE = "rubrics.yaml"


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
            path = (rubrics_dir / name / RUBRIC_FILE).resolve()
            if path.is_relative_to(root) and path.is_file():
                return path
        except (OSError, ValueError):  # a name the file system cannot hold (too long, a NUL)
            continue
    return None


def _reuse(
    task: Task, rubrics_dir: Path, status: dict[str, Any], redact: Callable[[str], str]
) -> Rubric | None:
    path = reused_rubric_path(rubrics_dir, task.instance_id)
    if path is None:
        status.update(status="failed", reason="rubric_not_found")
        return None
    try:
        rubric, _ = load_rubric(path)
    except RubricError as exc:
        # the first problem (file:line:column, field, what was expected) reaches the warning
        first = str(exc.problems[0]) if exc.problems else str(exc)
        status.update(
            status="failed",
            reason="rubric_invalid",
            problems=len(exc.problems),
            last_validation_error=redact(
                f"{path}: {first}" if not first.startswith(str(path)) else first
            ),
        )
        return None
    return rubric


async def _explore(
    task: Task, ctx: RunContext, status: dict[str, Any]
) -> tuple[Rubric | None, Written]:
    cfg = ctx.config.explorer
    written = await write_in_sandbox(
        task,
        ctx,
        lambda sandbox: ctx.explorer.explore(task, sandbox),
        uses_sandbox=cfg.uses_sandbox,
        model_commands=cfg.model_commands,
    )
    if written.tree is not None:
        status["repository"] = written.tree.record()
    if written.turns is not None:  # ok or not: the comparison's cost table counts them
        status["turns"] = written.turns
    if written.product is None:
        status.update(status="failed", reason=written.reason("explore_error"))
        errors = [s["validation"] for s in written.steps if s.get("validation")]
        if errors:
            status["last_validation_error"] = ctx.redact(errors[-1])
        return None, written
    root = written.tree.path if written.tree is not None else None
    status["grounding"] = grounding_record(written.product, root, static_leads=cfg.static_leads)
    return written.product, written


async def write_rubric(
    task: Task, ctx: RunContext, spec: VerifierSpec, rubrics_dir: str | None
) -> tuple[ArtifactRecord, Rubric | None]:
    """The task's rubric, reused from ``rubrics_dir`` or explored now, as its artifact (and parsed)."""
    config, explorer = ctx.config, ctx.explorer
    started = time.monotonic()
    status: dict[str, Any] = {"schema": SCHEMA, "instance_id": task.instance_id}
    status.update(base_commit=task.base_commit, problem_hash=text_hash(task.problem_statement))
    written: Written | None = None
    if rubrics_dir is not None:
        status["source"] = "reused"
        rubric = _reuse(task, Path(rubrics_dir), status, ctx.redact)
    else:
        status["source"] = f"explorer:{explorer.name}"
        rubric, written = await _explore(task, ctx, status)
    text = None
    warnings: list[Any] = []
    if rubric is not None:
        text = dump_rubric_document(ctx.redact(rubric_document(rubric)))
        try:  # what is written must load back: the report reads it from disk; judged as read back
            rubric, warnings = parse_rubric(text, f"rubrics/{task.instance_id}/{RUBRIC_FILE}")
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
            compound_items=sorted(compound_items(rubric)),
        )
    status["seconds"] = round(time.monotonic() - started, 3)
    trajectory = None
    if written is not None:
        model = config.explorer.model.model if config.explorer.model else None
        trajectory = writer_trajectory(
            task,
            ctx,
            written,
            writer=explorer.name,
            model=model,
            phase="explore",
            reason=status.get("reason") if status["status"] != "ok" else None,
        )
    record = ArtifactRecord(
        instance_id=task.instance_id,
        verifier=spec.name,
        folder=spec.folder,
        files={RUBRIC_FILE: text} if text is not None else {},
        status=RubricStatus.model_validate(status),
        trajectory=trajectory,
        trajectory_file=trajectory_file(spec, task.instance_id),
    )
    return record, rubric
