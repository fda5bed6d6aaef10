"""What no selector may pick: a candidate that fixes nothing, before one that does not tamper.

An empty patch, or one proven to change no behaviour of the program (:mod:`agentic_rubrics.rubric.
behaviour`: only tests, docs, comments, docstrings, ``pass``, dead code or re-layout) cannot be the fix
whatever a selector's signals say of it: agreement with the pool, a classifier's YES, a pass rate equal
to the base tree's. A candidate that changes the test infrastructure (:mod:`agentic_rubrics.test_infra`)
may hold a fix, but what its tests say is not its code's alone: it is never preferred to one that
does not. The report ranks the first last and the second below every other candidate in every selector
that is ``guarded`` (all but ``random``, the chance baseline), after the selector's own ranking; what
ROC-AUC and PR-AUC rest on stays the selector's own values.
"""

from __future__ import annotations

from agentic_rubrics.rank.selectors import Ranking, RankingInput, Selector

GUARD = "guard"
"""The key of each task's record of what its candidates do (``baselines``: candidate id ->
``{"behaviour": "changed" | "unchanged" | None, "basis": "tree" | "diff", "infra": [kinds]}``,
:mod:`agentic_rubrics.rubric.behaviour`), written at judge time for every run."""


def _rows(task: RankingInput) -> dict[str, dict[str, object]]:
    record = task.baselines.get(GUARD)
    rows = record if isinstance(record, dict) else {}
    return {c: row for c, row in rows.items() if isinstance(row, dict)}


def fixes_nothing(task: RankingInput) -> set[str]:
    """The candidates that cannot be the fix: an empty patch, or one proven to change no behaviour
    of the program (the task's guard record, or the rubric's verdicts)."""
    out = {c for c, row in _rows(task).items() if row.get("behaviour") == "unchanged"}
    return out | {c for c, s in task.scores.items() if s.empty_patch or s.no_behaviour_change}


def tampers(task: RankingInput) -> set[str]:
    """The candidates that change how their tests run (the test infrastructure)."""
    out = {c for c, row in _rows(task).items() if row.get("infra")}
    return out | {c for c, s in task.scores.items() if s.tampers_with_tests}


def guarded(selector: Selector, task: RankingInput, ranking: Ranking) -> Ranking:
    """``ranking`` with every candidate that fixes nothing ranked last (``None``), and every one that
    changes the test infrastructure below all the others (its own order kept among them), for every
    selector but those that say ``guarded = False`` (``random``: the chance baseline)."""
    if not getattr(selector, "guarded", True):
        return ranking
    nothing, held = fixes_nothing(task), tampers(task)
    out = {cid: None if cid in nothing else value for cid, value in ranking.items()}
    clean = [v for c, v in out.items() if v is not None and c not in held]
    bad = [v for c, v in out.items() if v is not None and c in held]
    if not clean or not bad:
        return out
    # each held value moves below the lowest clean one, by its rank among the held (order and ties kept)
    order = {v: n for n, v in enumerate(sorted(set(bad), reverse=True), start=1)}
    floor = min(clean)
    return {c: floor - order[v] if c in held and v is not None else v for c, v in out.items()}
