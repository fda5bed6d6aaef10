"""What a reward is: S, its coverage, the decision and the per-item verdicts it rests on (no prompt,
no model reply), or an abstention with its reason.

A reward is absent (``score`` ``None``, ``abstained`` saying why) whenever S would not say what the
judge thinks of the patch: besides the instance-level cases (no task, no rubric, an invalid patch),

1. ``judge_failed:<reason>``: a model call for the patch did not answer (:data:`CALL_FAILURES`:
   a provider error after its retries — a timeout included —, the budget, an empty, cut, refused or
   unreadable reply), or none of the items the model decides got a verdict (skipped, invalid values,
   split votes). S over the items left would be the checks' value, or a part's, in disguise;
2. ``no_verdict``: no item has a verdict at all;
3. ``low_coverage``: the weight with a verdict is below the decision policy's ``min_coverage`` of the
   weight the judge is responsible for — every item except those without a verdict by design
   (:data:`BY_DESIGN`: no model configured for them, an empty patch, a patch that does not apply for
   the items decided on its applied files, whose ``applies`` item already says 0);
4. ``gate_missing``: a gate item (``applies`` among them) has no verdict (a patch too large to
   analyse, say): the decision is ``inconclusive``, and S over the rest is no reward.

A candidate the checks decided cannot be the fix (:func:`cannot_be_the_fix`: an empty patch, one that
does not apply, one that changes no behaviour or changes the test infrastructure) gets 0, the lowest
reward, whatever the judge said or failed to say.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable
from typing import Final, Literal

from pydantic import BaseModel, ConfigDict

from agentic_rubrics.types import CandidateScore, Rubric, Verdict

CALL_FAILURES: Final = frozenset(
    {
        "provider_error",
        "budget",
        "context_window",
        "empty_reply",
        "unparsable_reply",
        "truncated",
        "refusal",
    }
)
"""Missing reasons that say a model call for the patch gave no verdicts: the reward does not know."""

BY_DESIGN: Final = frozenset({"not_configured", "empty_patch", "check_error:not_applied"})
"""Missing reasons (``reason`` or ``reason:detail``) that are no gap in what the judge knows: no model
for the item, an empty patch, an applied-tree check of a patch whose ``applies`` item is 0."""


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
    """S = Σ w·s / Σ w over the items with a verdict; 0 for a candidate that changes no behaviour of
    the program or changes the test infrastructure (decision ``reject``, its reason in ``reasons``);
    ``None``: abstain (see ``abstained``)."""
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
    ``rubric_invalid``, ``rubric_changed``), ``empty_rubric``, ``invalid_text``,
    ``judge_failed:<reason>`` (a model call gave no verdicts, or no model-decided item has one),
    ``no_verdict`` (every item missing), ``low_coverage``, ``gate_missing`` (a gate item, such as
    ``applies``, has no verdict: S would rest on what it could not decide; see the module's
    docstring)."""
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
    score: CandidateScore,
    rubric: Rubric,
    reduced: Iterable[Verdict],
    judge: str,
    *,
    model_items: Collection[str] = (),
    min_coverage: float = 0.0,
) -> Reward:
    """The reward of a scored candidate: its score, and its verdicts (reduced) in rubric order.

    ``model_items``: the ids of the items a model decides (none with the checks judge);
    ``min_coverage``: the decision policy's. The score is left out when :func:`absence` says so.
    """
    order = {item.id: n for n, (_, item) in enumerate(rubric.items())}
    rows = sorted(reduced, key=lambda v: order.get(v.item_id, len(order)))
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
        for v in rows
    ]
    why = absence(score, rows, model_items=model_items, min_coverage=min_coverage)
    applies = {i.id for _, i in rubric.items() if i.check is not None and i.check.name == "applies"}
    undecided = any(v.item_id in applies and v.value is None for v in rows)
    if why is None and (undecided or any(r.startswith("gate_missing:") for r in score.reasons)):
        why = "gate_missing"  # S over the rest would reward what a gate could not decide
    value = None if why else score.score
    if cannot_be_the_fix(score, rows):
        # the checks decided it cannot be the fix, or cannot be shown to be: the lowest reward,
        # whatever a judge said or failed to say (a policy must not learn to insert `pass`, to
        # answer with nothing, or with a diff that does not apply)
        why, value = None, 0.0
    return Reward(
        instance_id=score.instance_id,
        score=value,
        coverage=score.coverage_weight,
        items_scored=score.items_scored,
        items_total=score.items_total,
        decision=score.decision,
        reasons=list(score.reasons),
        missing=dict(score.missing),
        verdicts=verdicts,
        abstained=why,
        judge=judge,
        rubric_hash=rubric.content_hash(),
    )


def cannot_be_the_fix(score: CandidateScore, reduced: Iterable[Verdict]) -> bool:
    """Whether the checks decided the candidate fixes nothing: an empty patch (a response without a
    diff is one), a patch that does not apply to the task's tree (its ``applies`` check 0, or, with
    no such item, its applied-tree checks ``not_applied``: the harness cannot apply it either), no
    behaviour of the program changed, or the test infrastructure changed."""
    if score.empty_patch or score.no_behaviour_change or score.tampers_with_tests:
        return True
    return any(
        (v.origin == "checked" and v.reason == "applies" and v.value == 0)
        or (v.reason == "check_error" and v.detail == "not_applied")  # a rubric without `applies`
        for v in reduced
    )


def _by_design(v: Verdict) -> bool:
    return v.reason in BY_DESIGN or f"{v.reason}:{v.detail}" in BY_DESIGN


def absence(
    score: CandidateScore,
    reduced: Iterable[Verdict],
    *,
    model_items: Collection[str] = (),
    min_coverage: float = 0.0,
) -> str | None:
    """Why the candidate's S is no reward (``None``: it is one); the rules in the module's docstring."""
    if not score.items_total:
        return "empty_rubric"
    rows = list(reduced)
    missing = [v for v in rows if v.value is None]
    failed = Counter(str(v.reason) for v in missing if v.reason in CALL_FAILURES)
    if failed:
        return f"judge_failed:{_most_common(failed)}"
    models = [v for v in rows if v.item_id in model_items]
    if models and not any(v.value is not None or _by_design(v) for v in models):
        return f"judge_failed:{_most_common(Counter(str(v.reason) for v in models))}"
    if score.score is None:
        return "no_verdict"
    # an item with no row at all is a gap too: what is not by design, of the rubric's weight
    excused = sum(v.weight for v in missing if _by_design(v))
    known = score.weight_scored / (score.weight_total - excused)
    return "low_coverage" if known < min_coverage else None


def _most_common(counts: Counter[str]) -> str:
    """The most frequent reason, ties broken by name (the same answer every time)."""
    return min(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0]
