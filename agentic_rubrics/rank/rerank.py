"""Selection per task: the top-ranked candidate, its tie-break, and the default selector lists.

Each selector's arithmetic lives beside it: agreement (:mod:`.agreement`), the patch classifier
(:mod:`.classifier`), the offline features and weights (:mod:`.offline`), content (:mod:`.content`).

A selector maps each candidate of a task to a ranking value (higher is better, ``None`` lowest). The
realised selection is the top-ranked candidate; ties are broken by the smallest
``sha256(f"{seed}:{instance_id}:{candidate_id}")`` — deterministic, independent of the order of the
candidates in the file, and uniform over the tied candidates across tasks. Expected Best@K treats ties
as uniform instead (see :func:`agentic_rubrics.rank.metrics.best_at_k`); the report gives both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from agentic_rubrics.types import CandidateScore, Selection

Ranking = dict[str, float | None]

BASE_SELECTORS = ["offline_content", "offline", "rubric", "self_consistency", "random"]
"""The default selectors without a judge model (``offline_content`` leads: the no-model ranking that
does best on pools of one agent's samples, a user's Best@K; see benchmarks/README.md)."""
MODEL_SELECTORS = [
    "rubric",
    "offline_content",
    "offline",
    "self_consistency",
    "random",
    "patch_classifier",
]
"""The default selectors with a judge model (``rubric`` leads, ``patch_classifier`` joins)."""


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
