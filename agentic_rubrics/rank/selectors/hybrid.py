"""The hybrid selector: the rubric's S and the tests' pass rate fused linearly.

``hybrid = w·S' + (1 - w)·P'`` per task, where ``S'`` and ``P'`` are S and the pass rate min-max
normalised over the task's candidates (:mod:`agentic_rubrics.rank.fusion`; a candidate missing one of
them is ranked on the other, renormalised; missing both, it ranks last). The weight:

- with labels, on at least :data:`~agentic_rubrics.rank.fusion_fit.MIN_INSTANCES` labelled instances
  holding a resolved and an unresolved candidate, chosen by cross-validation over instances and fitted
  (:func:`agentic_rubrics.rank.fusion_fit.fit`: each signal alone or both, by cross-validated Best@K
  at K = the largest pool: the pick among all candidates);
  the report then says the run's figures for it are in-sample;
- otherwise :data:`DEFAULT_RUBRIC_WEIGHT`.

Either way report.json states it (``fitted_weights.hybrid``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.rank.fusion import Fusion, Values, fuse
from agentic_rubrics.rank.selectors import BaseSelector, Ranking, RankingInput
from agentic_rubrics.rank.selectors.tests import pass_rates

DEFAULT_RUBRIC_WEIGHT = 0.5
"""``w`` without labels enough to choose it: S and the pass rate count the same."""
METHOD = "minmax"


def _default() -> Fusion:
    return Fusion({"rubric": DEFAULT_RUBRIC_WEIGHT, "tests": 1 - DEFAULT_RUBRIC_WEIGHT}, METHOD)


def _signals(task: RankingInput) -> dict[str, Values]:
    return {"rubric": {c: s.score for c, s in task.scores.items()}, "tests": pass_rates(task)}


class HybridSelector(BaseSelector):
    """See the module's docstring."""

    name = "hybrid"
    description = (
        "rubric S and the tests' pass rate, min-max normalised per task and fused linearly; the"
        " weight chosen by cross-validation over labelled instances, else 0.5"
    )

    def __init__(self) -> None:
        self.fusion = _default()
        self.chosen: dict[str, Any] = {"source": "default", "rubric_weight": DEFAULT_RUBRIC_WEIGHT}
        self.fit_instances: set[str] = set()

    def prepare(self, tasks: Sequence[Any]) -> None:
        """Choose the weight on the labelled tasks (each with ``labels``, ``progress.repo``,
        ``scores`` and ``baselines``), or keep the default when they are too few."""
        from agentic_rubrics.rank import fusion_fit

        self.fusion, self.fit_instances = _default(), set()
        self.chosen = {"source": "default", "rubric_weight": DEFAULT_RUBRIC_WEIGHT}
        pools = []
        for t in tasks:
            labels = {c: bool(v) for c, v in t.labels.items() if v is not None}
            try:
                signals = _signals(t)
            except DataError:
                continue
            pools.append(fusion_fit.Pool(t.instance_id, t.progress.repo, labels, signals))
        informative = [p for p in pools if p.informative]
        if len(informative) < fusion_fit.MIN_INSTANCES:
            self.chosen["why"] = (
                f"{len(informative)} labelled instance(s) with a resolved and an unresolved candidate"
                f" and a tests record; choosing the weight needs {fusion_fit.MIN_INSTANCES}"
            )
            return
        grouped, by = fusion_fit.grouped(informative)
        k = max(len(p.labels) for p in informative)  # the pick among all (Best@1 ranks nothing)
        fusion, config, scores = fusion_fit.fit(grouped, ["rubric", "tests"], k, METHOD)
        total = sum(abs(w) for w in fusion.weights.values()) or 1.0
        self.fusion = fusion
        self.fit_instances = {p.instance_id for p in informative}
        self.chosen = {
            "source": "cross_validation",
            "rubric_weight": round(abs(fusion.weights.get("rubric", 0.0)) / total, 6),
            "weights": {k: round(v, 6) for k, v in fusion.weights.items()},
            "configuration": config.describe(),
            "k": k,
            "cv_best_at_k": scores,
            "folds_by": by,
            "instances": len(informative),
        }

    def ranking(self, task: RankingInput) -> Ranking:
        fused = fuse(_signals(task), self.fusion, task.scores)
        return {c: None if s.empty_patch else fused[c] for c, s in task.scores.items()}

    def fitted_on(self, instance_ids: list[str]) -> dict[str, Any] | None:
        in_fit = len(self.fit_instances & set(instance_ids))
        return {
            "data": "this run's labelled instances",
            **self.chosen,
            "run_instances_in_fit": in_fit,
        }
