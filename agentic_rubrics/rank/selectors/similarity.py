"""The patch-similarity selector: each candidate's 1-5 closeness to the task's proxy patch, normalised
to 0-1 (the ``similarity`` verifier stores it under ``baselines``; a missing rating is ``None``)."""

from __future__ import annotations

from agentic_rubrics.rank.selectors import BaseSelector, Ranking, RankingInput, stored


class SimilaritySelector(BaseSelector):
    name = "similarity"
    description = (
        "a judge's 1-5 rating of the patch's closeness to a proxy patch an agent wrote solving the"
        " issue, as (rating - 1) / 4 (the similarity verifier, --verifiers ...,similarity)"
    )

    def ranking(self, task: RankingInput) -> Ranking:
        values = stored(task, "similarity", self.name)
        return {
            cid: v if isinstance(v, int | float) and not isinstance(v, bool) else None
            for cid, v in ((cid, values.get(cid)) for cid in task.scores)
        }
