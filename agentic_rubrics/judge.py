"""Judges: one verdict per rubric item for one candidate.

Items with a ``check`` are always decided by the check (``checked``) and never go to a model. The
checks-only judge leaves every other item ``missing: not_configured``: without a model, nothing else
can honestly decide them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics import Judge
from agentic_rubrics.checks import check_verdicts
from agentic_rubrics.types import Rubric, Verdict


class JudgeConfig(BaseModel):
    """How candidates are judged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["checks"] = "checks"
    """``checks``: deterministic checks only; items without a check stay ``missing: not_configured``."""
    concurrency: int = Field(default=8, ge=1)
    """Candidates judged at the same time within one task."""


def make_judge(config: JudgeConfig) -> Judge:
    """The judge a configuration names."""
    return ChecksJudge()


def missing_verdicts(
    rubric: Rubric,
    *,
    instance_id: str,
    candidate_id: str,
    reason: str,
    repeat: int = 0,
    skip: set[str] | frozenset[str] = frozenset(),
) -> list[Verdict]:
    """``missing`` verdicts with one reason for every item not in ``skip``."""
    return [
        Verdict(
            instance_id=instance_id,
            candidate_id=candidate_id,
            item_id=item.id,
            axis=axis,
            weight=item.weight,
            origin="missing",
            value=None,
            reason=reason,
            repeat=repeat,
        )
        for axis, item in rubric.items()
        if item.id not in skip
    ]


class ChecksJudge:
    """The offline judge: checks decide their items; every other item is ``missing: not_configured``."""

    name = "checks"

    async def judge(
        self,
        *,
        instance_id: str,
        issue: str,
        rubric: Rubric,
        candidate_id: str,
        patch: str,
        repeat: int = 0,
    ) -> list[Verdict]:
        """Exactly one verdict per item, in rubric order."""
        checked = check_verdicts(rubric, patch, instance_id=instance_id, candidate_id=candidate_id)
        rest = {
            v.item_id: v
            for v in missing_verdicts(
                rubric,
                instance_id=instance_id,
                candidate_id=candidate_id,
                reason="not_configured",
                skip=set(checked),
            )
        }
        return [checked.get(item.id) or rest[item.id] for _, item in rubric.items()]
