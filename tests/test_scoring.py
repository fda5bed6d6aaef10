"""S, coverage, decisions and the ranking order; every path where a verdict goes missing."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from agentic_rubrics.exceptions import DataError, RubricError
from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.rank.scoring import DecisionPolicy, reduce_repeats, score_candidate
from agentic_rubrics.rubric.check_verdicts import check_verdicts
from agentic_rubrics.rubric.file import parse_rubric
from agentic_rubrics.types import AXES, CandidateScore, Rubric, RubricItem, Verdict

from .conftest import item, rubric

PATCH = "--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


def verdict(
    item_id: str,
    value: int | None,
    *,
    weight: int = 2,
    axis: str = "file_change_rubrics",
    origin: str | None = None,
    reason: str | None = None,
    repeat: int = 0,
) -> Verdict:
    if origin is None:
        origin = "missing" if value is None else "judged"
    if origin == "missing" and reason is None:
        reason = "provider_error"
    return Verdict.model_validate(
        {
            "instance_id": "t",
            "candidate_id": "c",
            "item_id": item_id,
            "axis": axis,
            "weight": weight,
            "origin": origin,
            "value": value,
            "reason": reason,
            "repeat": repeat,
        }
    )


def score(
    r: Rubric | None,
    verdicts: list[Verdict],
    patch: str = PATCH,
    policy: DecisionPolicy | None = None,
) -> CandidateScore:
    return score_candidate(
        r,
        verdicts,
        instance_id="t",
        candidate_id="c",
        empty_patch=is_empty_patch(patch),
        policy=policy,
    )


item_st = st.tuples(
    st.sampled_from(AXES), st.sampled_from([1, 2, 3]), st.sampled_from([0, 1, None]), st.booleans()
)


@settings(max_examples=300, deadline=None)
@given(rows=st.lists(item_st, min_size=0, max_size=12))
def test_s_is_the_weighted_mean_over_exactly_the_items_with_a_value(
    rows: list[tuple[str, int, int | None, bool]],
) -> None:
    axes: dict[str, list[dict[str, object]]] = {a: [] for a in AXES}
    verdicts = []
    for i, (axis, weight, value, has_row) in enumerate(rows):
        axes[axis].append(item(f"I{i}", weight))
        if has_row:
            verdicts.append(verdict(f"I{i}", value, weight=weight, axis=axis))
    r = rubric(**axes)  # type: ignore[arg-type]
    s = score(r, verdicts)
    valued = [(w, v) for (_, w, v, has) in rows if has and v is not None]
    expected = sum(w * v for w, v in valued) / sum(w for w, _ in valued) if valued else None
    assert s.score == (pytest.approx(expected) if expected is not None else None)
    assert s.weight_scored == sum(w for w, _ in valued)
    assert s.weight_total == sum(w for _, w, _, _ in rows)
    assert s.items_scored == len(valued)
    for axis in AXES:
        ax = [(w, v) for (a, w, v, has) in rows if a == axis and has and v is not None]
        want = sum(w * v for w, v in ax) / sum(w for w, _ in ax) if ax else None
        assert s.axis_scores[axis] == (pytest.approx(want) if want is not None else None)
    # missing verdicts never act as 0: dropping them changes nothing
    kept = [v for v in verdicts if v.value is not None]
    assert score(r, kept).score == s.score


def test_missing_is_excluded_never_zero() -> None:
    r = rubric(file_change=[item("A", 3), item("B", 1)])
    s = score(
        r, [verdict("A", 1, weight=3), verdict("B", None, weight=1, reason="skipped_by_judge")]
    )
    assert s.score == 1.0 and s.missing == {"skipped_by_judge": 1}
    assert s.coverage_weight == 0.75 and s.coverage_items == 0.5
    assert s.decision == "accept"


def test_missing_path_judge_not_configured() -> None:
    r = rubric(
        file_change=[item("FC1", 3, {"touches": "core.py"})], spec_alignment=[item("SA1", 3)]
    )
    checked = list(check_verdicts(r, PATCH, instance_id="t", candidate_id="c").values())
    not_configured = verdict(
        "SA1", None, weight=3, axis="spec_alignment_rubrics", reason="not_configured"
    )
    s = score(r, [*checked, not_configured])
    assert not_configured.origin == "missing" and not_configured.value is None
    assert s.score == 1.0 and s.missing == {"not_configured": 1}
    assert s.coverage_weight == 0.5 and s.decision == "accept"
    strict = score(r, [*checked, not_configured], policy=DecisionPolicy(min_coverage=0.6))
    assert strict.decision == "inconclusive" and strict.reasons == ["low_coverage"]


def test_missing_path_check_error_and_unparsable_patch() -> None:
    r = rubric(
        file_change=[item("FC1", 3, {"touches": "core.py"}), item("FC2", 1, {"max_files": "x"})]
    )
    bad_check = check_verdicts(r, PATCH, instance_id="t", candidate_id="c")
    assert (bad_check["FC2"].origin, bad_check["FC2"].value, bad_check["FC2"].reason) == (
        "missing",
        None,
        "check_error",
    )
    s = score(r, list(bad_check.values()))
    assert s.score == 1.0 and s.missing == {"check_error": 1}
    unparsable = "this is not a diff"
    rows = list(check_verdicts(r, unparsable, instance_id="t", candidate_id="c").values())
    assert all(v.origin == "missing" and v.reason == "check_error" for v in rows)
    s2 = score(r, rows, patch=unparsable)
    assert s2.score is None and s2.decision == "inconclusive" and s2.reasons == ["no_verdict"]
    assert s2.missing == {"check_error": 2} and s2.rank_tier == 1


def test_missing_path_rubric_failed_to_load() -> None:
    with pytest.raises(RubricError):
        parse_rubric("metadata: [\n")
    s = score(None, [])
    assert s.score is None and s.decision == "inconclusive" and s.reasons == ["rubric_error"]
    assert s.coverage_weight is None and s.rank_tier == 1


def test_missing_path_empty_rubric() -> None:
    s = score(rubric(), [])
    assert s.score is None and s.reasons == ["empty_rubric"] and s.decision == "inconclusive"


def test_item_without_row_is_missing_no_verdict() -> None:
    r = rubric(file_change=[item("A", 2), item("B", 2)])
    s = score(r, [verdict("A", 0)])
    assert s.missing == {"no_verdict": 1} and s.score == 0.0 and s.decision == "reject"
    assert s.reasons == ["score_below_review"]


def test_decisions_and_gates() -> None:
    r = rubric(file_change=[item("A", 3), item("B", 1)], integrity=[item("G", 1, gate=True)])
    gate_ok = verdict("G", 1, weight=1, axis="integrity_rubrics")
    assert (
        score(r, [verdict("A", 1, weight=3), verdict("B", 1, weight=1), gate_ok]).decision
        == "accept"
    )
    review = score(r, [verdict("A", 1, weight=3), verdict("B", 0, weight=1), gate_ok])
    assert review.score == 0.8 and review.decision == "review"
    failed = score(
        r,
        [
            verdict("A", 1, weight=3),
            verdict("B", 1, weight=1),
            verdict("G", 0, weight=1, axis="integrity_rubrics"),
        ],
    )
    assert (
        failed.decision == "reject"
        and failed.reasons == ["gate_failed:G"]
        and failed.failed_gates == ["G"]
    )
    assert failed.score == 0.8  # S is still reported
    gate_missing = score(r, [verdict("A", 1, weight=3), verdict("B", 1, weight=1)])
    assert gate_missing.decision == "inconclusive" and gate_missing.reasons == ["gate_missing:G"]
    empty = score(r, [verdict("A", 1, weight=3)], patch="  \n")
    assert empty.decision == "reject" and empty.reasons == ["empty_patch"] and empty.rank_tier == 0
    policy = DecisionPolicy(accept=0.9, review=0.5)
    assert (
        score(
            r, [verdict("A", 1, weight=3), verdict("B", 0, weight=1), gate_ok], policy=policy
        ).decision
        == "review"
    )
    with pytest.raises(ValidationError):
        DecisionPolicy(accept=0.5, review=0.6)
    with pytest.raises(ValidationError):
        DecisionPolicy(min_coverage=2)
    with pytest.raises(ValidationError):
        DecisionPolicy(acept=0.9)  # type: ignore[call-arg]


def test_ranking_order_is_total_and_follows_the_tiers() -> None:
    r = rubric(file_change=[item("A", 2), item("B", 2)], integrity=[item("G", 1, gate=True)])
    g1 = verdict("G", 1, weight=1, axis="integrity_rubrics")
    scored_low = score(r, [verdict("A", 0), verdict("B", 0), g1])  # S = 0.2, reject by score
    scored_high = score(r, [verdict("A", 1), verdict("B", 1), g1])
    inconclusive = score(
        r,
        [
            verdict("A", 1),
            verdict("B", None),
            verdict("G", None, weight=1, axis="integrity_rubrics"),
        ],
    )
    failed_gate = score(
        r, [verdict("A", 1), verdict("B", 1), verdict("G", 0, weight=1, axis="integrity_rubrics")]
    )
    no_verdict = score(r, [])
    empty = score(r, [verdict("A", 1), verdict("B", 1), g1], patch="")
    order = [empty, no_verdict, failed_gate, inconclusive, scored_low, scored_high]
    values = [s.rank_value for s in order]
    assert values == sorted(values) and len(set(values)) == len(values)
    assert [s.rank_tier for s in order] == [0, 1, 2, 3, 4, 4]


def test_repeats_reduce_by_majority_and_ties_are_missing() -> None:
    rows = [
        verdict("A", 1, repeat=0),
        verdict("A", 1, repeat=1),
        verdict("A", 0, repeat=2),
        verdict("B", 1, repeat=0),
        verdict("B", 0, repeat=1),
        verdict("C", None, repeat=0, reason="empty_reply"),
        verdict("C", None, repeat=1, reason="empty_reply"),
        verdict("D", 0, repeat=0),
        verdict("D", None, repeat=1),
    ]
    out = {v.item_id: v for v in reduce_repeats(rows)}
    assert (out["A"].origin, out["A"].value) == ("judged", 1)
    assert (out["B"].origin, out["B"].value, out["B"].reason) == ("missing", None, "split_vote")
    assert (out["C"].value, out["C"].reason) == (None, "empty_reply")
    assert (out["D"].origin, out["D"].value) == ("judged", 0)
    assert {v.repeat for v in out.values()} == {0}


def test_verdict_provenance_is_enforced() -> None:
    with pytest.raises(ValidationError):
        verdict("A", None, origin="judged")
    with pytest.raises(ValidationError):
        verdict("A", 1, origin="missing", reason="empty_reply")
    with pytest.raises(ValidationError):
        verdict("A", None, reason="because")  # not a known reason code
    with pytest.raises(ValidationError):
        verdict("A", 2)  # type: ignore[arg-type]
    row = verdict("A", 1).to_row()
    assert row["schema"] == "agentic-rubrics/1" and set(row) == {
        "schema",
        "instance_id",
        "candidate_id",
        "item_id",
        "axis",
        "weight",
        "origin",
        "value",
        "reason",
        "repeat",
    }
    assert Verdict.model_validate(row) == verdict("A", 1)
    for field in ("weight", "value"):  # True == 1 in Python, but a boolean is neither
        with pytest.raises(ValidationError, match="expected an integer, got True"):
            Verdict.model_validate({**row, field: True})
    with pytest.raises(ValidationError, match="expected an integer, got True"):
        RubricItem.model_validate({"id": "A", "description": "Does x", "weight": True})


def test_stale_or_foreign_verdicts_are_refused() -> None:
    r = rubric(file_change=[item("A", 2)])
    with pytest.raises(DataError, match="unknown item 'Z'"):
        score(r, [verdict("Z", 1)])
    with pytest.raises(DataError, match="stale weight"):
        score(r, [verdict("A", 1, weight=3)])
    # another candidate's or task's verdicts cannot score this one (the last row per item would win)
    theirs = verdict("A", 1).model_copy(update={"candidate_id": "other"})
    with pytest.raises(DataError, match=r"a verdict of t/other .* to score this candidate"):
        score(r, [verdict("A", 0), theirs])
    with pytest.raises(DataError, match="a verdict of elsewhere/c"):
        score(r, [verdict("A", 1).model_copy(update={"instance_id": "elsewhere"})])
