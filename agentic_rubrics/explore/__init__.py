"""Explorers write a task's rubric. ``static`` needs no model; the agent explorer uses one.

An explorer sees the task's public view only (issue text, repository; no labels, no gold patch, no
hidden tests) and returns a rubric plus the trajectory of tool calls that grounded it.
"""

from __future__ import annotations

from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics import Sandbox
from agentic_rubrics.llm import LLMConfig
from agentic_rubrics.types import Rubric, Task


class ExplorerConfig(BaseModel):
    """How rubrics are written."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["static"] = "static"
    """``static``: the rule-driven explorer over the repository (no model)."""
    command_timeout: float = Field(default=60.0, gt=0)
    """Seconds before one exploration command is killed."""
    model: LLMConfig | None = None
    """The explorer's model (for the model-driven explorers; the static explorer uses none)."""


class Explorer(Protocol):
    """Writes one task's rubric from its public view and a sandbox over its repository."""

    name: str

    async def explore(self, task: Task, sandbox: Sandbox) -> tuple[Rubric, list[dict[str, Any]]]:
        """The rubric and the trajectory (tool calls) that produced it."""
        ...


def make_explorer(config: ExplorerConfig) -> Explorer:
    """The explorer a configuration names."""
    from agentic_rubrics.explore.static import StaticExplorer

    return StaticExplorer()
