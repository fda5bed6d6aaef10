"""The report's numpy intervals against the pure-Python bootstrap they replace, and their cache."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.bootstrap import auc_interval, mean_interval, resample_counts
from agentic_rubrics.rank.intervals import Intervals

T = TypeVar("T")


def reference_bootstrap_ci(
    units: Sequence[T],
    statistic: Callable[[Sequence[T]], float | None],
    *,
    n_resamples: int = 1000,
    level: float = 0.95,
    seed: int = 0,
) -> tuple[float, float] | None:
    """The report's pure-Python percentile bootstrap before numpy, kept verbatim as the reference."""
    if not units:
        return None
    import numpy as np

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


def pooled(fn: Callable[..., float | None]) -> Callable[[Sequence[list[tuple[float, int]]]], Any]:
    """The report's ROC/PR statistic: pool the resampled tasks' (score, label) pairs."""

    def statistic(groups: Sequence[list[tuple[float, int]]]) -> float | None:
        pairs = [p for g in groups for p in g]
        if not pairs:
            return None
        return fn([s for s, _ in pairs], [y for _, y in pairs])

    return statistic


def random_groups(rng: random.Random, n: int, levels: int) -> list[list[tuple[float, int]]]:
    """Tasks of 0-15 pairs, few distinct scores (ties everywhere), some tasks all one label."""
    out = []
    for _ in range(n):
        p = rng.choice([0.0, 0.2, 0.5, 1.0])
        size = rng.choice([0, 1, 2, 5, 13, 15])
        out.append([(rng.randrange(levels) / levels, int(rng.random() < p)) for _ in range(size)])
    return out


def close(a: tuple[float, float] | None, b: tuple[float, float] | None) -> bool:
    if a is None or b is None:
        return a is b
    return abs(a[0] - b[0]) <= 1e-12 and abs(a[1] - b[1]) <= 1e-12


@pytest.mark.parametrize("n", [1, 2, 3, 7, 40, 201])
def test_resamples_are_those_of_the_pure_python_bootstrap(n: int) -> None:
    import numpy as np

    rng = np.random.default_rng(5)
    counts = resample_counts(n, 50, 5)
    for r in range(50):
        idx = rng.integers(0, n, size=n)
        assert counts[r].tolist() == np.bincount(idx, minlength=n).tolist()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_mean_intervals_equal_the_pure_python_ones(seed: int) -> None:
    rng = random.Random(seed)
    for n in (1, 2, 5, 60, 202):
        values: list[float | None] = [rng.choice([0.0, 1.0, rng.random()]) for _ in range(n)]
        if n > 2:
            values[rng.randrange(n)] = None  # undefined for one task: ignored by the mean
        expected = reference_bootstrap_ci(values, metrics.mean, n_resamples=300, seed=seed)
        found = mean_interval(resample_counts(n, 300, seed), values)
        assert close(found, expected), (n, found, expected)
    # the statistic undefined on every resample
    assert mean_interval(resample_counts(3, 20, 0), [None, None, None]) is None


@pytest.mark.parametrize("method", ["auto", "units", "scores"])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("kind", ["roc_auc", "pr_auc"])
def test_auc_intervals_equal_the_pure_python_ones(seed: int, kind: str, method: str) -> None:
    """By unit and by distinct score (what auto picks for many tasks), the same intervals."""
    fn = metrics.roc_auc if kind == "roc_auc" else metrics.pr_auc
    rng = random.Random(seed)
    for n, levels in ((1, 3), (3, 2), (12, 4), (50, 30), (90, 1000)):
        groups = random_groups(rng, n, levels)
        expected = reference_bootstrap_ci(groups, pooled(fn), n_resamples=100, seed=seed)
        counts = resample_counts(n, 100, seed)
        found = auc_interval(counts, groups, kind, method=method)  # type: ignore[arg-type]
        assert close(found, expected), (kind, n, found, expected)


def test_many_tasks_are_computed_by_score_in_bounded_memory() -> None:
    """A report of thousands of tasks: the by-unit matrix would grow with the square of the tasks;
    auto computes by distinct score, and gives the by-unit values."""
    import tracemalloc

    rng = random.Random(3)
    groups = [[(rng.random(), int(rng.random() < 0.3)) for _ in range(4)] for _ in range(3000)]
    counts = resample_counts(3000, 40, 0)
    tracemalloc.start()
    found = {k: auc_interval(counts, groups, k) for k in ("roc_auc", "pr_auc")}  # type: ignore[misc]
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 40e6  # a 3000 x 3000 matrix alone is 72 MB
    for kind, interval in found.items():
        assert close(interval, auc_interval(counts, groups, kind, method="units"))  # type: ignore[arg-type]


def test_an_undefined_auc_and_nan_scores() -> None:
    only_negatives = [[(0.1, 0), (0.4, 0)], [(0.2, 0)]]
    counts = resample_counts(2, 30, 0)
    assert auc_interval(counts, only_negatives, "roc_auc") is None
    assert auc_interval(counts, only_negatives, "pr_auc") is None
    assert auc_interval(counts, [[], []], "roc_auc") is None
    with pytest.raises(ValueError, match="NaN"):
        auc_interval(counts, [[(float("nan"), 1)], [(0.1, 0)]], "roc_auc")


def test_intervals_are_remembered_and_recomputed_when_an_input_changes(tmp_path: Path) -> None:
    cache = tmp_path / "intervals.json"
    values = [0.0, 1.0, 0.5, 1.0, 0.0, 0.25]
    groups = random_groups(random.Random(4), 20, 5)
    first = Intervals(200, cache_path=cache)
    mean_ci, roc_ci = first.mean(values), first.auc(groups, "roc_auc")
    assert first.computed == 2
    first.save()
    assert cache.exists()

    again = Intervals(200, cache_path=cache)
    assert again.mean(values) == mean_ci and again.auc(groups, "roc_auc") == roc_ci
    assert again.computed == 0  # a rerun on unchanged inputs computes nothing
    assert again.auc(groups, "pr_auc") is not None and again.computed == 1  # another statistic
    changed = [*values[:-1], 1.0]
    assert again.mean(changed) == mean_interval(resample_counts(6, 200, 0), changed)
    assert again.computed == 2
    other_resamples = Intervals(100, cache_path=cache)
    other_resamples.mean(values)
    assert other_resamples.computed == 1


@pytest.mark.parametrize(
    "content",
    [
        "not json",
        json.dumps({"schema": "bootstrap-numpy/0", "intervals": {}}),
        "[1, 2]",
        "[" * 100_000 + "]" * 100_000,  # deeper than the JSON decoder's recursion
        json.dumps({"schema": "bootstrap-numpy/2", "intervals": {"k": [10**400, 1]}}),
        None,  # a tampered value: replaced by the computed one
    ],
)
def test_an_unreadable_or_tampered_cache_is_recomputed(tmp_path: Path, content: str | None) -> None:
    cache = tmp_path / "intervals.json"
    values = [0.0, 1.0, 1.0, 0.0]
    honest = Intervals(100, cache_path=cache)
    expected = honest.mean(values)
    honest.save()
    if content is None:
        doc = json.loads(cache.read_text())
        (key,) = doc["intervals"]
        for bad in (
            [0.9, 0.1],
            ["0", 1],
            [float("inf"), 1.0],
            [True, 1.0],
            {"a": 1},
            [10**400, 1.0],  # a float() overflow
            [-5.0, 42.0],  # well formed, but no mean of these values lies there
            [0.5, 1.5],
            None,  # blank, where the mean is defined
            [1.0, 1.0],  # a range the mean can take, without the mean of these values (0.5)
            [0.0, 0.25],
        ):
            doc["intervals"][key] = bad
            cache.write_text(json.dumps(doc))
            reread = Intervals(100, cache_path=cache)
            assert reread.mean(values) == expected and reread.computed == 1
        return
    cache.write_text(content)
    reread = Intervals(100, cache_path=cache)
    assert reread.mean(values) == expected and reread.computed == 1


def test_a_remembered_auc_interval_must_fit_the_data(tmp_path: Path) -> None:
    """A blank or an interval without the statistic's own value is computed again; a blank where the
    statistic is undefined (one class only) is kept."""
    cache = tmp_path / "intervals.json"
    groups = random_groups(random.Random(7), 12, 4)
    one_class = [[(s, 0) for s, _ in g] for g in groups]
    honest = Intervals(100, cache_path=cache)
    expected = {kind: honest.auc(groups, kind) for kind in ("roc_auc", "pr_auc")}
    assert honest.auc(one_class, "roc_auc") is None
    honest.save()
    kept = Intervals(100, cache_path=cache)
    assert kept.auc(one_class, "roc_auc") is None and kept.computed == 0
    doc = json.loads(cache.read_text())
    for bad in (None, [1.0, 1.0], [0.0, 0.0]):
        doc["intervals"] = {k: (v if v is None else bad) for k, v in doc["intervals"].items()}
        cache.write_text(json.dumps(doc))
        reread = Intervals(100, cache_path=cache)
        assert {kind: reread.auc(groups, kind) for kind in expected} == expected
        assert reread.computed == 2, bad
        assert reread.auc(one_class, "roc_auc") is None and reread.computed == 2


def test_no_resamples_means_no_interval(tmp_path: Path) -> None:
    off = Intervals(0, cache_path=tmp_path / "intervals.json")
    assert off.mean([1.0, 0.0]) is None and off.auc([[(0.1, 1), (0.2, 0)]], "roc_auc") is None
    off.save()
    assert not (tmp_path / "intervals.json").exists()
