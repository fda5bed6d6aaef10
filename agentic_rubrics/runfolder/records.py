"""The records that cross the pipeline's boundaries: what one task's work produced.

An executor (this process, or a Ray worker) computes a :class:`TaskRecord` per task without touching the
run folder and hands it back; the driver (:mod:`agentic_rubrics.pipeline.driver`) stores it. A record is
plain data: it pickles to a Ray driver, and its parts are written as the run folder's files — each
verifier's artifact (:class:`ArtifactRecord`: ``rubrics/<id>/rubrics.yaml``, ``tests/<id>/…``, its
trajectory, then its ``status.json``), then the rows of ``patches.jsonl``, ``verdicts.jsonl`` and the
``progress.jsonl`` row that commits them. ``agentic-rubrics schema --run-folder`` prints
:func:`run_folder_schema`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.runfolder.rows import PatchRow, ProgressRow, RubricStatus, ScoreRow, Trajectory
from agentic_rubrics.runfolder.verifier_rows import ArtifactStatus, TestRunRow
from agentic_rubrics.types import SCHEMA, Verdict

RUN_FOLDER_SCHEMA = SCHEMA
"""The version of every record of a run folder (each row's ``schema``)."""


class ArtifactRecord(BaseModel):
    """One verifier's artifact for one task (the rubric's ``rubrics.yaml``, a test script, a proxy
    patch): its files and its status (``status.json``, written last: the artifact is done)."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    """The task."""
    verifier: str
    """Which verifier (``rubric``, ``tests`` ...)."""
    folder: str
    """Its folder in the run folder (``rubrics``, ``tests``): the files go to ``<folder>/<safe id>/``."""
    files: dict[str, str] = Field(default_factory=dict)
    """File name -> text (``rubrics.yaml``, ``test_issue.py`` ...); none when it failed."""
    status: RubricStatus | ArtifactStatus
    """``status.json``, written last: the artifact is done (the rubric's has a shape of its own)."""
    trajectory: Trajectory | None = None
    """Its writer's trajectory (redacted), when trajectories are kept."""
    trajectory_file: str | None = None
    """Where the trajectory goes, relative to the run folder (the rubric's:
    ``trajectories/<safe id>.json``; the others': ``<folder>/<safe id>/trajectory.json``)."""
    fresh: bool = True
    """False: it was already in the run folder (nothing to write)."""

    @property
    def ok(self) -> bool:
        """Whether the artifact was written (its status is ``ok``)."""
        return self.status.status == "ok"


class TaskRecord(BaseModel):
    """Everything one finished task adds to the run folder (explored only, or explored and judged)."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    """The task."""
    judged: bool
    """False: the ``explore`` stage alone ran (no verdicts, no progress row)."""
    artifacts: list[ArtifactRecord] = Field(default_factory=list)
    """Every verifier's artifact, the rubric's included, in the run's order of verifiers."""
    verdict_rows: list[Verdict] = Field(default_factory=list)
    """``verdicts.jsonl`` rows: one per item, candidate and repeat."""
    progress: ProgressRow | None = None
    """The ``progress.jsonl`` row that marks the task done: the inputs it was scored on (as hashes),
    rubric status, each selector's features (``baselines``), cost by phase, seconds."""
    patches: list[dict[str, Any]] | None = None
    """``patches.jsonl`` rows (:class:`PatchRow`): the patches scored (what selections.jsonl submits)."""
    graded_files: dict[str, str] = Field(default_factory=dict)
    """Run-folder-relative path -> text of what grading wrote (``tests/<id>/outcomes.jsonl``),
    written before the progress row."""
    calls: int = 0
    """Model calls this task sent (for progress reports)."""
    usd: float = 0.0
    """Known dollars this task spent (for progress reports)."""

    def artifact(self, verifier: str) -> ArtifactRecord | None:
        """The artifact of ``verifier`` (``None``: that verifier is not in the run)."""
        return next((a for a in self.artifacts if a.verifier == verifier), None)

    @property
    def missing(self) -> int:
        """Verdict rows without a verdict."""
        return sum(1 for v in self.verdict_rows if v.origin == "missing")


def run_folder_schema() -> dict[str, Any]:
    """The JSON schema of a finished task's record and of the run folder's rows, with its version."""
    return {
        "version": RUN_FOLDER_SCHEMA,
        "task_record": TaskRecord.model_json_schema(),
        "progress_row": ProgressRow.model_json_schema(by_alias=True),
        "rubric_status": RubricStatus.model_json_schema(by_alias=True),
        "patch_row": PatchRow.model_json_schema(by_alias=True),
        "trajectory": Trajectory.model_json_schema(by_alias=True),
        "score_row": ScoreRow.model_json_schema(by_alias=True),
        "artifact_status": ArtifactStatus.model_json_schema(by_alias=True),
        "test_run_row": TestRunRow.model_json_schema(by_alias=True),
    }
