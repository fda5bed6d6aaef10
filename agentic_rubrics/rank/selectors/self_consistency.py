"""The self-consistency selector: agreement of a candidate's changed lines with the other candidates'."""

from __future__ import annotations

from typing import Any

from agentic_rubrics.rank.agreement import SIMILARITY, SIMILARITY_MAX_LINES, line_agreement
from agentic_rubrics.rank.selectors import BaseSelector, FeatureInput, Ranking, RankingInput, stored


class SelfConsistencySelector(BaseSelector):
    name = "self_consistency"
    description = (
        "mean similarity (normalized Indel: 2 LCS / total) of a candidate's changed lines"
        " to the other candidates'; an empty patch ranks last"
    )

    async def features(self, given: FeatureInput) -> dict[str, Any]:
        """The agreement values, and the measure, the cap and how many candidates it capped."""
        agreement, capped = given.once(line_agreement)  # shared with the offline selector
        return {
            "self_consistency": agreement,
            "similarity": {
                "measure": SIMILARITY,
                "max_lines": SIMILARITY_MAX_LINES,
                "capped": len(capped),
            },
        }

    def ranking(self, task: RankingInput) -> Ranking:
        """The agreement values; an empty patch has none (empty patches agree fully with each
        other, and several of them must not outvote the real changes)."""
        values = stored(task, "self_consistency", self.name)
        return {cid: None if s.empty_patch else values.get(cid) for cid, s in task.scores.items()}

    def values(self, task: RankingInput, ranking: Ranking) -> Ranking:
        """The agreement values themselves (ROC-AUC rests on them, empty patches included)."""
        values = stored(task, "self_consistency", self.name)
        return {cid: values.get(cid) for cid in task.scores}
