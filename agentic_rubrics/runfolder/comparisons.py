"""report.json's ``comparisons``, typed: selectors compared on the same tasks (report/compare.py)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

Number = int | float

__all__ = ["Comparisons", "GapClosed", "PairedDifference"]


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class PairedDifference(_Part):
    """Best@K of one selector minus another's, per task, paired over the same resampled tasks."""

    difference: Number | None
    """Mean per-task difference (``None``: no task)."""
    ci: list[float] | None
    """95% paired bootstrap interval (``None``: resampling off or undefined)."""
    better: int
    """Tasks where the first selector's expected pick is better."""
    worse: int
    """Tasks where it is worse."""
    tasks: int
    """Tasks compared."""


class GapClosed(_Part):
    """(Best@K - Random@K) / (Oracle Pass@K - Random@K) over the tasks: 0 random, 1 the oracle."""

    value: Number | None
    """``None``: the oracle is no better than random on these tasks."""
    ci: list[float] | None
    """95% bootstrap interval of the ratio."""


class Comparisons(_Part):
    """Selectors compared on the same tasks (:mod:`agentic_rubrics.report.compare`)."""

    ks: list[int]
    """The K compared."""
    paired: dict[str, dict[str, dict[str, PairedDifference]]]
    """selector -> the selector it is compared with (the primary, self_consistency) -> K -> difference."""
    gap_closed: dict[str, dict[str, GapClosed]]
    """selector -> K -> the share of the random→oracle gap it closes."""
