"""What a reward is: S, its coverage, the decision and the per-item verdicts it rests on (no prompt,
no model reply), or an abstention with its reason."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict

from agentic_rubrics.types import CandidateScore, Rubric, Verdict


class ItemVerdict(BaseModel):
    """One rubric item's verdict for the patch (repeats reduced by majority)."""

    model_config = ConfigDict(frozen=True)

    item_id: str
    axis: str
    weight: int
    status: Literal["judged", "checked", "missing"]
    value: int | None
    reason: str | None
    """Why the verdict is missing (a code of :data:`agentic_rubrics.reasons.MISSING_REASONS`); for a
    checked item, the check that decided it."""
    detail: str | None


class Reward(BaseModel):
    """One patch's reward."""

    model_config = ConfigDict(frozen=True)

    instance_id: str
    score: float | None
    """S = Σ w·s / Σ w over the items with a verdict; ``None``: abstain (see ``abstained``)."""
    coverage: float | None
    """Share of the rubric's weight with a verdict (``None``: no rubric)."""
    items_scored: int
    items_total: int
    decision: str | None
    """The run's decision under its policy (``accept``, ``review``, ``reject``, ``inconclusive``)."""
    reasons: list[str]
    """The decision's reason codes."""
    missing: dict[str, int]
    """Items without a verdict, by reason."""
    verdicts: list[ItemVerdict]
    abstained: str | None = None
    """Why ``score`` is ``None``: ``unknown_instance``, ``rubric_error:<why>`` (``rubric_not_found``,
    ``rubric_invalid``, ``rubric_changed``), ``empty_rubric``, ``no_verdict`` (every item missing: the
    judge failed, the patch did not apply ...), ``invalid_text``."""
    judge: str
    rubric_hash: str | None = None


def abstain(instance_id: str, why: str, judge: str) -> Reward:
    """A reward without a score, and why."""
    return Reward(
        instance_id=instance_id,
        score=None,
        coverage=None,
        items_scored=0,
        items_total=0,
        decision=None,
        reasons=[],
        missing={},
        verdicts=[],
        abstained=why,
        judge=judge,
    )


def reward_of(
    score: CandidateScore, rubric: Rubric, reduced: Iterable[Verdict], judge: str
) -> Reward:
    """The reward of a scored candidate: its score, and its verdicts (reduced) in rubric order."""
    order = {item.id: n for n, (_, item) in enumerate(rubric.items())}
    verdicts = [
        ItemVerdict(
            item_id=v.item_id,
            axis=v.axis,
            weight=v.weight,
            status=v.origin,
            value=v.value,
            reason=v.reason,
            detail=v.detail,
        )
        for v in sorted(reduced, key=lambda v: order.get(v.item_id, len(order)))
    ]
    empty = score.score is None
    return Reward(
        instance_id=score.instance_id,
        score=score.score,
        coverage=score.coverage_weight,
        items_scored=score.items_scored,
        items_total=score.items_total,
        decision=score.decision,
        reasons=list(score.reasons),
        missing=dict(score.missing),
        verdicts=verdicts,
        abstained=("empty_rubric" if not score.items_total else "no_verdict") if empty else None,
        judge=judge,
        rubric_hash=rubric.content_hash(),
    )
