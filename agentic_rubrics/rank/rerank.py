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
import json
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.types import CandidateScore, Selection

Ranking = dict[str, float | None]

BASE_SELECTORS = ["self_consistency", "offline_content", "offline", "rubric", "random"]
"""The default selectors without a judge model. ``self_consistency`` leads: chosen out of sample by
``benchmarks/choose_default.py`` (nested cross-validation, outer folds by repository, on both SWE-bench
development files), where no other method's paired interval lay above it on both files
(:data:`EVIDENCE_FILE` holds the figures; a test keeps the two in agreement)."""
MODEL_SELECTORS = [
    "rubric",
    "offline_content",
    "offline",
    "self_consistency",
    "random",
    "patch_classifier",
]
"""The default selectors with a judge model (``rubric`` leads, ``patch_classifier`` joins)."""
EVIDENCE_FILE = Path(__file__).with_name("selection_evidence.json")
"""Each built-in selector's out-of-sample figures on the SWE-bench development files and the default
they led to, as ``benchmarks/choose_default.py --write-evidence`` wrote them; reports state them."""


@cache
def selection_evidence() -> dict[str, Any]:
    """:data:`EVIDENCE_FILE`'s content (a :class:`DataError` naming the file when it is not JSON with
    ``selectors`` and ``default``)."""
    try:
        raw = json.loads(EVIDENCE_FILE.read_text(encoding="utf-8"))
        if not isinstance(raw.get("selectors"), dict) or not isinstance(raw.get("default"), str):
            raise ValueError("expected 'selectors' (an object) and 'default' (a name)")
    except (OSError, ValueError, AttributeError) as exc:
        raise DataError(f"{EVIDENCE_FILE}: not the selection evidence ({exc})") from exc
    return dict(raw)


def tie_break_key(seed: int, instance_id: str, candidate_id: str) -> str:
    """The documented deterministic tie-break: the smallest hash wins."""
    return hashlib.sha256(f"{seed}:{instance_id}:{candidate_id}".encode()).hexdigest()


def select(
    instance_id: str, ranking: Mapping[str, float | None], selector: str, seed: int = 0
) -> Selection:
    """The top-ranked candidate of one task, ties broken by :func:`tie_break_key`.

    Raises:
        ValueError: a value is NaN (``None`` means no value); NaN has no order, and the pick would
            follow the order of the candidates.
    """
    if any(v is not None and math.isnan(v) for v in ranking.values()):
        raise ValueError(
            f"{instance_id}: {selector} values must not be NaN (use None for no value)"
        )
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
