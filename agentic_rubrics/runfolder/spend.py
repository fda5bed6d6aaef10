"""``spend.jsonl``'s rows, typed and versioned (written and summed by :mod:`agentic_rubrics.llm.spend`)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentic_rubrics.runfolder.rows import RowBase
from agentic_rubrics.types import SCHEMA

__all__ = ["SpendRow"]


class SpendRow(RowBase):
    """One line of ``spend.jsonl``: a request ``sent``, then ``answered`` or ``failed`` (a ``sent`` row
    that never ended is a request in flight when its process died)."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version (rows written before it was recorded have none: this one)."""
    event: Literal["sent", "answered", "failed"]
    """What happened to the request."""
    call: str
    """The request's id, shared by its rows."""
    model: str | None = None
    """``sent``: the model asked."""
    phase: str | None = None
    """``sent``: explore, judge, classifier …"""
    instance_id: str | None = None
    """``sent``: the task."""
    prompt_tokens: int | None = None
    """``answered``: input tokens (0 where the provider reported none usable)."""
    completion_tokens: int | None = None
    """``answered``: output tokens."""
    usd: float | None = None
    """``answered``: measured dollars (``None``: unknown)."""
    estimated_usd: float | None = None
    """``answered`` with an unknown cost: what the budget was charged."""
    reported: bool | None = None
    """``answered``: ``False`` when the provider gave no usable token counts."""
    failure: str | None = None
    """``failed``: the failure's kind."""
    status: int | None = None
    """``failed``: the provider's HTTP status, if any."""
