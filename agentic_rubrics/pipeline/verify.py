"""One task's verifiers other than the rubric: each one's artifact (reused, given, or written now) and,
when the task is judged, its grades of every candidate (:mod:`agentic_rubrics.pipeline.verifiers`).

Like :mod:`agentic_rubrics.pipeline.stages`, nothing here touches the run folder: the artifacts and
what grading wrote travel in the task's record to the driver, the one writer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.pipeline.context import RunContext
from agentic_rubrics.pipeline.verifiers import artifact_verifiers
from agentic_rubrics.records import ArtifactRecord
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.types import Task

log = logging.getLogger(__name__)


def earlier_artifacts(folder: RunFolder, instance_id: str, names: list[str]) -> dict[str, Any]:
    """The artifacts earlier attempts left in the run folder for one task, by verifier."""
    out: dict[str, ArtifactRecord] = {}
    for verifier in artifact_verifiers(names):
        try:
            found = verifier.earlier(folder, instance_id)
        except DataError as exc:  # a damaged artifact is written again, and said so
            log.warning("%s: %s artifact not reused: %s", instance_id, verifier.name, exc)
            found = None
        if found is not None:
            out[verifier.name] = found
    return out


@dataclass
class Verified:
    """What the task's verifiers other than the rubric add to its record."""

    artifacts: list[ArtifactRecord] = field(default_factory=list)
    baselines: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    cost: dict[str, dict[str, int | float]] = field(default_factory=dict)


async def verify_task(
    task: Task, ctx: RunContext, earlier: dict[str, ArtifactRecord], *, grade: bool
) -> Verified:
    """Each verifier's artifact, and with ``grade`` its grades of the task's candidates. ``task`` is
    the public view: no verifier's writer sees labels, the gold patch or hidden tests."""
    out = Verified()
    for verifier in artifact_verifiers(ctx.config.verifiers):
        artifact, graded = await verifier.run(task, ctx, earlier.get(verifier.name), grade=grade)
        out.artifacts.append(artifact)
        if graded is None:
            continue
        clash = set(graded.baselines) & set(out.baselines)
        if clash:
            raise DataError(f"verifier {verifier.name!r} stores {sorted(clash)} twice")
        out.baselines.update(graded.baselines)
        out.files.update(graded.files)
        for phase, counts in graded.cost.items():
            out.cost[phase] = {**out.cost.get(phase, {}), **counts}
    return out
