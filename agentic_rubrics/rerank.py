"""Selection per task, and the baseline selectors it is compared with.

A selector maps each candidate of a task to a ranking value (higher is better, ``None`` lowest). The
realised selection is the top-ranked candidate; ties are broken by the smallest
``sha256(f"{seed}:{instance_id}:{candidate_id}")`` — deterministic, independent of the order of the
candidates in the file, and uniform over the tied candidates across tasks. Expected Best@K treats ties
as uniform instead (see :func:`agentic_rubrics.metrics.best_at_k`); the report gives both.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Mapping

from agentic_rubrics.types import CandidateScore, Selection

Ranking = dict[str, float | None]

SELECTORS: dict[str, str] = {
    "rubric": "S from the rubric's verdicts, by the ranking tiers (empty < no verdict < failed gate < inconclusive < scored)",
    "random": "every candidate tied: a uniform pick (expected Best@K = Random@K)",
    "self_consistency": "mean difflib similarity of a candidate's changed lines to the other candidates'",
}
"""The selectors a run can compare, name -> what ranks the candidates."""


def tie_break_key(seed: int, instance_id: str, candidate_id: str) -> str:
    """The documented deterministic tie-break: the smallest hash wins."""
    return hashlib.sha256(f"{seed}:{instance_id}:{candidate_id}".encode()).hexdigest()


def select(
    instance_id: str, ranking: Mapping[str, float | None], selector: str, seed: int = 0
) -> Selection:
    """The top-ranked candidate of one task, ties broken by :func:`tie_break_key`."""
    if not ranking:
        return Selection(
            instance_id=instance_id,
            selector=selector,
            candidate_id=None,
            score=None,
            tied=0,
            pool_size=0,
        )

    def key(cid: str) -> tuple[int, float]:
        value = ranking[cid]
        return (0, 0.0) if value is None else (1, value)

    top = max(key(c) for c in ranking)
    tied = sorted(
        (c for c in ranking if key(c) == top), key=lambda c: tie_break_key(seed, instance_id, c)
    )
    pick = tied[0]
    return Selection(
        instance_id=instance_id,
        selector=selector,
        candidate_id=pick,
        score=ranking[pick],
        tied=len(tied),
        pool_size=len(ranking),
    )


def rubric_ranking(scores: Mapping[str, CandidateScore]) -> Ranking:
    """The rubric selector: each candidate's tiered ranking value."""
    return {cid: s.rank_value for cid, s in scores.items()}


def random_ranking(candidate_ids: list[str]) -> Ranking:
    """The random selector: all tied, so selection is the uniform tie-break."""
    return dict.fromkeys(candidate_ids, 0.0)


def changed_lines(patch: str) -> list[str]:
    """The ``+``/``-`` lines of a diff, without the ``+++``/``---`` file headers."""
    return [
        ln
        for ln in patch.replace("\r\n", "\n").split("\n")
        if ln[:1] in "+-" and ln[:1] and not ln.startswith(("+++", "---"))
    ]


def self_consistency_ranking(patches: Mapping[str, str]) -> Ranking:
    """Self-consistency: for each candidate, the mean over the other candidates of
    ``difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()`` on the lists of changed lines.

    A pool of one has no other candidate to agree with: its value is ``None``.
    """
    lines = {cid: changed_lines(p) for cid, p in patches.items()}
    ids = list(lines)
    sims: dict[tuple[str, str], float] = {}
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            r = difflib.SequenceMatcher(None, lines[a], lines[b], autojunk=False).ratio()
            sims[(a, b)] = sims[(b, a)] = r
    out: Ranking = {}
    for a in ids:
        others = [sims[(a, b)] for b in ids if b != a]
        out[a] = sum(others) / len(others) if others else None
    return out
