"""The rubric selector: S from the rubric's verdicts, ranked by tiers (see :mod:`agentic_rubrics.rank.scoring`)."""

from __future__ import annotations

from agentic_rubrics.rank.rerank import rubric_ranking
from agentic_rubrics.rank.selectors import BaseSelector, Ranking, RankingInput


class RubricSelector(BaseSelector):
    name = "rubric"
    description = (
        "S from the rubric's verdicts, by the ranking tiers"
        " (empty < no verdict < failed gate < inconclusive < scored)"
    )

    def ranking(self, task: RankingInput) -> Ranking:
        return rubric_ranking(task.scores)

    def values(self, task: RankingInput, ranking: Ranking) -> Ranking:
        """S itself, not the tiered rank: a candidate without S has no value."""
        return {cid: s.score for cid, s in task.scores.items()}
