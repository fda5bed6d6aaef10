"""The report's percentile bootstrap intervals over tasks, in numpy, remembered between reports.

Same resamples as :func:`agentic_rubrics.rank.metrics.bootstrap_ci`: ``numpy.random.default_rng(seed)``
draws ``integers(0, n, size=n)`` once per resample, in order, so resample *r* holds the same tasks in
both. A resample is kept here as how many times it holds each task, and a statistic of the pooled
tasks becomes a weighted one: a mean is ``counts @ values / counts @ defined``; ROC-AUC and average
precision are computed from how many times a resample holds a positive and a negative at each distinct
score (ROC-AUC from the negatives below each positive, ties half; average precision at the thresholds
that hold a positive), in time linear in the pairs and memory bounded by blocks of resamples; the
counts themselves are kept as 16-bit integers (2 bytes per task and resample). Integer and
half-integer sums are exact in float64, so ROC-AUC values equal the pure-Python ones; means and average
precision differ only by the order of floating-point operations (a few 1e-15 at most). Resamples where
the statistic is
undefined (no defined value; no positive or no negative) are dropped, as there. The interval is
``numpy.quantile`` of the kept values at ``(1 - level) / 2`` and ``(1 + level) / 2``.

The report's intervals, computed once and remembered in the run folder, are
:class:`agentic_rubrics.rank.intervals.Intervals`.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from typing import Any, Literal

log = logging.getLogger(__name__)

ALGORITHM = "bootstrap-numpy/2"
"""Part of every cache key: a change to how intervals are computed invalidates remembered ones."""
MAX_CACHED = 4096
"""Entries kept in the cache file (the most recently used first); one report uses about 80."""
_CHUNK = 500_000
"""Largest block held at once: (units or resamples) x thresholds for average precision by unit, and
resamples x (pairs or distinct scores) by score (4 MB): memory stays bounded however many tasks."""

Interval = tuple[float, float] | None
AucKind = Literal["roc_auc", "pr_auc"]
Method = Literal["auto", "units", "scores"]


def resample_counts(n: int, n_resamples: int, seed: int) -> Any:
    """``counts[r, i]``: how many times resample ``r`` holds unit ``i`` (the draws of ``bootstrap_ci``),
    as 16-bit integers where they fit (2 bytes per resample and unit: 60 MB for 30,000 tasks at 1000
    resamples); the statistics read them in blocks of resamples, as floats."""
    import numpy as np

    rng = np.random.default_rng(seed)
    counts = np.zeros((n_resamples, n), dtype=np.uint16 if n < 2**16 else np.uint32)
    for r in range(n_resamples):
        # one call per resample, in order: a single call for all would consume the stream otherwise
        counts[r] = np.bincount(rng.integers(0, n, size=n), minlength=n)
    return counts


def _blocks(counts: Any, width: int) -> Any:
    """``(start, block)`` over the resamples, each block as floats of at most about :data:`_CHUNK`
    values (``width``: the values per resample a block's computation holds)."""
    step = max(1, _CHUNK // max(1, width))
    for begin in range(0, counts.shape[0], step):
        yield begin, counts[begin : begin + step].astype(float)


def _interval(values: Any, level: float) -> Interval:
    import numpy as np

    if values.size == 0:
        return None
    alpha = (1 - level) / 2
    lo, hi = np.quantile(values, [alpha, 1 - alpha])
    return float(lo), float(hi)


def mean_interval(counts: Any, values: Sequence[float | None], level: float = 0.95) -> Interval:
    """The interval of the mean of the defined values (``None`` values do not count)."""
    import numpy as np

    if counts.shape[1] == 0:
        return None
    defined = np.array([v is not None for v in values], dtype=float)
    x = np.array([0.0 if v is None else float(v) for v in values])
    sums, kept = np.empty(counts.shape[0]), np.empty(counts.shape[0])
    for begin, block in _blocks(counts, counts.shape[1]):
        sums[begin : begin + len(block)] = block @ x
        kept[begin : begin + len(block)] = block @ defined
    ok = kept > 0
    if not ok.any():
        return None
    means = sums[ok] / kept[ok]
    # a mean lies between the smallest and the largest value; the division's rounding can leave it
    # an ulp outside (constant values would give an interval one ulp wide around them)
    low, high = x[defined > 0].min(), x[defined > 0].max()
    return _interval(np.clip(means, low, high), level)


def auc_interval(
    counts: Any,
    groups: Sequence[Sequence[tuple[float, int]]],
    kind: AucKind,
    level: float = 0.95,
    *,
    method: Method = "auto",
) -> Interval:
    """The interval of ROC-AUC or average precision over the pooled ``(score, label)`` pairs of the
    resampled units (``groups[i]``: unit ``i``'s pairs).

    Two computations give the same values: by unit (a units x units matrix for ROC-AUC, units x
    thresholds for average precision; matrix products, fastest for a few hundred tasks) and by
    distinct score (linear in the pairs, in blocks of resamples: memory bounded for any number of
    tasks). ``auto`` takes the cheaper for the sizes at hand."""
    import numpy as np

    if counts.shape[1] == 0:
        return None
    scores = [np.array([s for s, y in g if y], dtype=float) for g in groups]
    negatives = [np.array([s for s, y in g if not y], dtype=float) for g in groups]
    if any(np.isnan(a).any() for a in (*scores, *negatives)):
        raise ValueError("scores must not be NaN")
    if method == "auto":
        method = _cheaper(scores, negatives, kind)
    if method == "units":
        counts = counts.astype(float)  # at most _MAX_UNITS units: 16 MB at 1000 resamples
        positives = [np.sort(a) for a in scores]
        negatives = [np.sort(a) for a in negatives]
        if kind == "roc_auc":
            values = _roc_by_unit(counts, positives, negatives)
        else:
            values = _average_precision_by_unit(counts, positives, negatives)
    else:
        values = _by_score(counts, scores, negatives, kind)
    return _interval(values[~np.isnan(values)], level)


_LINEAR_COST = 150
"""Matrix-product flops one element operation of the by-score computation is worth (measured: the
by-unit computation's products run about that much faster per operation)."""
_MAX_UNIT_MATRIX = 4_000_000
"""Largest units x units (or units x thresholds) matrix the by-unit computation builds (32 MB)."""
_MAX_UNITS = 2_000
"""Most units the by-unit computation takes (it holds every resample's counts as floats at once)."""


def _cheaper(positives: list[Any], negatives: list[Any], kind: AucKind) -> Method:
    import numpy as np

    units = len(positives)
    pairs = sum(a.size for a in positives) + sum(a.size for a in negatives)
    if kind == "roc_auc":
        by_unit = units * units
    else:
        by_unit = units * (np.unique(np.concatenate(positives)).size if pairs else 0)
    by_score = _LINEAR_COST * 2 * pairs  # pairs plus distinct scores, at most as many
    small = units <= _MAX_UNITS and by_unit <= _MAX_UNIT_MATRIX
    return "units" if small and by_unit <= by_score else "scores"


def _by_score(counts: Any, positives: list[Any], negatives: list[Any], kind: AucKind) -> Any:
    import numpy as np

    owners = [np.repeat(np.arange(len(g)), [a.size for a in g]) for g in (positives, negatives)]
    pos_scores, neg_scores = np.concatenate(positives), np.concatenate(negatives)
    distinct = np.unique(np.concatenate([pos_scores, neg_scores]))  # ascending
    positive = _ValueBins(owners[0], np.searchsorted(distinct, pos_scores), distinct.size)
    negative = _ValueBins(owners[1], np.searchsorted(distinct, neg_scores), distinct.size)
    statistic = _roc if kind == "roc_auc" else _average_precision
    values = np.empty(counts.shape[0])
    width = max(pos_scores.size + neg_scores.size, distinct.size)
    for begin, block in _blocks(counts, width):
        values[begin : begin + len(block)] = statistic(
            positive.weights(block), negative.weights(block)
        )
    return values


class _ValueBins:
    """Pairs of one label grouped by distinct score: ``weights(counts)[r, v]`` is how many times
    resample ``r`` holds a pair of that label scored ``distinct[v]`` (exact: sums of integers)."""

    def __init__(self, owners: Any, at: Any, size: int) -> None:
        import numpy as np

        order = np.argsort(at, kind="stable")
        self.owners, sorted_at = owners[order], at[order]
        self.starts = (
            np.flatnonzero(np.r_[True, sorted_at[1:] != sorted_at[:-1]]) if at.size else at
        )
        self.bins = sorted_at[self.starts] if at.size else at
        self.size = size

    def weights(self, counts: Any) -> Any:
        import numpy as np

        out = np.zeros((counts.shape[0], self.size))
        if self.owners.size:
            out[:, self.bins] = np.add.reduceat(counts[:, self.owners], self.starts, axis=1)
        return out


def _roc(pos: Any, neg: Any) -> Any:
    """Mann-Whitney U / (P N) per resample; NaN where undefined. ``pos``/``neg``: weights per distinct
    score, ascending. U counts each (positive, negative) pair ranked right, ties half: integers and
    half-integers throughout, so exact in float64."""
    import numpy as np

    below = np.cumsum(neg, axis=1) - neg
    u_stat = (pos * (below + 0.5 * neg)).sum(axis=1)
    p, n = pos.sum(axis=1), neg.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((p > 0) & (n > 0), u_stat / (p * n), np.nan)


def _average_precision(pos: Any, neg: Any) -> Any:
    """sum_n (R_n - R_{n-1}) P_n per resample over the thresholds that hold a positive (recall moves
    only there); NaN where no positive."""
    import numpy as np

    tp = np.cumsum(pos[:, ::-1], axis=1)[:, ::-1]  # positives scored at least this threshold
    fp = np.cumsum(neg[:, ::-1], axis=1)[:, ::-1]
    p = pos.sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.where(pos > 0, (pos / p[:, None]) * (tp / (tp + fp)), 0.0)
        return np.where(p > 0, terms.sum(axis=1), np.nan)


def _roc_by_unit(counts: Any, positives: list[Any], negatives: list[Any]) -> Any:
    """Mann-Whitney U / (P N) per resample; NaN where undefined.

    U of a resample is ``c A c`` with ``A[t, u]`` = pairs (a positive of unit t, a negative of unit u)
    ranked right, ties counting half: half-integers throughout, so exact in float64.
    """
    import numpy as np

    units = len(positives)
    owner = np.repeat(np.arange(units), [a.size for a in positives])
    pooled = np.concatenate(positives)
    a = np.zeros((units, units))
    for u, neg in enumerate(negatives):
        if neg.size and pooled.size:
            below = np.searchsorted(neg, pooled, side="left")
            ties = np.searchsorted(neg, pooled, side="right") - below
            a[:, u] = np.bincount(owner, weights=below + 0.5 * ties, minlength=units)
    p = counts @ np.array([x.size for x in positives], dtype=float)
    n = counts @ np.array([x.size for x in negatives], dtype=float)
    u_stat = ((counts @ a) * counts).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((p > 0) & (n > 0), u_stat / (p * n), np.nan)


def _average_precision_by_unit(counts: Any, positives: list[Any], negatives: list[Any]) -> Any:
    """sum_n (R_n - R_{n-1}) P_n per resample over the thresholds that hold a positive (recall moves
    only there), highest first; NaN where no positive."""
    import numpy as np

    p = counts @ np.array([x.size for x in positives], dtype=float)
    pooled = np.concatenate(positives)
    thresholds = np.unique(pooled)[::-1]
    ap = np.zeros(counts.shape[0])
    block = max(1, _CHUNK // max(len(positives), counts.shape[0]))
    for begin in range(0, thresholds.size, block):
        at = thresholds[begin : begin + block]

        def at_least(sorted_units: list[Any], at: Any = at) -> Any:
            """[unit, threshold]: the unit's scores >= the threshold."""
            return np.array([x.size - np.searchsorted(x, at, side="left") for x in sorted_units])

        def exactly(sorted_units: list[Any], at: Any = at) -> Any:
            return np.array(
                [
                    np.searchsorted(x, at, side="right") - np.searchsorted(x, at, side="left")
                    for x in sorted_units
                ]
            )

        tp = counts @ at_least(positives)
        fp = counts @ at_least(negatives)
        new = counts @ exactly(positives)
        with np.errstate(divide="ignore", invalid="ignore"):
            terms = np.where(new > 0, (new / p[:, None]) * (tp / (tp + fp)), 0.0)
        ap += terms.sum(axis=1)
    return np.where(p > 0, ap, np.nan)


def finite(value: Any) -> float | None:
    """A finite float of a JSON number (``None``: anything else, an integer too large included)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        x = float(value)  # an integer of 400 digits: OverflowError
    except OverflowError:
        return None
    return x if math.isfinite(x) else None
