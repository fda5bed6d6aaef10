"""The records that cross the pipeline's boundaries: what one task's work produced.

An executor (this process, or a Ray worker) computes a :class:`TaskRecord` per task without touching the
run folder and hands it back; the driver (:mod:`agentic_rubrics.pipeline.driver`) stores it. A record is plain
data: it pickles to a Ray driver, and its parts are written as today's files of the run folder —
``rubrics/<id>/rubrics.yaml`` and ``status.json``, ``trajectories/<id>.json``, the other verifiers'
artifacts (``tests/<id>/``), then the rows of
``patches.jsonl``, ``verdicts.jsonl`` and the ``progress.jsonl`` row that commits them.
``agentic-rubrics schema --run-folder`` prints :func:`run_folder_schema`.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr

from agentic_rubrics.runfolder.folder import safe_name
from agentic_rubrics.runfolder.rows import PatchRow, ProgressRow, RubricStatus, ScoreRow, Trajectory
from agentic_rubrics.runfolder.verifier_rows import ArtifactStatus, TestRunRow
from agentic_rubrics.types import SCHEMA, Rubric, Verdict

RUN_FOLDER_SCHEMA = SCHEMA
"""The version of every record of a run folder (each row's ``schema``)."""


class RubricRecord(BaseModel):
    """A task's rubric (as written to rubrics.yaml), its status, and the exploration trajectory."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    """The task."""
    rubric_yaml: str | None
    """The rubric as written to ``rubrics.yaml``; ``None`` when exploring failed."""
    status: RubricStatus
    """``status.json``: ``status`` (ok / failed), ``reason``, ``source``, ``hash``, item counts, the
    repository's record, grounding, seconds."""
    trajectory: Trajectory | None = None
    """``trajectories/<id>.json`` (redacted), when trajectories are kept."""
    fresh: bool = True
    """False: it was already in the run folder (nothing to write)."""
    _parsed: Rubric | None = PrivateAttr(default=None)

    def with_parsed(self, rubric: Rubric | None) -> RubricRecord:
        """This record, remembering ``rubric_yaml`` parsed (explorers parse what they write)."""
        self._parsed = rubric
        return self

    @property
    def parsed(self) -> Rubric | None:
        """``rubric_yaml`` parsed, once it was (by the explorer, or on first use of :attr:`rubric`)."""
        return self._parsed

    @property
    def rubric(self) -> Rubric | None:
        """The rubric, parsed from the text written (what the report will read), once per task."""
        from agentic_rubrics.rubric.file import parse_rubric

        if self.rubric_yaml is None:
            return None
        if self._parsed is None:
            path = f"rubrics/{safe_name(self.instance_id)}/rubrics.yaml"
            self._parsed, _ = parse_rubric(self.rubric_yaml, path)
        return self._parsed


class ArtifactRecord(BaseModel):
    """A verifier's artifact for one task (other than the rubric): its files and its status."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    """The task."""
    verifier: str
    """Which verifier (``tests``)."""
    folder: str
    """Its folder in the run folder (``tests``): the files go to ``<folder>/<safe id>/``."""
    files: dict[str, str] = Field(default_factory=dict)
    """File name -> text (``test_issue.py`` ...); none when it failed."""
    status: ArtifactStatus
    """``status.json``, written last: the artifact is done."""
    trajectory: Trajectory | None = None
    """Its writer's trajectory (``<folder>/<safe id>/trajectory.json``), when trajectories are kept."""
    fresh: bool = True
    """False: it was already in the run folder (nothing to write)."""


class TaskRecord(BaseModel):
    """Everything one finished task adds to the run folder (explored only, or explored and judged)."""

    model_config = ConfigDict(extra="forbid")

    instance_id: str
    """The task."""
    rubric: RubricRecord
    """Its rubric and exploring status."""
    judged: bool
    """False: the ``explore`` stage alone ran (no verdicts, no progress row)."""
    verdict_rows: list[Verdict] = Field(default_factory=list)
    """``verdicts.jsonl`` rows: one per item, candidate and repeat."""
    progress: ProgressRow | None = None
    """The ``progress.jsonl`` row that marks the task done: the inputs it was scored on (as hashes),
    rubric status, each selector's features (``baselines``), cost by phase, seconds."""
    patches: list[dict[str, Any]] | None = None
    """``patches.jsonl`` rows (:class:`PatchRow`): the patches scored (what selections.jsonl submits)."""
    artifacts: list[ArtifactRecord] = Field(default_factory=list)
    """The other verifiers' artifacts (``tests/<id>/`` ...)."""
    graded_files: dict[str, str] = Field(default_factory=dict)
    """Run-folder-relative path -> text of what grading wrote (``tests/<id>/outcomes.jsonl``),
    written before the progress row."""
    calls: int = 0
    """Model calls this task sent (for progress reports)."""
    usd: float = 0.0
    """Known dollars this task spent (for progress reports)."""

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
