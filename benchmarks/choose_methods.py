"""The methods ``choose_default.py`` compares, each as a fit on training pools that returns a ranking.

A method's ``fit(train, train_slices)`` sees only the training repositories' instances (full pools) and
their single-generator slices; any choice it makes (a penalty, which signals) is made on inner folds by
repository of those alone. Methods without a fit ignore them. ``eligible``: it may become the default
(the ``*_shipped`` ones and ``default`` carry weights fitted on these very files: in-sample, reference
only).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

from content_fit import fit_weights
from default_ranking import DEFAULT, library_ranking

from agentic_rubrics.rank import fusion_fit, metrics
from agentic_rubrics.rank.agreement import line_agreement
from agentic_rubrics.rank.content import CONTENT_FEATURES, ContentWeights, content_ranking
from agentic_rubrics.rank.fusion import fuse
from agentic_rubrics.rank.offline import OFFLINE_FEATURES, offline_ranking
from agentic_rubrics.report.fit import SIGNALS

Ranker = Callable[[Any], dict[str, float | None]]
CS = (0.1, 1.0, 10.0)
"""Logistic regression's inverse penalty, chosen in inner folds."""


@dataclass(frozen=True)
class Method:
    name: str
    eligible: bool
    what: str
    fit: Callable[[list[Any], list[Any]], tuple[Ranker, str]]


def fixed(ranker: Ranker) -> Callable[[list[Any], list[Any]], tuple[Ranker, str]]:
    return lambda train, slices: (ranker, "")


_POOLS: dict[int, fusion_fit.Pool] = {}


def as_pool(inst: Any) -> fusion_fit.Pool:
    """A benchmark pool as the library's fitting reads a run's task (its signals), made once."""
    if id(inst) not in _POOLS:
        agreement, _ = line_agreement(inst.patches)
        signals: dict[str, Any] = {"self_consistency": agreement, "rubric": dict(inst.s)}
        for s in SIGNALS:
            if s.startswith("content."):
                key = s.removeprefix("content.")
                signals[s] = {c: (inst.features.get(c) or {}).get(key) for c in inst.labels}
        labels = {c: bool(v) for c, v in inst.labels.items()}
        _POOLS[id(inst)] = fusion_fit.Pool(inst.instance_id, inst.repo, labels, signals)
    return _POOLS[id(inst)]


def fitted_fusion(train: list[Any], slices: list[Any]) -> tuple[Ranker, str]:
    """The library's ``fit``: signals and penalty chosen on inner folds by repository."""
    pools = [as_pool(p) for p in [*train, *slices]]
    fusion, config, _ = fusion_fit.fit(pools, list(SIGNALS), 16)
    weights = ", ".join(f"{s} {w:+.2f}" for s, w in fusion.weights.items())
    return (lambda p: fuse(as_pool(p).signals, fusion, p.labels)), f"{config.describe()}: {weights}"


def _inner_best(
    train: Sequence[Any], slices: Sequence[Any], fit: Callable, rank: Callable
) -> float:
    """Mean Best@16 over inner folds by repository (full pools and slices held out together)."""
    groups = fusion_fit.folds(
        [SimpleNamespace(group=i.repo) for i in train], fusion_fit.INNER_FOLDS
    )
    got = []
    for fold in groups:
        held = {train[n].repo for n in fold}
        model = fit(
            [i for i in train if i.repo not in held], [s for s in slices if s.repo not in held]
        )
        for p in [*(train[n] for n in fold), *(s for s in slices if s.repo in held)]:
            ids = list(p.labels)
            r = rank(model, p)
            got.append(
                metrics.best_at_k([r.get(c) for c in ids], [int(p.labels[c]) for c in ids], 16)
            )
    return sum(g or 0.0 for g in got) / len(got)


def _logistic(features: Sequence[str], on_slices: bool, rank: Callable) -> Callable:
    """Logistic regression on standardised features (content_fit.fit_weights), C chosen inside."""

    def fit_with(c: float) -> Callable[[list[Any], list[Any]], Any]:
        def fit(train: list[Any], slices: list[Any]) -> Any:
            pools = slices if on_slices else train
            rows = [r for p in pools for r in p.rows.values()]
            ys = [int(p.labels[cid]) for p in pools for cid in p.rows]
            return fit_weights(rows, ys, features, c)

        return fit

    def method(train: list[Any], slices: list[Any]) -> tuple[Ranker, str]:
        scores = {c: _inner_best(train, slices, fit_with(c), rank) for c in CS}
        c = max(CS, key=lambda x: (scores[x], -x))
        model = fit_with(c)(train, slices)
        return (lambda p: rank(model, p)), f"C {c:g}"

    return method


def _content(model: tuple[dict[str, float], float], p: Any) -> dict[str, float | None]:
    return content_ranking(p.features, p.s, ContentWeights(model[0], model[1], {}))


def _offline(model: tuple[dict[str, float], float], p: Any) -> dict[str, float | None]:
    return offline_ranking(p.features, p.s, model[0], model[1])


METHODS = [
    Method("random", False, "a uniform pick", fixed(lambda p: dict.fromkeys(p.labels, 0.0))),
    Method(
        "self_consistency",
        False,
        "the baseline: mean line agreement with the pool's others (nothing fitted)",
        fixed(lambda p: library_ranking("self_consistency", p)),
    ),
    Method(
        "static_rubric",
        False,
        "the static rubric's S by its tiers (grounded where the repository was at hand)",
        fixed(lambda p: library_ranking("rubric", p)),
    ),
    Method(
        "default",
        False,
        f"the library's no-model default as shipped ({DEFAULT})",
        fixed(lambda p: library_ranking(DEFAULT, p)),
    ),
    Method(
        "offline_content_shipped",
        False,
        "offline_content with its shipped weights (fitted on Lite: in-sample there)",
        fixed(lambda p: library_ranking("offline_content", p)),
    ),
    Method(
        "offline_shipped",
        False,
        "offline with its shipped weights (fitted on Lite: in-sample there)",
        fixed(lambda p: library_ranking("offline", p)),
    ),
    Method(
        "fusion_sc_rubric",
        True,
        "fusion:self_consistency+rubric, rank-normalised, equal weights (nothing fitted)",
        fixed(lambda p: library_ranking("fusion:self_consistency+rubric", p)),
    ),
    Method(
        "rrf_sc_rubric",
        True,
        "rrf:self_consistency+rubric, reciprocal rank fusion, equal weights (nothing fitted)",
        fixed(lambda p: library_ranking("rrf:self_consistency+rubric", p)),
    ),
    Method(
        "behaviour_consensus",
        True,
        "behaviour_consensus: the largest weighted group of candidates whose changes do the same"
        " thing (normal forms; nothing fitted)",
        fixed(lambda p: library_ranking("behaviour_consensus", p)),
    ),
    Method(
        "offline_content_refit",
        True,
        "offline_content's features and fit (single-generator pools), C chosen in inner folds",
        _logistic(CONTENT_FEATURES, True, _content),
    ),
    Method(
        "offline_refit",
        True,
        "offline's features (patch shape included) fitted on full pools, C chosen in inner folds",
        _logistic(OFFLINE_FEATURES, False, _offline),
    ),
    Method(
        "fusion_fitted",
        True,
        "agentic-rubrics fit's procedure: fusion of self-consistency, S and the content features,"
        " signals and penalty chosen in inner folds, on full pools and slices",
        fitted_fusion,
    ),
]
