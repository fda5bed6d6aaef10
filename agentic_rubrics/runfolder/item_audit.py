"""Rubric items over their pools, typed: ``audit_items.json`` and report.json's non-discriminating counts.

An item is *non-discriminating* in a task when every candidate with a verdict for it got the same
value (it passes for all, or fails for all): it moves every S of the pool alike and tells the ranking
nothing. Defined when at least two candidates have a verdict. :mod:`agentic_rubrics.report.item_stats`
computes these records; ``agentic-rubrics audit-items RUN`` writes :class:`ItemAuditFile`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.runfolder.rates import Rate
from agentic_rubrics.runfolder.view import JsonView
from agentic_rubrics.types import SCHEMA

ITEM_AUDIT_FILE = "audit_items.json"
"""The item audit's file in the run folder."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TaskNonDiscriminating(_Part):
    """report.json's ``tasks[].non_discriminating``: one task's items that carry no signal."""

    count: int
    """Items that pass for all or fail for all (of ``of``)."""
    of: int
    """Items with a verdict from at least two candidates (where it is defined)."""
    passes_for_all: list[str]
    """The ids of those that pass for every candidate with a verdict, in rubric order."""
    fails_for_all: list[str]
    """The ids of those that fail for every candidate with a verdict, in rubric order."""


class NonDiscriminating(_Part):
    """report.json's ``rubrics.non_discriminating``: over every task."""

    items: Rate
    """Non-discriminating items of the items with a verdict from at least two candidates."""
    passes_for_all: int
    """Of those, items that pass for all."""
    fails_for_all: int
    """Of those, items that fail for all."""
    tasks_with_any: int
    """Tasks with at least one."""


class ItemAudit(_Part):
    """One rubric item over its task's pool (each candidate's verdict as S counts it: the majority
    over repeats, a split vote missing)."""

    id: str
    """The item's id."""
    axis: str
    """Its axis."""
    weight: int
    """Its weight."""
    kind: Literal["checked", "judged"]
    """``checked``: decided by its check; ``judged``: by the judge."""
    check: str | None
    """The check's name (``touches``, ``applies`` …), ``None`` for a judged item."""
    gate: bool
    """Whether failing it rejects the candidate."""
    compound: str | None
    """How its description joins two requirements (the compound-item lint), ``None``: one."""
    description: str
    """Its text, as the rubric has it."""
    passed: int
    """Candidates with verdict 1."""
    failed: int
    """Candidates with verdict 0."""
    missing: int
    """Candidates without a verdict."""
    missing_by_reason: dict[str, int]
    """Those by reason (``no_verdict_row``: no row at all)."""
    pass_rate: Rate
    """``passed`` of the candidates with a verdict."""
    non_discriminating: bool | None
    """Every candidate with a verdict got the same value (``None``: fewer than two have one)."""
    constant: Literal["pass", "fail"] | None
    """A non-discriminating item: whether it passes or fails for all."""
    resolved: Rate
    """Its pass rate among the resolved candidates with a verdict."""
    unresolved: Rate
    """Its pass rate among the unresolved candidates with a verdict."""
    difference: float | None
    """``resolved`` minus ``unresolved`` (``None``: either is undefined)."""
    roc_auc: float | None
    """ROC-AUC of the verdict (0/1) for the label over the labelled candidates with a verdict
    (ties count half: ``0.5 + difference / 2``); ``None`` without both a resolved and an unresolved
    one."""


class TaskItems(_Part):
    """One task's items."""

    instance_id: str
    """The task."""
    candidates: int
    """Its pool."""
    labelled: int
    """Labelled candidates."""
    resolved: int
    """Resolved candidates."""
    rubric: str
    """``ok``, or why it has no rubric (then no items)."""
    items: list[ItemAudit]
    """Its rubric's items, in rubric order."""


class ItemGroup(_Part):
    """Items of one axis, one kind, or all."""

    items: int
    """Items."""
    defined: int
    """Items with a verdict from at least two candidates."""
    non_discriminating: Rate
    """Non-discriminating items of ``defined``."""
    passes_for_all: int
    """Of those, items that pass for all."""
    fails_for_all: int
    """Of those, items that fail for all."""


class UnresolvedPasses(_Part):
    """Items with one description (on one axis, of one kind) across tasks: how often they pass for
    unresolved candidates, beside resolved ones."""

    description: str
    """The items' text."""
    axis: str
    """Their axis."""
    kind: str
    """``checked`` or ``judged``."""
    items: list[str]
    """``instance_id/item_id`` of each."""
    unresolved: Rate
    """Verdicts 1 of the unresolved candidates with a verdict."""
    resolved: Rate
    """Verdicts 1 of the resolved candidates with a verdict."""


class ItemSummary(_Part):
    """The run's items at a glance."""

    tasks: int
    """Finished tasks."""
    tasks_with_rubric: int
    """Of those, tasks with a rubric."""
    tasks_with_non_discriminating: int
    """Tasks with at least one non-discriminating item."""
    compound_items: int
    """Items the compound-item lint flags."""
    overall: ItemGroup
    """Every item."""
    by_axis: dict[str, ItemGroup]
    """By axis."""
    by_kind: dict[str, ItemGroup]
    """By kind: ``checked``, ``judged``."""
    unresolved_passes: list[UnresolvedPasses]
    """The items that most often pass for unresolved candidates (by count, then rate)."""


class ItemAuditFile(JsonView, _Part):
    """``audit_items.json``."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The record's version."""
    config_hash: str
    """The run's configuration hash."""
    report_sha256: str
    """sha256 of the report.json it read (labels are the report's: a new report, a new audit)."""
    labels: str
    """Where the report's labels came from."""
    summary: ItemSummary
    """The run-level figures."""
    tasks: list[TaskItems]
    """Each finished task's items."""

    def to_json(self) -> dict[str, Any]:
        """The file's content."""
        return self.model_dump(mode="json", by_alias=True)
