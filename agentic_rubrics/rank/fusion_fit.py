"""Fusion weights fitted on labelled pools, chosen and measured by nested cross-validation.

- **The fit** (:func:`fit_weights`): a conditional logit over each pool's candidates — per pool, the
  softmax of ``w·z`` over its candidates, ``z`` the signals normalised per pool
  (:func:`agentic_rubrics.rank.fusion.normalise`), maximising the probability of the resolved ones,
  with an L2 penalty ``λ‖w‖²`` on the mean loss. Only a pool's candidates with every signal enter it
  (a missing value is never read as anything); at ranking time the fusion renormalises over the signals
  a candidate has. A pool with no resolved or no unresolved candidate says nothing and is left out.
- **The choice** (:func:`choose`): among :func:`configurations` — each signal alone (its direction
  fitted), then every signal together at λ = 1, 0.1, 0.01 — the one with the best mean Best@K over
  cross-validation folds by group (repository); ties go to the earlier, simpler one.
- **The evidence** (:func:`cross_validate`): nested cross-validation. Outer folds by group; within
  each, the choice above runs on the training part alone (its own inner folds) and the fitted fusion
  ranks the held-out pools. Every figure of :func:`evidence` is computed on those held-out pools only,
  beside self-consistency on the same pools, paired, with 95% bootstrap intervals over pools.

Folds are by repository when the pools come from at least :data:`MIN_GROUPS` repositories (a new
repository is what a fitted selector meets), else by instance.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.fusion import Fusion, Values, fuse, normalise
from agentic_rubrics.rank.intervals import Intervals

MIN_INSTANCES = 10
"""Labelled instances, each with a resolved and an unresolved candidate, a fit needs at least."""
MIN_GROUPS = 3
"""Repositories below which folds are by instance instead."""
OUTER_FOLDS = 10
INNER_FOLDS = 5
LAMBDAS = (1.0, 0.1, 0.01)
"""L2 penalties tried for the fusion of every signal, strongest first."""
BASELINE = "self_consistency"


@dataclass
class Pool:
    """One task's labelled candidates and every signal's values on them."""

    instance_id: str
    group: str
    """What folds keep together: the repository."""
    labels: dict[str, bool]
    signals: dict[str, Values]
    _normalised: dict[tuple[str, str], dict[str, float | None]] = field(
        default_factory=dict, repr=False, compare=False
    )

    def normalised(self, signal: str, method: str) -> dict[str, float | None]:
        """A signal's values on the labelled candidates, normalised over them (computed once)."""
        key = (signal, method)
        if key not in self._normalised:
            values = self.signals[signal]
            self._normalised[key] = normalise({c: values.get(c) for c in self.labels}, method)
        return self._normalised[key]

    @property
    def informative(self) -> bool:
        """It holds a resolved and an unresolved candidate (only such a pool can inform a ranking)."""
        return any(self.labels.values()) and not all(self.labels.values())


@dataclass(frozen=True)
class Config:
    """One candidate of the choice: which signals, and the penalty."""

    signals: tuple[str, ...]
    lam: float

    def describe(self) -> str:
        if len(self.signals) == 1:
            return f"{self.signals[0]} alone"
        return f"{len(self.signals)} signals, lambda {self.lam:g}"


def configurations(signals: Sequence[str]) -> list[Config]:
    """What :func:`choose` compares, simplest first."""
    singles = [Config((s,), 1.0) for s in signals]
    return singles + ([Config(tuple(signals), lam) for lam in LAMBDAS] if len(signals) > 1 else [])


def _matrix(pools: Sequence[Pool], signals: Sequence[str], method: str) -> tuple[Any, Any, Any]:
    """The complete-case rows of the informative pools: features, pool index, resolved."""
    import numpy as np

    rows: list[list[float]] = []
    index: list[int] = []
    positive: list[bool] = []
    for n, p in enumerate(pools):
        z = {s: p.normalised(s, method) for s in signals}
        ids = [c for c in p.labels if all(z[s][c] is not None for s in signals)]
        ys = [p.labels[c] for c in ids]
        if not any(ys) or all(ys):
            continue
        for c in ids:
            rows.append([float(z[s][c]) for s in signals])  # type: ignore[arg-type]
            index.append(n)
            positive.append(p.labels[c])
    return np.array(rows, dtype=float), np.array(index), np.array(positive, dtype=bool)


def fit_weights(pools: Sequence[Pool], config: Config, method: str = "rank") -> Fusion:
    """The conditional logit's weights for ``config`` on ``pools`` (see the module's docstring)."""
    import numpy as np
    from scipy.optimize import minimize

    x, index, positive = _matrix(pools, config.signals, method)
    d = len(config.signals)
    if len(x) == 0:
        return Fusion(weights=dict.fromkeys(config.signals, 1.0), method=method)
    _, task = np.unique(index, return_inverse=True)
    tasks = int(task.max()) + 1

    def loss(w: Any) -> tuple[float, Any]:
        u = x @ w
        top = np.full(tasks, -np.inf)
        np.maximum.at(top, task, u)
        e = np.exp(u - top[task])
        every = np.bincount(task, e, tasks)
        right = np.bincount(task, e * positive, tasks)
        value = -(np.log(right) - np.log(every)).sum() / tasks + config.lam * (w @ w)
        a = e * positive / right[task] - e / every[task]
        return float(value), -(a @ x) / tasks + 2 * config.lam * w

    found = minimize(loss, np.zeros(d), jac=True, method="L-BFGS-B")
    weights = {s: round(float(v), 6) for s, v in zip(config.signals, found.x, strict=True)}
    if not any(weights.values()):  # the signals say nothing here: keep them, equally
        weights = dict.fromkeys(config.signals, 1.0)
    return Fusion(weights=weights, method=method)


def best_at(pool: Pool, ranking: Values, k: int) -> float:
    """Best@K of a ranking on one pool (K at least the pool: the whole pool)."""
    ids = list(pool.labels)
    return (
        metrics.best_at_k([ranking.get(c) for c in ids], [int(pool.labels[c]) for c in ids], k)
        or 0.0
    )


def ranked(pool: Pool, fusion: Fusion) -> Values:
    return fuse(pool.signals, fusion, pool.labels)


def folds(pools: Sequence[Pool], n_folds: int) -> list[list[int]]:
    """Pool indices in ``n_folds`` folds by group: largest groups first, each to the smallest fold."""
    groups: dict[str, list[int]] = {}
    for n, p in enumerate(pools):
        groups.setdefault(p.group, []).append(n)
    out: list[list[int]] = [[] for _ in range(min(n_folds, len(groups)))]
    for _, members in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        min(out, key=len).extend(members)
    return [sorted(f) for f in out]


def _split(pools: Sequence[Pool], fold: list[int]) -> tuple[list[Pool], list[Pool]]:
    held = set(fold)
    return [p for n, p in enumerate(pools) if n not in held], [pools[n] for n in fold]


def choose(
    pools: Sequence[Pool], signals: Sequence[str], k: int, method: str = "rank"
) -> tuple[Config, dict[str, float]]:
    """The configuration with the best cross-validated mean Best@K on ``pools`` (folds by group),
    and each one's score."""
    split = folds(pools, INNER_FOLDS)
    scores: dict[Config, float] = {}
    for config in configurations(signals):
        got: list[float] = []
        for fold in split:
            train, test = _split(pools, fold)
            fusion = fit_weights(train, config, method)
            got += [best_at(p, ranked(p, fusion), k) for p in test]
        scores[config] = sum(got) / len(got)
    best = max(scores.values())
    chosen = next(c for c, v in scores.items() if v >= best - 1e-12)
    return chosen, {c.describe(): round(v, 6) for c, v in scores.items()}


def fit(
    pools: Sequence[Pool], signals: Sequence[str], k: int, method: str = "rank"
) -> tuple[Fusion, Config, dict[str, float]]:
    """The configuration chosen by cross-validation on every pool, refitted on every pool."""
    config, scores = choose(pools, signals, k, method)
    return fit_weights(pools, config, method), config, scores


def cross_validate(
    pools: Sequence[Pool], signals: Sequence[str], k: int, method: str = "rank"
) -> tuple[list[Values], list[str]]:
    """Nested cross-validation: each pool's values from a fusion chosen and fitted without its fold,
    and the configuration each outer fold chose."""
    out: list[Values] = [{} for _ in pools]
    chosen: list[str] = []
    for fold in folds(pools, OUTER_FOLDS):
        train, _ = _split(pools, fold)
        fusion, config, _ = fit(train, signals, k, method)
        chosen.append(config.describe())
        for n in fold:
            out[n] = ranked(pools[n], fusion)
    return out, chosen


def check_enough(pools: Sequence[Pool]) -> None:
    """Refuse a fit with no resolved candidate or too few informative instances (a ``DataError``
    saying how many it needs)."""
    resolved = sum(1 for p in pools for v in p.labels.values() if v)
    if not resolved:
        raise DataError(
            f"no resolved candidate among {sum(len(p.labels) for p in pools)} labelled candidates of"
            f" {len(pools)} instances: a fit needs labelled runs where some candidates resolve the"
            f" issue (at least {MIN_INSTANCES} instances with a resolved and an unresolved one)"
        )
    informative = {p.instance_id for p in pools if p.informative}
    if len(informative) < MIN_INSTANCES:
        raise DataError(
            f"{len(informative)} labelled instance(s) with both a resolved and an unresolved"
            f" candidate; a fit needs at least {MIN_INSTANCES} (instances whose candidates all"
            f" resolve, or none does, cannot inform a ranking): label more runs"
        )


def grouped(pools: Sequence[Pool]) -> tuple[list[Pool], str]:
    """The pools with the groups folds will keep together, and what those are."""
    if len({p.group for p in pools}) >= MIN_GROUPS:
        return list(pools), "repository"
    return [Pool(p.instance_id, p.instance_id, p.labels, p.signals) for p in pools], "instance"


def evidence(
    pools: Sequence[Pool],
    values: Sequence[Values],
    *,
    k: int,
    resamples: int = 1000,
    seed: int = 0,
    baseline: Callable[[Pool], Values] | None = None,
) -> dict[str, Any]:
    """Held-out figures of ``values`` (one ranking per pool) beside self-consistency on the same pools:
    Best@K and ROC-AUC with 95% bootstrap intervals over pools, and the paired Best@K difference."""
    cis = Intervals(resamples, seed=seed)
    base = baseline or (lambda p: p.signals.get(BASELINE, {}))

    def figures(ranking: Callable[[int], Values]) -> tuple[dict[str, Any], list[float]]:
        best = [best_at(p, ranking(n), k) for n, p in enumerate(pools)]
        groups = [
            [(float(v), int(p.labels[c])) for c in p.labels if (v := ranking(n).get(c)) is not None]
            for n, p in enumerate(pools)
        ]
        flat = [pair for g in groups for pair in g]
        auc = metrics.roc_auc([s for s, _ in flat], [y for _, y in flat]) if flat else None
        ci, auc_ci = cis.mean(best), cis.auc(groups, "roc_auc")
        return {
            f"best_at_{k}": round(sum(best) / len(best), 6),
            f"best_at_{k}_ci": [round(x, 6) for x in ci] if ci else None,
            "roc_auc": None if auc is None else round(auc, 6),
            "roc_auc_ci": [round(x, 6) for x in auc_ci] if auc_ci else None,
        }, best

    fitted, a = figures(lambda n: values[n])
    reference, b = figures(lambda n: base(pools[n]))
    diff = [x - y for x, y in zip(a, b, strict=True)]
    diff_ci = cis.mean(diff)
    return {
        "pools": len(pools),
        "k": k,
        "fitted": fitted,
        BASELINE: reference,
        "difference": {
            f"best_at_{k}": round(sum(diff) / len(diff), 6),
            "ci": [round(x, 6) for x in diff_ci] if diff_ci else None,
            "better_in": sum(1 for d in diff if d > 1e-12),
            "worse_in": sum(1 for d in diff if d < -1e-12),
        },
        "beats_self_consistency": bool(diff_ci and diff_ci[0] > 0),
    }
