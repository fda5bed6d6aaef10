"""What the protocols return: a ``Model``'s ``Completion`` (with its ``Usage`` and ``ToolCall``s) and a
``Sandbox``'s ``CommandResult``. Plain frozen values: they cross process boundaries (the worker pool,
the response cache) unchanged.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Usage(_Frozen):
    """Tokens and cost of one model call. ``cost_usd`` is ``None`` when the model cannot be priced."""

    prompt_tokens: int = 0
    """Input tokens."""
    completion_tokens: int = 0
    """Output tokens."""
    cost_usd: float | None = None
    """Dollar cost, or ``None`` when unknown (never silently 0)."""
    cached: bool = False
    """Served from the response cache (no cost incurred now)."""
    reported: bool = True
    """The provider reported usable token counts. ``False``: counts missing, null, negative or absurd
    (read as 0 or over ``MAX_TOKENS``): ``cost_usd`` is then ``None``, whatever a price would say."""
    estimated_usd: float | None = None
    """What the run's budget was charged for a call whose cost is unknown (unpriced model, or counts
    not reported): an estimate from the request's size, never added to ``cost_usd``."""


class Completion(_Frozen):
    """What a ``Model`` returns for one chat completion."""

    content: str | None
    """The reply text (``None`` or empty when the model answered nothing)."""
    finish_reason: str | None = None
    """``stop``, ``length``, ``content_filter`` ... as the provider said."""
    refusal: str | None = None
    """The provider's refusal message, when it sent one."""
    model: str = ""
    """The model that answered."""
    usage: Usage = Field(default_factory=Usage)
    """Tokens and cost."""
    logprobs: list[dict[str, Any]] | None = None
    """Token log-probabilities where the provider returns them."""
    tool_calls: list[ToolCall] | None = None
    """Native tool calls the model made (untrusted: names and arguments as it wrote them)."""
    thinking_blocks: list[dict[str, str]] | None = None
    """Signed thinking blocks (Anthropic), sent back unchanged with the next turn of a tool loop."""


class ToolCall(_Frozen):
    """One native tool call of a reply, as the model wrote it."""

    id: str
    """The call's id, echoed by the tool's answer."""
    name: str
    """The tool the model named."""
    arguments: str
    """Its arguments: JSON text, unparsed (it is the model's, hence untrusted)."""


class CommandResult(_Frozen):
    """What a ``Sandbox`` returns for one command."""

    exit_code: int | None
    """The exit status; ``None`` when the command timed out or was killed."""
    output: str
    """stdout and stderr, interleaved, cut at the sandbox's output cap."""
    truncated: bool = False
    """The output was cut (a marker says so at the cut)."""
    timed_out: bool = False
    """The command ran past its timeout and was killed."""
