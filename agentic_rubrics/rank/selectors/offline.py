"""The offline selector: the no-model ranking, static rubric S with agreement and the patch's shape."""

from __future__ import annotations

from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.rank.agreement import line_agreement
from agentic_rubrics.rank.offline import offline_ranking, patch_features
from agentic_rubrics.rank.selectors import BaseSelector, FeatureInput, Ranking, RankingInput


class OfflineSelector(BaseSelector):
    name = "offline"
    description = (
        "the no-model ranking: rubric S with agreement across candidates and the patch's shape"
    )

    async def features(self, given: FeatureInput) -> dict[str, Any]:
        agreement, _ = given.once(line_agreement)  # shared with self_consistency
        return {"offline_features": patch_features(given.patches, agreement)}

    def ranking(self, task: RankingInput) -> Ranking:
        features = task.baselines.get("offline_features")
        if features is None:
            raise DataError(f"{task.instance_id}: no offline features were recorded in this run")
        return offline_ranking(features, {cid: s.score for cid, s in task.scores.items()})
