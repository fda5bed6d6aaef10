"""From verdicts to a candidate's score S, its coverage, and a decision.

``S = sum(w_i * s_i) / sum(w_i)`` over the items **that have a verdict** (origin ``judged`` or
``checked``). Missing verdicts are excluded, never counted as 0; how much is missing is reported as
coverage beside S. Decisions come from a :class:`DecisionPolicy`, not from constants in code.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.reasons import NO_BEHAVIOUR_CHANGE, TAMPERS_WITH_TESTS
from agentic_rubrics.types import (
    AXES,
    Axis,
    CandidateScore,
    Decision,
    Rubric,
    RubricItem,
    Verdict,
)

TIER_EMPTY_PATCH = 0
"""An empty patch, or one that changes no behaviour: it cannot be the fix."""
TIER_NO_VERDICT = 1
TIER_FAILED_GATE = 2
"""A failed gate item, or a candidate that changes the test infrastructure."""
TIER_INCONCLUSIVE = 3
TIER_SCORED = 4


class DecisionPolicy(BaseModel):
    """Thresholds that turn S and coverage into a decision."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    accept: float = Field(default=0.85, ge=0.0, le=1.0)
    """S at or above this is ``accept``."""
    review: float = Field(default=0.60, ge=0.0, le=1.0)
    """S at or above this (and below ``accept``) is ``review``; below it, ``reject``."""
    min_coverage: float = Field(default=0.5, ge=0.0, le=1.0)
    """Below this share of rubric weight with a verdict, the decision is ``inconclusive``."""

    @model_validator(mode="after")
    def _ordered(self) -> DecisionPolicy:
        if self.review > self.accept:
            raise ValueError(f"review ({self.review}) must not exceed accept ({self.accept})")
        return self


def reduce_repeats(verdicts: Iterable[Verdict]) -> list[Verdict]:
    """One verdict per (task, candidate, item): the majority over repeats.

    A tie between 0 and 1 is ``missing: split_vote``; repeats that are all missing keep their most
    common reason. Missing repeats do not vote. The result carries ``repeat=0``.
    """
    groups: dict[tuple[str, str, str], list[Verdict]] = defaultdict(list)
    for v in verdicts:
        groups[(v.instance_id, v.candidate_id, v.item_id)].append(v)
    out: list[Verdict] = []
    for rows in groups.values():
        if len(rows) == 1:
            one = rows[0]  # verdicts are frozen: one already at repeat 0 is its own reduction
            out.append(one if one.repeat == 0 else one.model_copy(update={"repeat": 0}))
            continue
        first = rows[0]
        voted = [v for v in rows if v.value is not None]
        ones = sum(1 for v in voted if v.value == 1)
        zeros = len(voted) - ones
        origin = "checked" if voted and all(v.origin == "checked" for v in voted) else "judged"
        update: dict[str, Any]
        if not voted:
            reason, detail = Counter((v.reason, v.detail) for v in rows).most_common(1)[0][0]
            update = {"origin": "missing", "value": None, "reason": reason, "detail": detail}
        elif ones == zeros:
            update = {"origin": "missing", "value": None, "reason": "split_vote", "detail": None}
        else:
            value = 1 if ones > zeros else 0
            update = {"origin": origin, "value": value, "reason": None, "detail": None}
        out.append(Verdict.model_validate({**first.model_dump(), **update, "repeat": 0}))
    return out


def _weighted(pairs: list[tuple[int, int]]) -> float | None:
    total = sum(w for w, _ in pairs)
    return sum(w * s for w, s in pairs) / total if total else None


def score_candidate(
    rubric: Rubric | None,
    verdicts: Iterable[Verdict],
    *,
    instance_id: str,
    candidate_id: str,
    empty_patch: bool,
    policy: DecisionPolicy | None = None,
) -> CandidateScore:
    """Score one candidate. ``rubric`` is ``None`` when the task's rubric failed to load.

    ``empty_patch`` (see :func:`agentic_rubrics.patch.is_empty_patch`) makes the decision a reject.

    Repeated verdicts are reduced by majority first. A rubric item with no verdict row counts as
    ``missing: no_verdict``.

    Raises:
        DataError: a verdict names another task or candidate, an item the rubric does not have, or
            disagrees on its weight.
    """
    policy = policy or DecisionPolicy()
    items = list(rubric.items()) if rubric is not None else []
    where = f"{instance_id}/{candidate_id}"
    tally = _tally(items, _by_item(items, _own(verdicts, instance_id, candidate_id, where), where))
    scored = tally.scored
    score = _weighted([(w, s) for _, w, s in scored])
    axis_scores = {a: _weighted([(w, s) for ax, w, s in scored if ax == a]) for a in AXES}
    weight_total = sum(item.weight for _, item in items)
    weight_scored = sum(w for _, w, _ in scored)
    coverage = weight_scored / weight_total if weight_total else 0.0
    unchanged = tally.no_behaviour_change and not empty_patch
    decision, tier, reasons = _verdict(
        empty_patch, tally, rubric is None, bool(items), score, coverage, policy
    )
    return CandidateScore(
        instance_id=instance_id,
        candidate_id=candidate_id,
        score=score,
        axis_scores=axis_scores,
        weight_total=weight_total,
        weight_scored=weight_scored,
        items_total=len(items),
        items_scored=len(scored),
        missing=dict(sorted(tally.missing.items())),
        decision=decision,
        reasons=reasons,
        empty_patch=empty_patch,
        no_behaviour_change=unchanged,
        tampers_with_tests=tally.tampers,
        failed_gates=tally.failed_gates,
        rank_tier=tier,
    )


def _own(
    verdicts: Iterable[Verdict], instance_id: str, candidate_id: str, where: str
) -> list[Verdict]:
    """The verdicts, each checked to be this candidate's (another's would score it for nothing)."""
    rows = list(verdicts)
    for v in rows:
        if v.instance_id != instance_id or v.candidate_id != candidate_id:
            raise DataError(
                f"{where}: a verdict of {v.instance_id}/{v.candidate_id} (item {v.item_id!r}) was"
                " given to score this candidate"
            )
    return rows


def _by_item(
    items: list[tuple[Axis, RubricItem]], verdicts: Iterable[Verdict], where: str
) -> dict[str, Verdict]:
    """The verdicts reduced by majority, by item id, each checked against the rubric."""
    by_item = {v.item_id: v for v in reduce_repeats(verdicts)}
    known = {item.id: item for _, item in items}
    for item_id, row in by_item.items():
        if item_id not in known:
            raise DataError(f"{where}: verdict for unknown item {item_id!r}")
        if row.weight != known[item_id].weight:
            raise DataError(f"{where}: item {item_id!r} has a stale weight")
    return by_item


@dataclass
class _Tally:
    scored: list[tuple[Axis, int, int]] = field(default_factory=list)
    """(axis, weight, value) of each item with a verdict."""
    missing: Counter[str] = field(default_factory=Counter)
    """Items without a verdict, by reason."""
    failed_gates: list[str] = field(default_factory=list)
    """Gate items whose verdict is 0."""
    missing_gates: list[str] = field(default_factory=list)
    """Gate items without a verdict."""
    no_behaviour_change: bool = False
    """A verdict says the candidate changes no behaviour."""
    tampers: bool = False
    """A verdict says the candidate changes the test infrastructure."""


def _tally(items: list[tuple[Axis, RubricItem]], by_item: dict[str, Verdict]) -> _Tally:
    out = _Tally()
    for axis, item in items:
        v = by_item.get(item.id)
        if v is None or v.value is None:
            out.missing[v.reason if v is not None and v.reason else "no_verdict"] += 1
            if item.gate:
                out.missing_gates.append(item.id)
            continue
        out.scored.append((axis, item.weight, v.value))
        out.no_behaviour_change = out.no_behaviour_change or v.reason == NO_BEHAVIOUR_CHANGE
        out.tampers = out.tampers or v.reason == TAMPERS_WITH_TESTS
        if item.gate and v.value == 0:
            out.failed_gates.append(item.id)
    return out


def _verdict(
    empty_patch: bool,
    tally: _Tally,
    no_rubric: bool,
    has_items: bool,
    score: float | None,
    coverage: float,
    policy: DecisionPolicy,
) -> tuple[Decision, int, list[str]]:
    """A candidate's decision, tier and reasons: what cannot be the fix first, then the gates, then
    S and its coverage."""
    if empty_patch:
        return "reject", TIER_EMPTY_PATCH, ["empty_patch"]
    if tally.no_behaviour_change:  # it cannot be the fix, whatever its other items say
        return "reject", TIER_EMPTY_PATCH, [NO_BEHAVIOUR_CHANGE]
    gates = [f"gate_failed:{g}" for g in tally.failed_gates]
    if tally.tampers:  # what its tests say is not its code's alone: with the failed gates
        return "reject", TIER_FAILED_GATE, [TAMPERS_WITH_TESTS, *gates]
    if gates:
        return "reject", TIER_FAILED_GATE, gates
    if no_rubric or not has_items or not tally.scored:
        why = "rubric_error" if no_rubric else "empty_rubric" if not has_items else "no_verdict"
        return "inconclusive", TIER_NO_VERDICT, [why]
    return _decide(score, coverage, tally.missing_gates, policy)


def _decide(
    score: float | None, coverage: float, missing_gates: list[str], policy: DecisionPolicy
) -> tuple[Decision, int, list[str]]:
    """The decision of a candidate with verdicts, no failed gate and a usable rubric."""
    reasons = ["low_coverage"] if coverage < policy.min_coverage else []
    reasons += [f"gate_missing:{g}" for g in missing_gates]
    if reasons:
        return "inconclusive", TIER_INCONCLUSIVE, reasons
    assert score is not None
    if score >= policy.accept:
        return "accept", TIER_SCORED, []
    if score >= policy.review:
        return "review", TIER_SCORED, []
    return "reject", TIER_SCORED, ["score_below_review"]
