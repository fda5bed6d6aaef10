"""A fraction with the counts it rests on: how every rate of report.json and audit_items.json is written."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Rate(BaseModel):
    """A fraction with the counts it rests on."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    value: float | None
    """``n / of``; ``None`` when ``of`` is 0."""
    n: int
    """The numerator."""
    of: int
    """The denominator."""

    @classmethod
    def of_counts(cls, n: int, of: int) -> Rate:
        """``n`` out of ``of`` (``value`` ``None`` when ``of`` is 0)."""
        return cls(value=n / of if of else None, n=n, of=of)
