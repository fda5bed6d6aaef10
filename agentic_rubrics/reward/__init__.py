"""Rubric scores as an RL reward: verl's custom reward function, a batched scorer, an HTTP endpoint.

``from agentic_rubrics.reward import compute_score`` (verl's signature), ``compute_score_batch`` (its
batch reward manager's), :class:`RewardScorer` (many patches at once), :func:`extract_patch`. Names are
handed on lazily: importing this package loads nothing else.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_LAZY = {
    "compute_score": "agentic_rubrics.reward.verl",
    "compute_score_batch": "agentic_rubrics.reward.verl",
    "extract_patch": "agentic_rubrics.reward.verl",
    "close_scorers": "agentic_rubrics.reward.verl",
    "RewardScorer": "agentic_rubrics.reward.scorer",
    "Reward": "agentic_rubrics.reward.result",
    "ItemVerdict": "agentic_rubrics.reward.result",
    "RewardServer": "agentic_rubrics.reward.server",
}

__all__ = [
    "ItemVerdict",
    "Reward",
    "RewardScorer",
    "RewardServer",
    "close_scorers",
    "compute_score",
    "compute_score_batch",
    "extract_patch",
]

if TYPE_CHECKING:
    from agentic_rubrics.reward.result import ItemVerdict, Reward
    from agentic_rubrics.reward.scorer import RewardScorer
    from agentic_rubrics.reward.server import RewardServer
    from agentic_rubrics.reward.verl import (
        close_scorers,
        compute_score,
        compute_score_batch,
        extract_patch,
    )


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
