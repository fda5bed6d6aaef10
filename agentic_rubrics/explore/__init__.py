"""Explorers write a task's rubric.

- ``static``: rules over the repository, no model (the offline default);
- ``agent``: a model explores the repository in a sandbox and writes rubrics.yaml;
- ``issue-only``: the same model writes the rubric from the issue alone (the paper's ablation).

An explorer sees the task's public view only (issue text, repository; no labels, no gold patch, no hidden
tests) and returns a rubric plus the trajectory of tool calls that produced it.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentic_rubrics import Sandbox
from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.sandbox import AutoConfig, SandboxConfig
from agentic_rubrics.types import Rubric, Task


class ExplorerConfig(BaseModel):
    """How rubrics are written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["static", "agent", "issue-only"] = "static"
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

    @model_validator(mode="after")
    def _needs_model(self) -> ExplorerConfig:
        if self.kind != "static" and self.model is None:
            raise ValueError(
                f"the {self.kind} explorer needs a model (--explorer-model or --model)"
            )
        return self

    @property
    def uses_sandbox(self) -> bool:
        """Whether exploration runs commands against the repository."""
        return self.kind in ("static", "agent")


class Explorer(Protocol):
    """Writes one task's rubric from its public view (and a sandbox over its repository)."""

    name: str

    async def explore(
        self, task: Task, sandbox: Sandbox | None
    ) -> tuple[Rubric, list[dict[str, Any]]]:
        """The rubric and the trajectory (tool calls) that produced it (``sandbox``: none at hand)."""
        ...


def make_explorer(config: ExplorerConfig, llm: LLM | None = None) -> Explorer:
    """The explorer a configuration names (``llm`` for the model-driven ones)."""
    if config.kind == "static":
        from agentic_rubrics.explore.static import StaticExplorer

        return StaticExplorer()
    from agentic_rubrics.explore.agent import AgentExplorer, IssueOnlyExplorer

    assert llm is not None, "model-driven explorers need an LLM"
    if config.kind == "agent":
        return AgentExplorer(
            llm,
            max_turns=config.max_turns,
            command_timeout=config.command_timeout,
            max_observation=config.max_observation,
            tool_calls=config.tool_calls,
        )
    return IssueOnlyExplorer(llm)
