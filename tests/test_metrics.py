"""Metrics against their definitions: brute-force enumeration and scikit-learn."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentic_rubrics.rank.metrics import (
    best_at_k,
    best_at_ks,
    bootstrap_ci,
    flakiness,
    mean,
    pass_at_k,
    pr_auc,
    random_at_k,
    roc_auc,
    tie_rate,
)
from agentic_rubrics.rank.rerank import select

# few distinct values so that ties are frequent; None is "no score"
scores_st = st.one_of(st.none(), st.sampled_from([0.0, 0.25, 0.5, 0.5, 1.0, -math.inf]))


def brute_best_at_k(scores: list[float | None], labels: list[int], k: int) -> Fraction:
    """The definition, literally: every K-subset, the top level, uniform tie-break."""
    n = len(scores)
    k = min(k, n)
    total = Fraction(0)
    subsets = list(itertools.combinations(range(n), k))
    for subset in subsets:
        keyed = {i: (0, 0.0) if scores[i] is None else (1, scores[i]) for i in subset}
        top = max(keyed.values())
        winners = [i for i in subset if keyed[i] == top]
        total += Fraction(sum(labels[i] for i in winners), len(winners))
    return total / len(subsets)


@settings(max_examples=300, deadline=None)
@given(
    pool=st.lists(st.tuples(scores_st, st.integers(0, 1)), min_size=1, max_size=8),
    k=st.integers(1, 10),
)
def test_best_at_k_equals_brute_force_enumeration(
    pool: list[tuple[float | None, int]], k: int
) -> None:
    scores = [s for s, _ in pool]
    labels = [y for _, y in pool]
    got = best_at_k(scores, labels, k)
    assert got == float(brute_best_at_k(scores, labels, k))  # exact: the rational, rounded once
    assert best_at_ks(scores, labels, [k, 1, 9]) == [
        got,
        *(best_at_k(scores, labels, j) for j in (1, 9)),
    ]


def test_best_at_k_known_values() -> None:
    # a perfect ranker picks a positive whenever the subset holds one: Best@K = Pass@K
    scores, labels = [0.9, 0.8, 0.1, 0.0], [1, 0, 0, 0]
    for k in range(1, 5):
        assert best_at_k(scores, labels, k) == pytest.approx(pass_at_k(labels, k))
    # all tied: a uniform pick among the whole subset = the base rate, for every K
    assert best_at_k([0.5] * 4, [1, 0, 0, 1], 3) == pytest.approx(0.5)
    # K >= n: the whole pool, top level wins
    assert best_at_k([None, 0.2, 0.7], [1, 1, 0], 99) == 0.0
    # None ranks below every number, even -inf
    assert best_at_k([None, -math.inf], [0, 1], 2) == 1.0
    assert best_at_k([], [], 1) is None
    with pytest.raises(ValueError):
        best_at_k([0.1], [1], 0)
    with pytest.raises(ValueError):
        best_at_k([0.1], [None], 1)  # type: ignore[list-item]
    with pytest.raises(ValueError):
        best_at_k([float("nan")], [1], 1)


@settings(max_examples=200, deadline=None)
@given(labels=st.lists(st.integers(0, 1), min_size=1, max_size=9), k=st.integers(1, 12))
def test_pass_at_k_is_probability_a_subset_holds_a_positive(labels: list[int], k: int) -> None:
    n = len(labels)
    kk = min(k, n)
    subsets = list(itertools.combinations(range(n), kk))
    expected = sum(any(labels[i] for i in s) for s in subsets) / len(subsets)
    assert pass_at_k(labels, k) == pytest.approx(expected)


def test_random_at_k_and_undefined_cases() -> None:
    assert random_at_k([1, 0, 0, 1]) == 0.5
    assert random_at_k([]) is None
    assert pass_at_k([], 1) is None
    assert roc_auc([0.1, 0.2], [1, 1]) is None
    assert pr_auc([0.1, 0.2], [0, 0]) is None
    with pytest.raises(ValueError):
        roc_auc([None, 0.2], [0, 1])
    with pytest.raises(ValueError):
        roc_auc([0.1], [0, 1])


def test_nan_scores_and_labels_that_are_not_0_or_1_are_refused() -> None:
    nan = float("nan")
    for scores in ([nan, 0.2, 0.9, 0.1], [0.2, nan, 0.9, 0.1]):  # pr_auc looped forever on the 2nd
        for metric in (roc_auc, pr_auc):
            with pytest.raises(ValueError, match="NaN"):
                metric(scores, [1, 0, 1, 0])
    with pytest.raises(ValueError, match="NaN"):
        select("t", {"a": nan, "b": 0.5}, "x")  # the pick followed the order of the candidates
    for labels in ([0.9, 0], [1.7, 0], ["1", 0], [None, 1], [2, 0]):  # were truncated by int()
        with pytest.raises(ValueError, match="labels must be 0/1"):
            best_at_k([1, 0], labels, k=1)
        with pytest.raises(ValueError, match="labels must be 0/1"):
            roc_auc([0.2, 0.9], labels)
    assert roc_auc([0.2, 0.9], [False, True]) == roc_auc([0.2, 0.9], [0.0, 1.0]) == 1.0


@settings(max_examples=200, deadline=None)
@given(
    pool=st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.5, 0.5, 0.9, 1.0]), st.integers(0, 1)),
        min_size=2,
        max_size=30,
    )
)
def test_roc_and_pr_auc_match_sklearn(pool: list[tuple[float, int]]) -> None:
    # imported here: at module level every test worker would pay sklearn's import while collecting
    from sklearn.metrics import average_precision_score, roc_auc_score

    scores = [s for s, _ in pool]
    labels = [y for _, y in pool]
    if 0 < sum(labels) < len(labels):
        assert roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))
    if sum(labels):
        assert pr_auc(scores, labels) == pytest.approx(average_precision_score(labels, scores))


def test_flakiness() -> None:
    assert flakiness([[1, 1, 1], [0, 1, 1], [None, 1], [0, 0]]) == pytest.approx(1 / 3)
    assert flakiness([[1], [None, None], [None, 1]]) is None  # nothing judged twice: n/a
    assert flakiness([]) is None


def test_tie_rate() -> None:
    assert tie_rate([[0.5, 0.5, 0.1], [0.9, 0.5], [None, None], []]) == pytest.approx(2 / 3)
    assert tie_rate([]) is None


def test_bootstrap_ci_is_reproducible_and_brackets_the_mean() -> None:
    values = [float(i % 2) for i in range(100)]
    ci = bootstrap_ci(values, mean, n_resamples=500, seed=1)
    assert ci is not None
    lo, hi = ci
    assert lo < 0.5 < hi
    assert ci == bootstrap_ci(values, mean, n_resamples=500, seed=1)
    assert bootstrap_ci([], mean) is None
    assert bootstrap_ci([None], lambda xs: None) is None
    assert bootstrap_ci([1.0, 1.0], mean) == (1.0, 1.0)
