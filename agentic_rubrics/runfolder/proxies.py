"""The patch-similarity verifier's rows: ``proxies/<id>/proxy.json`` (how the proxy patch came to be,
written after ``proxy.diff``: its presence marks the proxy done) and ``proxies/<id>/similarity.jsonl``
(one row per candidate: its 1-5 rating against the proxy, or missing with a reason)."""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from agentic_rubrics.runfolder.rows import RowBase
from agentic_rubrics.types import SCHEMA

PROXY_FILE = "proxy.diff"
PROXY_STATUS = "proxy.json"
SIMILARITY_ROWS = "similarity.jsonl"


class ProxyStatus(RowBase):
    """``proxies/<id>/proxy.json``: the proxy patch's provenance (counts and hashes, never text)."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    instance_id: str
    """The task."""
    base_commit: str = ""
    """The commit the proxy was written against."""
    problem_hash: str | None = None
    """sha256 of the issue text the author read."""
    source: str
    """``agent:<name>`` or ``reused`` (``--proxies DIR``)."""
    status: Literal["ok", "missing"]
    """``ok``: ``proxy.diff`` holds a usable proxy; ``missing``: every candidate's similarity is
    missing with ``reason``."""
    reason: str | None = None
    """Why it is missing (``proxy_empty``, ``proxy_does_not_apply``, ``proxy_failed:<why>`` ...)."""
    sha256: str | None = None
    """sha256 of ``proxy.diff``'s bytes."""
    files: int | None = None
    """Files the proxy changes."""
    changed_lines: int | None = None
    """Lines it adds or removes."""
    submitted: bool | None = None
    """The author submitted (false: its turns ran out and its diff was taken as it stood)."""
    turns: int | None = None
    """The author's turns."""
    cost: dict[str, dict[str, int | float]] = Field(default_factory=dict)
    """The author's spending (``calls``, ``usd`` ...) by phase."""
    model: str | None = None
    """The author's model."""
    prompt: str | None = None
    """The author's prompt (``name@hash``)."""
    seconds: float | None = None
    """Wall time of writing it."""


class SimilarityRow(RowBase):
    """One row of ``proxies/<id>/similarity.jsonl``: a candidate's closeness to the proxy patch."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    instance_id: str
    """The task."""
    candidate_id: str
    """The candidate."""
    origin: Literal["judged", "missing"]
    """``judged``: ``rating`` is the majority of the judge's answers; ``missing``: see ``reason``."""
    rating: int | None = Field(default=None, ge=1, le=5)
    """The 1-5 rating (5: the same change as the proxy)."""
    value: float | None = Field(default=None, ge=0, le=1)
    """The rating normalised, ``(rating - 1) / 4``: what the ``similarity`` selector ranks by."""
    reason: str | None = None
    """Why there is no rating (a code of ``reasons.SIMILARITY_REASONS`` or ``MISSING_REASONS``)."""
    ratings: list[int | None] = Field(default_factory=list)
    """Each repeat's rating (``None``: that repeat had none)."""
    judge: str | None = None
    """The judge model and prompt (``model + name@hash``)."""
    proxy_sha256: str | None = None
    """The proxy it was compared with."""
