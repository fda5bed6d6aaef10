"""The behaviour_consensus selector: the largest group of candidates whose changes do the same thing.

Candidates are grouped by what their change does to the program's normal form, with graded similarity
between groups; candidates that change no behaviour neither vote nor can be picked
(:mod:`agentic_rubrics.rank.consensus`). No model, nothing fitted.
"""

from __future__ import annotations

from typing import Any

from agentic_rubrics.rank.agreement import line_agreement
from agentic_rubrics.rank.consensus import KEY, consensus_record
from agentic_rubrics.rank.selectors import BaseSelector, FeatureInput, Ranking, RankingInput, stored


class BehaviourConsensusSelector(BaseSelector):
    name = "behaviour_consensus"
    description = (
        "the largest weighted group of candidates whose changes do the same thing (normal forms of"
        " the changed code, graded similarity between groups); no-op candidates never picked"
    )

    async def features(self, given: FeatureInput) -> dict[str, Any]:
        """The consensus record (ranks, supports, counts: no patch text, no output)."""
        agreement, _ = given.once(line_agreement)  # shared with self_consistency
        rows, _ = await given.post_rows()  # each analysis is shared with the other selectors
        return {KEY: consensus_record(given.patches, rows, agreement, given.probes)}

    def ranking(self, task: RankingInput) -> Ranking:
        """The consensus ranks (``None``: a candidate that changes no behaviour)."""
        record = stored(task, KEY, self.name)
        return {cid: record["rank"].get(cid) for cid in task.scores}

    def values(self, task: RankingInput, ranking: Ranking) -> Ranking:
        """Tier and support (``2 × tier + support``): what ROC-AUC and PR-AUC rest on."""
        record = stored(task, KEY, self.name)
        return {cid: record["support"].get(cid) for cid in task.scores}
