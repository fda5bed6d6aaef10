"""Pure metric functions. Each docstring cites its definition and states its undefined case.

Conventions: ``scores`` may hold ``None`` where a method gave no score; ``labels`` are 0/1 (or
bool) ground truth from the hidden tests and must all be known. Functions return ``None`` where the
metric is undefined instead of inventing a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")
Score = float | None


def _labels(labels: Sequence[int | bool]) -> list[int]:
    out = []
    for y in labels:
        # exactly 0 or 1 (a bool is one): 0.9, 1.7 or "1" is a mistake, not a label to truncate
        if isinstance(y, (str, bytes)) or y not in (0, 1):  # type: ignore[unreachable]
            raise ValueError(f"labels must be 0/1, got {y!r}")
        out.append(int(y))
    return out


def _check_lengths(scores: Sequence[Score], labels: Sequence[int | bool]) -> None:
    if len(scores) != len(labels):
        raise ValueError(f"{len(scores)} scores for {len(labels)} labels")


def best_at_k(scores: Sequence[Score], labels: Sequence[int | bool], k: int) -> float | None:
    """Exact Best@K: the expected label of the top-scored candidate of a uniformly random K-subset.

    Definition: draw K of the n candidates uniformly without replacement, select the one with the
    highest score, breaking ties uniformly at random; Best@K is the expected label of the selection.
    ``None`` scores rank below every number. K >= n means the whole pool. Computed in closed form,
    not by resampling: for each score level L with ``a`` candidates below it, ``m`` at it and ``p``
    of those positive, P(the subset's top level is L) = (C(a+m, K) - C(a, K)) / C(n, K) and, given
    that, the tie-broken pick is uniform over the level's m candidates, so contributes p/m.

    Undefined (``None``): an empty pool. Raises ``ValueError`` for K < 1.
    """
    return best_at_ks(scores, labels, [k])[0]


def best_at_ks(
    scores: Sequence[Score], labels: Sequence[int | bool], ks: Sequence[int]
) -> list[float | None]:
    """:func:`best_at_k` for several K at once (the pool's score levels are sorted once)."""
    _check_lengths(scores, labels)
    ys = _labels(labels)
    if any(k < 1 for k in ks):
        raise ValueError(f"k must be >= 1, got {min(ks)}")
    n = len(ys)
    if n == 0:
        return [None] * len(ks)
    levels: dict[tuple[int, float], list[int]] = {}
    for s, y in zip(scores, ys, strict=True):
        key = (0, 0.0) if s is None else (1, float(s))  # None below every number, -inf included
        if math.isnan(key[1]):
            raise ValueError("scores must not be NaN (use None for no score)")
        levels.setdefault(key, []).append(y)
    ordered = [(len(members), sum(members)) for _, members in sorted(levels.items())]
    # exact: one integer numerator over C(n, K) * lcm(level sizes); int / int rounds correctly once
    sizes = math.lcm(*(m for m, _ in ordered))
    out: list[float | None] = []
    for k in ks:
        k = min(k, n)
        numerator = 0
        below = 0
        for m, positives in ordered:
            ways = math.comb(below + m, k) - math.comb(below, k)
            numerator += ways * positives * (sizes // m)
            below += m
        out.append(numerator / (math.comb(n, k) * sizes))
    return out


def pass_at_k(labels: Sequence[int | bool], k: int) -> float | None:
    """Oracle Pass@K, the unbiased estimator 1 - C(n-c, K) / C(n, K) (Chen et al. 2021, Codex).

    It is the probability that a random K-subset holds at least one resolved candidate. K >= n means
    the whole pool: 1 if any candidate is resolved, else 0. Undefined (``None``): an empty pool.
    """
    ys = _labels(labels)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    n, c = len(ys), sum(ys)
    if n == 0:
        return None
    if k >= n:
        return 1.0 if c else 0.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


def random_at_k(labels: Sequence[int | bool]) -> float | None:
    """Random@K: the expected label of a candidate picked uniformly at random, c / n, for every K.

    Undefined (``None``): an empty pool.
    """
    ys = _labels(labels)
    return sum(ys) / len(ys) if ys else None


def _average_ranks(values: Sequence[float]) -> list[float]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        mid = (i + j) / 2 + 1  # ranks are 1-based; ties share their average rank
        for t in range(i, j + 1):
            ranks[order[t]] = mid
        i = j + 1
    return ranks


def _numeric(scores: Sequence[Score]) -> list[float]:
    if any(s is None for s in scores):
        raise ValueError("scores must not hold None here; filter them and report coverage")
    out = [float(s) for s in scores if s is not None]
    if any(math.isnan(x) for x in out):
        raise ValueError("scores must not be NaN (use None for no score)")
    return out


def roc_auc(scores: Sequence[Score], labels: Sequence[int | bool]) -> float | None:
    """Area under the ROC curve, as the Mann-Whitney U statistic: P(score+ > score-) + P(tie) / 2.

    Definition: Hanley & McNeil (1982); equals ``sklearn.metrics.roc_auc_score``. Undefined
    (``None``): fewer than one positive or one negative. ``None`` scores are an error: filter them
    first and report coverage beside the result.
    """
    _check_lengths(scores, labels)
    xs, ys = _numeric(scores), _labels(labels)
    n_pos = sum(ys)
    n_neg = len(ys) - n_pos
    if n_pos == 0 or n_neg == 0:
        return None
    ranks = _average_ranks(xs)
    rank_sum = sum(r for r, y in zip(ranks, ys, strict=True) if y)
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)


def _counts_by_threshold(xs: list[float], ys: list[int]) -> Iterator[tuple[int, int]]:
    """Cumulative (true positives, false positives) at each distinct score, highest first."""
    order = sorted(range(len(xs)), key=lambda i: -xs[i])
    tp = fp = 0
    i = 0
    while i < len(order):
        level = xs[order[i]]
        while i < len(order) and xs[order[i]] == level:
            tp += ys[order[i]]
            fp += 1 - ys[order[i]]
            i += 1
        yield tp, fp


def roc_curve(scores: Sequence[float], labels: Sequence[int | bool]) -> list[tuple[float, float]]:
    """The ROC curve: (false-positive rate, true-positive rate) at each distinct threshold, highest first.

    Definition: Fawcett (2006), starting at (0, 0); ties move both rates at once. Undefined (empty
    list): no positive or no negative label.
    """
    _check_lengths(scores, labels)
    xs, ys = [float(s) for s in scores], _labels(labels)
    pos = sum(ys)
    neg = len(ys) - pos
    if not pos or not neg:
        return []
    return [(0.0, 0.0), *((fp / neg, tp / pos) for tp, fp in _counts_by_threshold(xs, ys))]


def pr_auc(scores: Sequence[Score], labels: Sequence[int | bool]) -> float | None:
    """PR-AUC reported as **average precision**: AP = sum_n (R_n - R_{n-1}) * P_n.

    Definition: precision and recall at each distinct score threshold, highest first; equals
    ``sklearn.metrics.average_precision_score`` (no interpolation). Undefined (``None``): no
    positive label. ``None`` scores are an error, as for :func:`roc_auc`.
    """
    _check_lengths(scores, labels)
    xs, ys = _numeric(scores), _labels(labels)
    n_pos = sum(ys)
    if n_pos == 0:
        return None
    ap = 0.0
    prev_recall = 0.0
    for tp, fp in _counts_by_threshold(xs, ys):
        recall = tp / n_pos
        ap += (recall - prev_recall) * (tp / (tp + fp))
        prev_recall = recall
    return ap


def flakiness(repeated: Iterable[Sequence[int | None]]) -> float | None:
    """Share of items whose repeated verdicts disagree (the paper's "flaky items").

    Each element is one (candidate, item) pair's values over repeats; ``None`` (missing) repeats do
    not count. An item counts when it has at least two values; it is flaky when they differ.
    Undefined (``None``, printed as n/a): no item was judged at least twice.
    """
    counted = flaky = 0
    for values in repeated:
        got = [v for v in values if v is not None]
        if len(got) < 2:
            continue
        counted += 1
        flaky += len(set(got)) > 1
    return flaky / counted if counted else None


def tie_rate(pools: Iterable[Sequence[Score]]) -> float | None:
    """Share of tasks whose top ranking value is shared by two or more candidates.

    A tie at the top means the selection was decided by the tie-break rule, not by the scores.
    ``None`` values count as equal to each other. Undefined (``None``): no task with a candidate.
    """
    tasks = tied = 0
    for scores in pools:
        if not scores:
            continue
        tasks += 1
        keyed = [(0, 0.0) if s is None else (1, float(s)) for s in scores]
        top = max(keyed)
        tied += sum(1 for s in keyed if s == top) > 1
    return tied / tasks if tasks else None


def mean(values: Iterable[float | None]) -> float | None:
    """Arithmetic mean of the defined values; ``None`` when none is defined."""
    got = [v for v in values if v is not None]
    return sum(got) / len(got) if got else None


def bootstrap_ci(
    units: Sequence[T],
    statistic: Callable[[Sequence[T]], float | None],
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """Percentile bootstrap interval (Efron & Tibshirani 1993) over ``units`` (tasks, not candidates).

    Tasks are resampled with replacement ``n_resamples`` times with a fixed seed, so the interval is
    reproducible; resamples where the statistic is undefined are dropped. Undefined (``None``): no
    unit, or the statistic undefined on every resample.
    """
    if not units:
        return None
    import numpy as np  # numpy is only needed here; keep the package import light

    rng = np.random.default_rng(seed)
    n = len(units)
    values = []
    for _ in range(n_resamples):
        idx = rng.integers(0, n, size=n)
        v = statistic([units[i] for i in idx])
        if v is not None:
            values.append(v)
    if not values:
        return None
    alpha = (1 - level) / 2
    lo, hi = np.quantile(np.asarray(values), [alpha, 1 - alpha])
    return float(lo), float(hi)
