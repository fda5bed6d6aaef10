"""The patch-similarity selector: each candidate's closeness to the task's proxy patch.

The ``similarity`` verifier (:mod:`agentic_rubrics.pipeline.verifiers.similarity`) stores, per task,
under ``baselines`` ``proxy_similarity``: the proxy's ``status`` and ``reason`` and each candidate's ``value``,
its 1-5 rating normalised to 0-1 (``(rating - 1) / 4``), or ``None`` with its reason in ``reasons``
(``proxy_empty``, ``invalid_value``, ``split_vote`` ...). A missing value ranks last and is never 0.
"""

from __future__ import annotations

from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.rank.selectors import BaseSelector, Ranking, RankingInput, stored

FEATURE = "proxy_similarity"
"""The key of the verifier's record in a task's ``baselines``."""


def similarity_values(task: RankingInput) -> dict[str, float | None]:
    """Each candidate's normalised rating (``None``: none), read from the task's stored record."""
    record: Any = stored(task, FEATURE, "similarity")
    values = record.get("value") if isinstance(record, dict) else None
    if not isinstance(values, dict):
        raise DataError(f"{task.instance_id}: its 'similarity' record holds no value mapping")
    out: dict[str, float | None] = {}
    for cid in task.scores:
        value = values.get(cid)
        if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 1:
            out[cid] = float(value)
        else:
            out[cid] = None
    return out


class SimilaritySelector(BaseSelector):
    """See the module's docstring."""

    name = "similarity"
    description = (
        "a judge's 1-5 rating of each candidate's closeness to a proxy patch an agent wrote solving"
        " the issue, as (rating - 1) / 4; missing (empty proxy, malformed reply) ranks last"
    )

    def ranking(self, task: RankingInput) -> Ranking:
        return dict(similarity_values(task))
