"""What no selector may pick: a candidate that fixes nothing.

An empty patch, or one proven to change no behaviour of the program (:mod:`agentic_rubrics.rubric.
behaviour`: only tests, docs, comments, docstrings, ``pass``, dead code or re-layout) cannot be the fix
whatever a selector's signals say of it: agreement with the pool, a classifier's YES, a pass rate equal
to the base tree's. The report ranks such candidates last in every selector that is ``guarded`` (all
but ``random``, the chance baseline), after the selector's own ranking; what ROC-AUC and PR-AUC rest on
stays the selector's own values.
"""

from __future__ import annotations

from agentic_rubrics.rank.selectors import Ranking, RankingInput, Selector

GUARD = "guard"
"""The key of each task's record of what its candidates do to the program (``baselines``: candidate
id -> ``{"behaviour": "changed" | "unchanged" | None, "basis": "tree" | "diff"}``,
:mod:`agentic_rubrics.rubric.behaviour`), written at judge time for every run."""


def fixes_nothing(task: RankingInput) -> set[str]:
    """The candidates that cannot be the fix: an empty patch, or one proven to change no behaviour
    of the program (the task's guard record, or the rubric's verdicts)."""
    record = task.baselines.get(GUARD)
    rows = record if isinstance(record, dict) else {}
    out = {
        c
        for c, row in rows.items()
        if isinstance(row, dict) and row.get("behaviour") == "unchanged"
    }
    return out | {c for c, s in task.scores.items() if s.empty_patch or s.no_behaviour_change}


def guarded(selector: Selector, task: RankingInput, ranking: Ranking) -> Ranking:
    """``ranking`` with every candidate that fixes nothing ranked last (``None``), for every selector
    but those that say ``guarded = False`` (``random``: the chance baseline)."""
    if not getattr(selector, "guarded", True):
        return ranking
    out = fixes_nothing(task)
    return {cid: None if cid in out else value for cid, value in ranking.items()}
