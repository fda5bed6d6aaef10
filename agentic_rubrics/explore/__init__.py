"""Explorers write a task's rubric.

- ``static``: rules over the repository, no model (the offline default);
- ``agent``: a model explores the repository in a sandbox and writes rubrics.yaml;
- ``issue-only``: the same model writes the rubric from the issue alone (the paper's ablation).

An explorer sees the task's public view only (issue text, repository; no labels, no gold patch, no hidden
tests) and returns a rubric plus the trajectory of tool calls that produced it.

Each kind is one configuration class (a member of :data:`ExplorerConfig`, chosen by ``kind``, ``static``
when unset) that says what it needs (a sandbox over the repository, a model, which prompts) and makes its
explorer (``open``); a new explorer is its class here, added to the union, and its module.
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.protocols import Sandbox
from agentic_rubrics.sandbox import AutoConfig, SandboxConfig
from agentic_rubrics.types import Rubric, Task


class Explorer(Protocol):
    """Writes one task's rubric from its public view (and a sandbox over its repository)."""

    name: str

    async def explore(
        self, task: Task, sandbox: Sandbox | None
    ) -> tuple[Rubric, list[dict[str, Any]]]:
        """The rubric and the trajectory (tool calls) that produced it (``sandbox``: none at hand)."""
        ...


class _Explorer(BaseModel):
    """What every explorer's configuration holds (the same fields for every kind, so a configuration
    reads, dumps and hashes the same whichever kind it names)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    uses_sandbox: ClassVar[bool] = False
    """Exploration runs commands against the repository."""
    model_commands: ClassVar[bool] = False
    """A model chooses those commands (an unisolated sandbox then needs ``allow_unisolated``, and
    the explorer cannot work without a sandbox)."""
    static_leads: ClassVar[bool] = False
    """Its rubrics record which kinds of leads from the issue found nothing."""
    prompts: ClassVar[tuple[str, ...]] = ()
    """The prompt templates it sends to its model (their hashes enter the resume hash)."""

    kind: str
    """``static`` (rules, no model), ``agent`` (a model exploring in a sandbox) or ``issue-only``."""
    model: LLMConfig | None = None
    """The explorer's model (for ``agent`` and ``issue-only``)."""
    sandbox: SandboxConfig = Field(default_factory=AutoConfig)
    """Where exploration commands run (``auto``: bubblewrap where it works)."""
    allow_unisolated: bool = False
    """Let a model's commands run in an unisolated sandbox (``--unsafe-local-sandbox``)."""
    max_turns: int = Field(default=30, ge=1, le=500)
    """The agent's turn budget."""
    command_timeout: float = Field(default=60.0, gt=0)
    """Seconds before one exploration command is killed."""
    max_observation: int = Field(default=10_000, ge=500)
    """Characters of a tool's output the agent sees (cut with a marker); older outputs are elided
    further when the conversation outgrows the model's context window (``context_tokens``)."""
    tool_calls: Literal["auto", "native", "text"] = "auto"
    """How the agent acts: ``native`` tool calls, ``text`` (a THOUGHT and a fenced block), or ``auto``:
    native where litellm says the model supports function calling."""

    def open(self, llm: LLM | None = None) -> Explorer:
        """The explorer this configuration names (``llm``: its model, for the model-driven ones)."""
        raise NotImplementedError


class _ModelExplorer(_Explorer):
    prompts: ClassVar[tuple[str, ...]] = ("rubric_agent",)

    @model_validator(mode="after")
    def _needs_model(self) -> _ModelExplorer:
        if self.model is None:
            raise ValueError(
                f"the {self.kind} explorer needs a model (--explorer-model or --model)"
            )
        return self


class StaticExplorerConfig(_Explorer):
    """Rules over the repository, no model (the offline default); the issue-only static rubric when
    no repository is at hand."""

    uses_sandbox: ClassVar[bool] = True
    static_leads: ClassVar[bool] = True
    kind: Literal["static"] = "static"
    """Discriminator."""

    def open(self, llm: LLM | None = None) -> Explorer:
        """The static explorer."""
        from agentic_rubrics.explore.static import StaticExplorer

        return StaticExplorer()


class AgentExplorerConfig(_ModelExplorer):
    """A model explores the repository in a sandbox and writes rubrics.yaml."""

    uses_sandbox: ClassVar[bool] = True
    model_commands: ClassVar[bool] = True
    kind: Literal["agent"] = "agent"
    """Discriminator."""

    def open(self, llm: LLM | None = None) -> Explorer:
        """The rubric agent on ``llm``."""
        from agentic_rubrics.explore.agent import AgentExplorer

        assert llm is not None, "model-driven explorers need an LLM"
        return AgentExplorer(
            llm,
            max_turns=self.max_turns,
            command_timeout=self.command_timeout,
            max_observation=self.max_observation,
            tool_calls=self.tool_calls,
        )


class IssueOnlyExplorerConfig(_ModelExplorer):
    """The model writes the rubric from the issue alone (the paper's ablation)."""

    kind: Literal["issue-only"] = "issue-only"
    """Discriminator."""

    def open(self, llm: LLM | None = None) -> Explorer:
        """The issue-only writer on ``llm``."""
        from agentic_rubrics.explore.agent import IssueOnlyExplorer

        assert llm is not None, "model-driven explorers need an LLM"
        return IssueOnlyExplorer(llm)


def _kind(value: Any) -> str | None:
    """The kind a configuration names (``static`` when it names none)."""
    if isinstance(value, dict):
        return str(value.get("kind", "static"))
    return getattr(value, "kind", None)


ExplorerConfig = Annotated[
    Annotated[StaticExplorerConfig, Tag("static")]
    | Annotated[AgentExplorerConfig, Tag("agent")]
    | Annotated[IssueOnlyExplorerConfig, Tag("issue-only")],
    Discriminator(
        _kind,
        custom_error_type="explorer_kind",
        custom_error_message="kind should be 'static', 'agent' or 'issue-only'",
    ),
]
"""How rubrics are written; chosen by ``kind`` (``static`` when unset)."""


def make_explorer(config: _Explorer, llm: LLM | None = None) -> Explorer:
    """The explorer a configuration names (``llm`` for the model-driven ones)."""
    return config.open(llm)
