"""The run folder's rows, typed: what ``progress.jsonl``, ``rubrics/<id>/status.json`` and
``trajectories/<id>.json`` hold, as the pipeline writes them and the report reads them.

Each row carries the run folder's version (``schema``). A row read from disk is validated once, where
it is read (:class:`~agentic_rubrics.runfolder.folder.RunFolder`); a row that is not of this shape is an error
naming the file, the line and the field. Rows are written with the keys that were set, so the files
keep the shape they had before these models existed (a key absent from an older row takes its default).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_serializer

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.types import SCHEMA

Row = TypeVar("Row", bound=BaseModel)
RubricOutcome = Literal["ok", "failed"]


class RowBase(BaseModel):
    """What every run-folder row shares: frozen, no unknown key, written with the keys that were set."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    def to_json(self) -> dict[str, Any]:
        """The row as written: JSON values, the keys that were set (``schema`` always)."""
        out = self.model_dump(mode="json", by_alias=True, exclude_unset=True)
        version = getattr(self, "schema_", None)  # the rows that carry the folder's version
        if version is not None:
            out["schema"] = version
        return out


class Grounding(BaseModel):
    """How far a rubric is grounded (:mod:`agentic_rubrics.grounding`): counts only, never paths."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    grounded_items: int | None = None
    """Items whose check names a file of the repository (with a repository at hand)."""
    named_paths: int | None = None
    """Distinct exact file paths the rubric's checks name (with a repository at hand)."""
    named_paths_missing: int | None = None
    """Of those, paths that are not files of the repository."""
    leads: dict[str, int] | None = None
    """The static explorer's leads, by kind."""
    unmatched: dict[str, int] | None = None
    """Of those, leads that found nothing, by kind."""

    @model_serializer
    def _present(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


class RubricStatus(RowBase):
    """``rubrics/<id>/status.json``: how a task's rubric came to be (written after the rubric: its
    presence marks the task explored)."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    instance_id: str
    """The task."""
    base_commit: str = ""
    """The commit the rubric was written against."""
    problem_hash: str | None = None
    """sha256 of the issue text the rubric was written from."""
    source: str
    """``explorer:<name>`` or ``reused`` (``--rubrics DIR``)."""
    status: RubricOutcome
    """``ok``, or ``failed`` with a reason."""
    reason: str | None = None
    """Why it failed (``no_repository:<why>``, ``sandbox_error:<type>``, ``invalid_rubric`` ...)."""
    problems: int | None = None
    """Validation problems of an invalid rubric."""
    hash: str | None = None
    """The rubric's content hash (when ok)."""
    items: int | None = None
    """Rubric items (when ok)."""
    checked_items: int | None = None
    """Items decided by a check (when ok)."""
    lint_warnings: int | None = None
    """Lint warnings of the rubric as written (when ok)."""
    compound_items: list[str] | None = None
    """The ids of its compound items, each also a lint warning (when ok; ``None`` in a status
    written before they were counted)."""
    repository: dict[str, Any] | None = None
    """The repository tree's record (:meth:`agentic_rubrics.repos.RepoTree.record`): source, cache hit
    or fetch, times; no local path, no credentials."""
    grounding: Grounding | None = None
    """How grounded the rubric is (explored rubrics)."""
    turns: int | None = None
    """Turns a model explorer used (failed or not)."""
    last_validation_error: str | None = None
    """A failed model explorer: the validator's last error on its file (see ``Step.validation``),
    ``None`` when it never validated one."""
    seconds: float = 0.0
    """Wall time spent obtaining it."""


class RubricSummary(RowBase):
    """The rubric part of a progress row."""

    status: RubricOutcome
    """``ok`` or ``failed``."""
    reason: str | None = None
    """Why it failed."""
    hash: str | None = None
    """The content hash of the rubric the task was judged with."""
    source: str | None = None
    """``explorer:<name>`` or ``reused``."""
    items: int | None = None
    """Rubric items."""
    repository: str = "none"
    """Where the explorer's tree came from: ``fetched``, ``cache``, ``repo_path`` or ``none``."""
    grounding: Grounding | None = None
    """How grounded the rubric is."""
    turns: int | None = None
    """Turns a model explorer used (failed or not)."""
    last_validation_error: str | None = None
    """A failed model explorer: the validator's last error on its file (redacted)."""


class CandidateInput(RowBase):
    """One candidate as a progress row records it: hashes and the label, never the patch."""

    id: str
    """The candidate."""
    sha256: str | None = None
    """sha256 of the exact patch bytes (rows of older runs: absent, ``patch_hash`` is compared)."""
    patch_hash: str
    """Hash of the normalised patch (what identical patches share)."""
    empty: bool
    """The patch is empty."""
    resolved: bool | None = None
    """The label the tasks file gave (evaluation only: labels are read at report time)."""


PhaseCost = dict[str, int | float]
"""A phase's counts: ``calls``, ``usd``, ``prompt_tokens``, ``completion_tokens``, ``cached_calls`` ..."""


class ProgressRow(RowBase):
    """A row of ``progress.jsonl``: the task is finished; its verdict and patch rows are committed."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    instance_id: str
    """The task."""
    repo: str = ""
    """The task's repository name."""
    problem_hash: str | None = None
    """sha256 of the issue text it was scored on."""
    base_commit: str = ""
    """The base commit it was scored on."""
    candidates: list[CandidateInput]
    """Each candidate's patch hashes and label, in the task's order."""
    explorer: str
    """The explorer kind, or ``reused``."""
    judge: str
    """The judge's name (``checks`` or ``llm``)."""
    repeats: int = Field(default=1, ge=1)
    """Judgements per item."""
    rubric: RubricSummary
    """The rubric it was judged with, and its status."""
    baselines: dict[str, Any] = Field(default_factory=dict)
    """Each selector's features (JSON, by its key); ``similarity``: measure, line cap, capped count."""
    verdict_rows: int = Field(default=0, ge=0)
    """How many verdict rows the task wrote."""
    verdicts_digest: str | None = None
    """``sha256:`` of those rows as written (``runfolder.digests.rows_digest``): the report says when
    the rows on disk no longer match (a hand edit). ``None`` in folders written before it was
    recorded."""
    verdicts_changed: bool = False
    """A resume that retried the task's transient gaps kept rows that no longer gave the digest of the
    attempt that wrote them: the report names the task whatever ``verdicts_digest`` (of the rows as
    kept) says now. Written only when true."""
    judge_generated_candidates: int = Field(default=0, ge=0)
    """Candidates the judge model itself produced (a warning: it may favour its own output)."""
    cost: dict[str, PhaseCost] = Field(default_factory=dict)
    """The task's model use by phase (over every attempt)."""
    seconds: float = 0.0
    """Wall time of its last attempt."""

    def candidate(self, candidate_id: str) -> CandidateInput:
        """The recorded candidate with this id (KeyError if none)."""
        for c in self.candidates:
            if c.id == candidate_id:
                return c
        raise KeyError(candidate_id)


class PatchRow(RowBase):
    """A row of ``patches.jsonl``: one candidate's exact patch as it was scored (selections are
    written from it)."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    instance_id: str
    """The task."""
    candidate_id: str
    """The candidate."""
    sha256: str
    """``sha256:`` of the patch's exact UTF-8 bytes, as the task's progress row records it."""
    patch: str
    """The patch."""


class Step(RowBase):
    """One step of an exploration trajectory; which keys are present depends on the explorer."""

    tool: str | None = None
    """The tool called (``None``: the agent's reply named none)."""
    argument: str | None = None
    """Its argument (redacted)."""
    turn: int | None = None
    """The agent's turn (model explorers)."""
    thought: str | None = None
    """What the agent said before acting."""
    native: bool | None = None
    """A native tool call (not a text action)."""
    valid: bool | None = None
    """The written rubric validated (issue-only explorer)."""
    error: str | None = None
    """``format``: the reply was not a well-formed action."""
    validation: str | None = None
    """A validate or submit that found the file invalid: the validator's first error (file, line,
    field and what was expected; redacted, at most 300 characters)."""
    submitted: bool | None = None
    """This step submitted the rubric."""
    prompt_tokens: int | None = None
    """Input tokens of the turn's call."""
    completion_tokens: int | None = None
    """Output tokens of the turn's call."""
    cost_usd: float | None = None
    """The call's dollar cost (``None``: unknown)."""
    cached: bool | None = None
    """The reply came from the response cache."""
    context_estimate: int | None = None
    """Tokens of the conversation after the turn."""
    elided_outputs: int | None = None
    """Tool outputs elided so far to fit the context window."""
    dropped_turns: int | None = None
    """Turns dropped so far to fit the context window."""
    exit_code: int | None = None
    """The command's exit status (``None``: timed out or killed)."""
    timed_out: bool | None = None
    """The command ran past its timeout."""
    truncated: bool | None = None
    """Its output was cut."""
    output_chars: int | None = None
    """Characters of its output (static explorer)."""
    observation_chars: int | None = None
    """Characters of what the agent was shown."""
    observation: str | None = None
    """The first 2,000 characters of it (redacted)."""
    messages: list[dict[str, Any]] | None = None
    """Model explorers: the step's messages, whole and redacted (docs/training-data.md has their order)."""
    tools: list[dict[str, Any]] | None = None
    """The tool definitions sent with every request (the first step of a native-tool-call agent)."""


class Trajectory(RowBase):
    """``trajectories/<id>.json``: what the explorer did for one task (redacted; never read by judges)."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    instance_id: str
    """The task."""
    explorer: str
    """The explorer's name."""
    model: str | None = None
    """The explorer's model (``None``: no model)."""
    sandbox: str | None = None
    """The sandbox kind it explored in (``None``: none)."""
    status: RubricOutcome
    """The rubric's outcome."""
    reason: str | None = None
    """Why it failed."""
    turns: int = 0
    """Steps taken."""
    cost: PhaseCost = Field(default_factory=dict)
    """The exploring phase's model use."""
    steps: list[Step] = Field(default_factory=list)
    """The steps, in order."""


def field_error(exc: ValidationError) -> str:
    """The first error of a validation, as ``field.path[i]: message``."""
    err = exc.errors(include_url=False)[0]
    loc = ".".join(str(p) if isinstance(p, str) else f"[{p}]" for p in err["loc"])
    return f"{loc.replace('.[', '[') or 'row'}: {err['msg']}"


def read_row(model: type[Row], record: dict[str, Any], where: str) -> Row:
    """One run-folder row validated as ``model``; ``where`` (file, or file:line) names it in errors.

    Raises:
        DataError: a row of another run-folder version, or of the wrong shape (the field and why).
    """
    version = record.get("schema", SCHEMA)
    if version != SCHEMA:
        raise DataError(
            f"{where}: a run folder of version {version!r}; this version of agentic-rubrics reads"
            f" {SCHEMA!r} (see `agentic-rubrics schema --run-folder`): report it with the version that"
            " wrote it, or run again into a new folder"
        )
    try:
        return model.model_validate(record)
    except ValidationError as exc:
        raise DataError(f"{where}: {field_error(exc)}") from exc


class ScoreRow(RowBase):
    """A row of ``scores.jsonl``: one candidate as the report scored and ranked it (keys added later
    have defaults: an older file still reads)."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    instance_id: str
    """The task."""
    candidate_id: str
    """The candidate."""
    rubric_hash: str | None
    """The rubric's content hash (``None``: the task has no rubric)."""
    judge: str
    """The judge that gave the verdicts."""
    score: float | None
    """S over the items with a verdict (``None``: no verdict, no rubric, or an empty patch)."""
    axis_scores: dict[str, float | None]
    """S per axis."""
    coverage_weight: float | None
    """Share of the rubric's weight with a verdict."""
    coverage_items: float | None
    """Share of its items with a verdict."""
    missing: dict[str, int]
    """Missing verdicts by reason."""
    decision: str
    """``accept``, ``review``, ``reject`` or ``inconclusive``."""
    reasons: list[str]
    """The decision's reason codes."""
    rank_tier: int = Field(ge=0, le=4)
    """The rubric's tier: 0 empty patch, 1 no verdict, 2 failed gate, 3 inconclusive, 4 scored; its
    ranking value is ``2 * rank_tier + S`` (S as 0 when absent): tier first, then S within it."""
    resolved: bool | None = None
    """The candidate's label (``None``: unlabelled)."""
    ranking: dict[str, float | None] = Field(default_factory=dict)
    """Each selector's ranking value (higher is better, ``None`` lowest): what picks and Best@K use."""
    values: dict[str, float | None] = Field(default_factory=dict)
    """Each selector's value ROC-AUC and PR-AUC rest on (``rubric``: S itself, not its tiered rank)."""
    selected_by: list[str] = Field(default_factory=list)
    """The selectors that picked this candidate."""
