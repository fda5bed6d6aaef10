"""One task's verifiers, in the run's order (the rubric first): each one's artifact (reused, given, or
written now) and, when the task is judged, its grades of every candidate.

Nothing here touches the run folder but to read what earlier attempts left: the artifacts and what
grading wrote travel in the task's record to the driver, the one writer.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.pipeline.verifiers import TaskScope, get_verifier, in_order
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.records import ArtifactRecord
from agentic_rubrics.types import Verdict

log = logging.getLogger(__name__)


def earlier_artifacts(folder: RunFolder, instance_id: str, names: list[str]) -> dict[str, Any]:
    """The artifacts earlier attempts left in the run folder for one task, by verifier (a damaged
    one is left out, and said so: it is written again)."""
    out: dict[str, ArtifactRecord] = {}
    for spec in in_order(names):
        try:
            found = get_verifier(spec.name).earlier(folder, instance_id)
        except DataError as exc:
            log.warning("%s: %s artifact not reused: %s", instance_id, spec.name, exc)
            found = None
        if found is not None:
            out[spec.name] = found
    return out


@dataclass
class Verified:
    """What the task's verifiers add to its record."""

    artifacts: list[ArtifactRecord] = field(default_factory=list)
    baselines: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    cost: dict[str, dict[str, int | float]] = field(default_factory=dict)
    verdicts: list[Verdict] = field(default_factory=list)
    progress: dict[str, Any] = field(default_factory=dict)


async def verify_task(
    scope: TaskScope, earlier: dict[str, ArtifactRecord], *, grade: bool
) -> Verified:
    """Each verifier's artifact, and with ``grade`` its grades of the task's candidates. What two
    verifiers would both store (a key of ``baselines`` or of the progress row) is refused: one
    would silently replace the other."""
    out = Verified()
    for spec in in_order(scope.ctx.config.verifiers):
        verifier = get_verifier(spec.name)
        artifact, graded = await verifier.run(scope, earlier.get(spec.name), grade=grade)
        out.artifacts.append(artifact)
        if graded is None:
            continue
        for kind, mine, theirs in (
            ("baselines", graded.baselines, out.baselines),
            ("progress row", graded.progress, out.progress),
        ):
            clash = sorted(set(mine) & set(theirs))
            if clash:
                raise DataError(f"verifier {spec.name!r} stores {kind} {clash} twice")
        out.baselines.update(graded.baselines)
        out.progress.update(graded.progress)
        out.files.update(graded.files)
        out.verdicts += graded.verdicts
        for phase, counts in graded.cost.items():
            out.cost[phase] = {**out.cost.get(phase, {}), **counts}
    return out
