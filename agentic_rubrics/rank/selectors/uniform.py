"""The random selector: every candidate tied, so the pick is the uniform tie-break."""

from __future__ import annotations

from agentic_rubrics.rank.rerank import random_ranking
from agentic_rubrics.rank.selectors import BaseSelector, Ranking, RankingInput


class RandomSelector(BaseSelector):
    name = "random"
    description = "every candidate tied: a uniform pick (expected Best@K = Random@K)"
    guarded = False  # the chance baseline: what a pick of any candidate gives

    def ranking(self, task: RankingInput) -> Ranking:
        return random_ranking(list(task.scores))
