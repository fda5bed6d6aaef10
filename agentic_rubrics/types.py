"""The vocabulary: every value that crosses a module boundary is one of these pydantic models.

Read this file first. A ``Task`` holds K ``Candidate`` patches; a ``Rubric`` holds weighted
``RubricItem``s on four axes; judging one candidate gives one ``Verdict`` per item, each naming its
origin (``judged``, ``checked`` or ``missing`` with a reason); scoring turns verdicts into a
``CandidateScore``; reranking picks one ``Selection`` per task.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from typing import Any, Final, Literal, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    field_validator,
    model_serializer,
    model_validator,
)

from agentic_rubrics.reasons import MISSING_REASONS
from agentic_rubrics.surrogates import has_lone_surrogates, replace_lone_surrogates

SCHEMA: Final = "agentic-rubrics/1"
"""Version tag written into every record this library puts on disk."""

Axis = Literal[
    "file_change_rubrics", "spec_alignment_rubrics", "integrity_rubrics", "runtime_rubrics"
]
AXES: Final[tuple[Axis, ...]] = get_args(Axis)

AXIS_RANGES: Final[dict[Axis, tuple[int, int]]] = {
    "file_change_rubrics": (4, 8),
    "spec_alignment_rubrics": (3, 6),
    "integrity_rubrics": (3, 6),
    "runtime_rubrics": (3, 6),
}
"""How many items each axis should have (the paper's ranges); outside them is a lint warning."""

Origin = Literal["judged", "checked", "missing"]
Decision = Literal["accept", "review", "reject", "inconclusive"]

ITEM_ID_RE: Final = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):  # True == 1 in Python; a YAML `true` is not a weight or a value
        raise ValueError(f"expected an integer, got {value!r}")
    return value


# --------------------------------------------------------------------------- tasks


def _text_id(value: str) -> str:
    if has_lone_surrogates(value):
        raise ValueError("must be valid text (it holds bytes that are not UTF-8)")
    return value


class Candidate(BaseModel):
    """One candidate patch for a task. ``resolved`` is an evaluation label: nothing that judges reads it."""

    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1)
    """Unique within the task."""
    source: str | None = None
    """Which agent run produced it (evaluation only: scoring never reads it)."""
    patch: str
    """A unified diff against the task's base commit; empty means the agent produced nothing."""
    resolved: bool | None = None
    """Ground truth from running the hidden tests, when known (evaluation only)."""

    @field_validator("id")
    @classmethod
    def _id_is_text(cls, value: str) -> str:
        return _text_id(value)

    @field_validator("source")
    @classmethod
    def _source_as_text(cls, value: str | None) -> str | None:
        return None if value is None else replace_lone_surrogates(value)


class Task(BaseModel):
    """One issue with its K candidates. Unknown fields (gold patch, tests, hints) are dropped on load."""

    model_config = ConfigDict(extra="ignore")

    instance_id: str = Field(min_length=1)
    """Task identifier, e.g. ``astropy__astropy-12907``."""
    repo: str = ""
    """Repository name, e.g. ``astropy/astropy``."""
    base_commit: str = ""
    """The revision the candidates apply to."""
    version: str = ""
    """The repository's version (SWE-bench's ``version``: which environment its tests need)."""
    problem_statement: str
    """The issue text, as the user wrote it."""
    candidates: list[Candidate] = Field(default_factory=list)
    """The K candidate patches."""
    repo_path: str | None = None
    """A folder holding the repository at ``base_commit``, when one is at hand."""

    @field_validator("instance_id", "repo", "base_commit")
    @classmethod
    def _ids_are_text(cls, value: str) -> str:
        return _text_id(value)

    @field_validator("problem_statement")
    @classmethod
    def _issue_as_text(cls, value: str) -> str:
        # undecodable bytes in prose carry no meaning: U+FFFD, as a decoder with errors="replace" gives
        return replace_lone_surrogates(value)

    def public(self) -> Task:
        """The task as explorers and judges may see it: no labels, no candidate sources."""
        return self.model_copy(
            update={
                "candidates": [
                    c.model_copy(update={"resolved": None, "source": None}) for c in self.candidates
                ]
            }
        )

    @field_validator("candidates")
    @classmethod
    def _unique_ids(cls, value: list[Candidate]) -> list[Candidate]:
        seen: set[str] = set()
        for c in value:
            if c.id in seen:
                raise ValueError(f"duplicate candidate id {c.id!r}")
            seen.add(c.id)
        return value


# --------------------------------------------------------------------------- rubrics


class Check(_Frozen):
    """A deterministic predicate over the parsed diff, written in YAML as ``{name: arg}``.

    ``in`` and ``not_in`` (optional) keep or leave out files matching a glob (or any of a list)
    before the predicate looks at them. The vocabulary and the type of each argument live in
    :mod:`agentic_rubrics.rubric.checks`.
    """

    name: str
    """The predicate, e.g. ``touches``."""
    arg: Any
    """Its argument: a glob, a regex, a symbol, a number or a list of globs (types are checked by
    :func:`agentic_rubrics.rubric.checks.check_problems`, which reports them with the file's line)."""
    path: Any = None
    """``in:``: only files matching this glob (or any of these globs)."""
    exclude: Any = None
    """``not_in:``: leave out files matching this glob (or any of these globs)."""

    @model_validator(mode="before")
    @classmethod
    def _from_mapping(cls, data: Any) -> Any:
        if isinstance(data, dict) and "name" not in data:
            rest = {k: v for k, v in data.items() if k not in ("in", "not_in")}
            if len(rest) != 1:
                raise ValueError(
                    "a check is a mapping with exactly one predicate name (plus optional 'in' and"
                    f" 'not_in'), got keys {sorted(map(str, data))}"
                )
            ((name, arg),) = rest.items()
            return {"name": name, "arg": arg, "path": data.get("in"), "exclude": data.get("not_in")}
        return data

    @model_serializer
    def _to_mapping(self) -> dict[str, Any]:
        out: dict[str, Any] = {self.name: self.arg}
        if self.path is not None:
            out["in"] = self.path
        if self.exclude is not None:
            out["not_in"] = self.exclude
        return out


class RubricItem(_Frozen):
    """One atomic, self-contained criterion."""

    id: str
    """Unique within the rubric, e.g. ``FC1``."""
    description: str = Field(min_length=1)
    """What the patch must do, starting with a third-person verb."""
    weight: Literal[1, 2, 3]
    """1 = nice to have, 2 = important, 3 = must."""
    check: Check | None = None
    """When present, the item is decided by this check and never by a model."""
    gate: bool = False
    """When true, failing this item rejects the candidate whatever its score."""

    _weight_no_bool = field_validator("weight", mode="before")(_no_bool)

    @field_validator("id")
    @classmethod
    def _id_shape(cls, value: str) -> str:
        if not ITEM_ID_RE.fullmatch(value):  # "FC1\n" is not FC1 ($ would let it through)
            raise ValueError(f"item id {value!r} must match {ITEM_ID_RE.pattern}")
        return value


class RubricMetadata(BaseModel):
    """What the rubric is about. Extra keys are kept as annotations."""

    model_config = ConfigDict(extra="allow", frozen=True)

    task_summary: str
    """One or two sentences on what the issue asks for."""
    underlying_bug: str
    """The root cause, as far as exploration found it."""


class Axes(_Frozen):
    """The four axes of the paper; an unknown axis is an error."""

    file_change_rubrics: list[RubricItem] = Field(default_factory=list)
    """Scope, locality, minimal diff (4-8 items)."""
    spec_alignment_rubrics: list[RubricItem] = Field(default_factory=list)
    """Issue requirements and API contracts (3-6 items)."""
    integrity_rubrics: list[RubricItem] = Field(default_factory=list)
    """No test weakening, no broad refactors, no new dependencies (3-6 items)."""
    runtime_rubrics: list[RubricItem] = Field(default_factory=list)
    """Behaviour inferred statically, regression safety, determinism (3-6 items)."""


class Rubric(_Frozen):
    """A whole rubrics.yaml."""

    metadata: RubricMetadata
    """Summary of the task and its root cause."""
    axes: Axes
    """The weighted items, by axis."""

    @model_validator(mode="after")
    def _unique_item_ids(self) -> Rubric:
        seen: set[str] = set()
        for _, item in self.items():
            if item.id in seen:
                raise ValueError(f"duplicate item id {item.id!r}")
            seen.add(item.id)
        return self

    def items(self) -> Iterator[tuple[Axis, RubricItem]]:
        """Every item with its axis, in file order."""
        for axis in AXES:
            for item in getattr(self.axes, axis):
                yield axis, item

    def item(self, item_id: str) -> RubricItem:
        """The item with this id (KeyError if none)."""
        for _, item in self.items():
            if item.id == item_id:
                return item
        raise KeyError(item_id)

    def content_hash(self) -> str:
        """sha256 of the canonical JSON form: the same rubric always hashes the same."""
        blob = json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


# --------------------------------------------------------------------------- verdicts and scores


class Verdict(_Frozen):
    """One item's verdict for one candidate: a row of verdicts.jsonl."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    schema_: str = Field(default=SCHEMA, alias="schema")
    """Record version."""
    instance_id: str
    """The task."""
    candidate_id: str
    """The candidate within the task."""
    item_id: str
    """The rubric item."""
    axis: Axis
    """The item's axis."""
    weight: Literal[1, 2, 3]
    """The item's weight."""
    origin: Origin
    """``judged`` (a model said 0/1), ``checked`` (the item's check decided) or ``missing``."""
    value: Literal[0, 1] | None
    """The verdict; ``None`` exactly when the origin is ``missing``."""
    reason: str | None = None
    """Why the verdict is missing (a code of ``MISSING_REASONS``), or a short code for the others."""
    repeat: int = Field(default=0, ge=0)
    """Which repeated judgement this is (0 for checks and single runs)."""
    detail: str | None = Field(default=None, pattern=r"^[a-z_]{1,40}$")
    """A code saying more about a missing reason (``check_error``: a key of ``CHECK_ERROR_DETAILS``;
    ``no_repository``: a repository error's reason such as ``fetch_failed``), or how an ``applies``
    item's patch applied (``git_apply``, ``patch_fuzz``, ``failed``, ``empty``); never text."""

    _no_bool = field_validator("weight", "value", mode="before")(_no_bool)

    @model_validator(mode="after")
    def _provenance(self) -> Verdict:
        if self.origin == "missing":
            if self.value is not None:
                raise ValueError("a missing verdict has value null")
            if self.reason not in MISSING_REASONS:
                raise ValueError(
                    f"a missing verdict needs a reason among {sorted(MISSING_REASONS)},"
                    f" got {self.reason!r}"
                )
        elif self.value is None:
            raise ValueError(f"a {self.origin} verdict needs value 0 or 1")
        return self

    def to_row(self) -> dict[str, Any]:
        """The JSON row written to verdicts.jsonl (``detail`` only when there is one)."""
        row = self.model_dump(mode="json", by_alias=True)
        if row["detail"] is None:
            del row["detail"]
        return row


class CandidateScore(_Frozen):
    """S, its coverage and the decision for one candidate."""

    instance_id: str
    """The task."""
    candidate_id: str
    """The candidate."""
    score: float | None
    """S = sum(w*s)/sum(w) over items with a verdict; ``None`` when no item has one."""
    axis_scores: dict[Axis, float | None]
    """S restricted to each axis (``None`` where the axis has no verdict)."""
    weight_total: int
    """Sum of the weights of all rubric items."""
    weight_scored: int
    """Sum of the weights of items that have a verdict."""
    items_total: int
    """Number of rubric items."""
    items_scored: int
    """Number of items that have a verdict."""
    missing: dict[str, int]
    """Count of missing verdicts by reason."""
    decision: Decision
    """``accept``, ``review``, ``reject`` or ``inconclusive``."""
    reasons: list[str]
    """Reason codes behind the decision, e.g. ``gate_failed:IN1`` or ``low_coverage``."""
    empty_patch: bool
    """The candidate's patch is empty."""
    no_behaviour_change: bool = False
    """It changes no behaviour of the program (verdicts say so): it cannot be the fix."""
    tampers_with_tests: bool = False
    """It changes the test infrastructure (verdicts say so): it ranks with the failed gates."""
    failed_gates: list[str]
    """Ids of gate items judged or checked 0."""
    rank_tier: int
    """Ranking tier: 0 empty patch or no behaviour change, 1 no verdict at all, 2 failed gate or
    test infrastructure changed, 3 inconclusive, 4 scored."""

    @property
    def coverage_weight(self) -> float | None:
        """Share of rubric weight that has a verdict (``None`` for an empty rubric)."""
        return self.weight_scored / self.weight_total if self.weight_total else None

    @property
    def coverage_items(self) -> float | None:
        """Share of rubric items that have a verdict (``None`` for an empty rubric)."""
        return self.items_scored / self.items_total if self.items_total else None

    @property
    def rank_value(self) -> float:
        """One number that orders candidates as the ranking rule does: by tier, then by S."""
        return 2.0 * self.rank_tier + (self.score if self.score is not None else 0.0)


class Selection(_Frozen):
    """The candidate a selector picked for one task."""

    instance_id: str
    """The task."""
    selector: str
    """Which selector picked it (``rubric``, ``random``, ``self_consistency``, ``offline`` ...)."""
    candidate_id: str | None
    """The pick; ``None`` when the task has no candidate."""
    score: float | None
    """The selector's ranking value for the pick."""
    tied: int
    """How many candidates shared the top ranking value (1 = no tie)."""
    pool_size: int
    """K, the number of candidates ranked."""
