"""The offline_content selector: the no-model ranking on what a patch does to the code.

Features (:mod:`agentic_rubrics.rank.content`): line, file and function agreement with the other candidates,
the post-image findings when the task's tree is at hand, the rubric S, each also relative to the pool.
None that mainly identifies the patch's source (size, files, new files, touching tests): a user's pool
is one agent's samples. Ranked with the shipped weights (fitted on single-generator pools), whose
provenance the report states.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_rubrics.rank.agreement import line_agreement
from agentic_rubrics.rank.content import (
    ContentWeights,
    content_features,
    content_ranking,
    read_weights,
    shipped_weights,
)
from agentic_rubrics.rank.selectors import BaseSelector, FeatureInput, Ranking, RankingInput, stored


class OfflineContentSelector(BaseSelector):
    name = "offline_content"
    description = (
        "the no-model ranking on content: rubric S, line/file/function agreement and the post-image"
        " findings, weights fitted on single-generator pools"
    )

    def __init__(self, weights_file: Path | None = None) -> None:
        self._file = weights_file

    @property
    def weights(self) -> ContentWeights:
        """The shipped weights, or those of the file given to the constructor."""
        return shipped_weights() if self._file is None else read_weights(self._file)

    async def features(self, given: FeatureInput) -> dict[str, Any]:
        agreement, _ = given.once(line_agreement)  # shared with self_consistency and offline
        tree = given.repository is not None and given.repository.root is not None
        post, analysed = await given.post_rows()
        return {
            "content_features": content_features(given.patches, post, agreement),
            "content_postimage": {"tree": tree, "analysed": analysed},
        }

    def ranking(self, task: RankingInput) -> Ranking:
        features = stored(task, "content_features", self.name)
        return content_ranking(features, {c: s.score for c, s in task.scores.items()}, self.weights)

    def fitted_on(self, instance_ids: list[str]) -> dict[str, Any] | None:
        w = self.weights
        return {**w.fitted_on, "run_instances_in_fit": w.in_fit(instance_ids)}
