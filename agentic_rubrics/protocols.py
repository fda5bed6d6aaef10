"""The protocols the stages implement and take — a Model, a Sandbox, a Judge — and the values they
return: a ``Model``'s ``Completion`` (with its ``Usage`` and ``ToolCall``s) and a ``Sandbox``'s
``CommandResult``, plain frozen values that cross process boundaries (the worker pool, the response
cache) unchanged.

The ground floor: every stage may import it, it imports only the vocabulary (``types``).
The package root hands these names on (``agentic_rubrics.Model``) as part of the public face.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.types import Rubric, Verdict

__all__ = [
    "CommandResult",
    "Completion",
    "Judge",
    "Model",
    "Sandbox",
    "ToolCall",
    "Usage",
]


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


@runtime_checkable
class Model(Protocol):
    """An async chat-completion model (a litellm model string behind it, or a scripted fake)."""

    name: str
    """The model identifier recorded beside every verdict it gives."""

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        """Answer one chat; ``params`` are passed through (temperature, max_tokens, ...)."""
        ...


@runtime_checkable
class Sandbox(Protocol):
    """A place to run read-only exploration commands against a repository at its base commit."""

    kind: str
    """What it is (``bubblewrap``, ``local-copy``, ``swerex-docker`` …), recorded with a rubric."""
    workdir: str
    """Where commands start: the repository's root as commands see it (``/workspace``,
    ``/testbed`` or a host path)."""

    async def run(
        self, command: str, *, timeout: float = 30.0, max_output: int = 20_000
    ) -> CommandResult:
        """Run a shell command; kill it after ``timeout`` seconds; cut output at ``max_output`` chars."""
        ...

    async def read_file(self, path: str, *, max_bytes: int = 200_000) -> str:
        """Read a repository-relative file as text (cut at ``max_bytes``)."""
        ...

    async def close(self) -> None:
        """Release the sandbox and everything it created."""
        ...


@runtime_checkable
class Judge(Protocol):
    """Gives one verdict per rubric item for one candidate; never a score it did not derive."""

    name: str
    """What decided the verdicts, recorded in every record (e.g. ``checks``)."""

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
        """Exactly one verdict per rubric item, each ``judged``, ``checked`` or ``missing``."""
        ...
