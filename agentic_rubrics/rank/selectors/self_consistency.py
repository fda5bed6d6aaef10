"""The self-consistency selector: agreement of a candidate's changed lines with the other candidates'."""

from __future__ import annotations

from typing import Any

from agentic_rubrics.patch import changed_lines
from agentic_rubrics.rank.agreement import SIMILARITY, SIMILARITY_MAX_LINES, line_agreement
from agentic_rubrics.rank.selectors import BaseSelector, FeatureInput, Ranking, RankingInput, stored

NO_LINES = "self_consistency_no_changed_lines"
"""The feature listing a task's candidates whose patch has no changed line."""


class SelfConsistencySelector(BaseSelector):
    name = "self_consistency"
    description = (
        "mean similarity (normalized Indel: 2 LCS / total) of a candidate's changed lines"
        " to the other candidates'; an empty patch, or one with no changed lines, is never picked"
    )

    async def features(self, given: FeatureInput) -> dict[str, Any]:
        """The agreement values, the candidates with no changed lines, and the measure, the cap and
        how many candidates it capped."""
        agreement, capped = given.once(line_agreement)  # shared with the offline selector
        return {
            "self_consistency": agreement,
            NO_LINES: sorted(c for c, p in given.patches.items() if not changed_lines(p)),
            "similarity": {
                "measure": SIMILARITY,
                "max_lines": SIMILARITY_MAX_LINES,
                "capped": len(capped),
            },
        }

    def ranking(self, task: RankingInput) -> Ranking:
        """The agreement values; an empty patch has none, nor has one with no changed lines (not a
        diff — an agent's prose reply —, or only a binary file, a mode or a name): it changes no
        line another candidate could agree with. (A run stored before they were listed gets the
        list from its patches at report time: :func:`agentic_rubrics.report.results.listed_no_lines`.)"""
        values = stored(task, "self_consistency", self.name)
        none = set(task.baselines.get(NO_LINES) or ())
        return {
            cid: None if s.empty_patch or cid in none else values.get(cid)
            for cid, s in task.scores.items()
        }

    def values(self, task: RankingInput, ranking: Ranking) -> Ranking:
        """The agreement values themselves (ROC-AUC rests on them, empty patches included)."""
        values = stored(task, "self_consistency", self.name)
        return {cid: values.get(cid) for cid in task.scores}
