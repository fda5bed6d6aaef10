"""The rubric verifier: a ``rubrics.yaml`` per task (:mod:`.rubric_writing`: reused from ``--rubrics DIR``
or written by the run's explorer), every candidate judged item by item against it
(:mod:`.rubric_judging`), S computed from the verdicts at report time (the ``rubric`` selector).

Its artifact is ``rubrics/<id>/rubrics.yaml`` with ``status.json`` written last (a
:class:`~agentic_rubrics.runfolder.rows.RubricStatus`); its grades are the task's verdict rows.
"""

from __future__ import annotations

from typing import Annotated

from agentic_rubrics.exceptions import RubricError
from agentic_rubrics.pipeline.verifiers import (
    BUILTIN,
    Graded,
    TaskScope,
    VerifierSettings,
)
from agentic_rubrics.pipeline.verifiers.artifacts import earlier_artifact
from agentic_rubrics.pipeline.verifiers.rubric_judging import grade_with_rubric
from agentic_rubrics.pipeline.verifiers.rubric_writing import RUBRIC_FILE, write_rubric
from agentic_rubrics.rubric.file import parse_rubric
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.names import safe_name
from agentic_rubrics.runfolder.records import ArtifactRecord
from agentic_rubrics.runfolder.rows import RubricStatus
from agentic_rubrics.setting_effects import Effect
from agentic_rubrics.types import Rubric

SPEC = BUILTIN["rubric"]


class RubricSettings(VerifierSettings):
    """The rubric verifier's settings (its explorer and judge are the run's: ``explorer``, ``judge``)."""

    rubrics_dir: Annotated[str | None, Effect("results", cli=True)] = None
    """Reuse ``DIR/<instance_id>/rubrics.yaml`` instead of exploring."""

    def given(self) -> str | None:
        return self.rubrics_dir


def parsed(artifact: ArtifactRecord) -> Rubric | None:
    """The artifact's rubric as the report reads it back (``None``: it failed).

    Raises:
        RubricError: its text does not load (an earlier one is checked when it is read back).
    """
    text = artifact.files.get(RUBRIC_FILE)
    if artifact.status.status != "ok" or text is None:
        return None
    rubric, _ = parse_rubric(text, f"rubrics/{safe_name(artifact.instance_id)}/{RUBRIC_FILE}")
    return rubric


def _loads(files: dict[str, str], status: RubricStatus) -> str | None:
    """What is wrong with an earlier rubric: it no longer loads (an edit by hand)."""
    if status.status != "ok":
        return None
    try:
        parse_rubric(files[RUBRIC_FILE], RUBRIC_FILE)
    except RubricError as exc:
        return f"{RUBRIC_FILE} no longer loads ({len(exc.problems)} problems)"
    return None


class RubricVerifier:
    """See the module's docstring."""

    name = SPEC.name

    def earlier(self, folder: RunFolder, instance_id: str) -> ArtifactRecord | None:
        return earlier_artifact(
            folder,
            SPEC,
            instance_id,
            row=RubricStatus,
            names=lambda status: [RUBRIC_FILE] if status.status == "ok" else [],
            allowed=lambda name: name == RUBRIC_FILE,
            check=_loads,
        )

    async def run(
        self, scope: TaskScope, earlier: ArtifactRecord | None, *, grade: bool
    ) -> tuple[ArtifactRecord, Graded | None]:
        given = scope.ctx.config.section(SPEC.name, RubricSettings).given()
        if earlier is not None:
            artifact, rubric = earlier, parsed(earlier)
        else:
            artifact, rubric = await write_rubric(scope.task, scope.ctx, SPEC, given)
        if not grade:
            return artifact, None
        assert isinstance(artifact.status, RubricStatus)  # the rubric's own status
        return artifact, await grade_with_rubric(scope, rubric, artifact.status, given is not None)
