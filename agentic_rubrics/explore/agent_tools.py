"""The rubric agent's tools, run against the sandbox: bash, view, search, validate, submit.

Every output reaches the model fenced (``prompts.fence``) and capped at ``max_observation`` characters;
``view`` and ``search`` page through big files and many matches (:mod:`agentic_rubrics.explore.tools`).
The loop's own words (exit status, the page note, turns left) stay outside the fence.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from agentic_rubrics.exceptions import RubricError, SandboxError
from agentic_rubrics.explore import tools
from agentic_rubrics.prompts import Prompt
from agentic_rubrics.protocols import Sandbox
from agentic_rubrics.rubric.file import parse_rubric
from agentic_rubrics.types import Rubric, Task

RUBRIC_FILE = "rubrics.yaml"


def validate_text(text: str) -> tuple[Rubric | None, str, str]:
    """The rubric, its errors and its warnings (one per line)."""
    try:
        rubric, warnings = parse_rubric(text, RUBRIC_FILE)
    except RubricError as exc:
        return None, "\n".join(str(p) for p in exc.problems), ""
    return rubric, "", "\n".join(str(w) for w in warnings)


@dataclass
class Run:
    """One exploration's state."""

    task: Task
    sandbox: Sandbox
    steps: list[dict[str, Any]] = field(default_factory=list)
    warned: bool = False


class AgentTools(Protocol):
    """How an agent's tool calls run (the rubric agent's :class:`Tools`, the proxy author's)."""

    def turns_left(self, turn: int) -> int | None:
        """The turns left, when the loop says them."""
        ...

    async def run(self, run: Run, tool: str, argument: str, turn: int) -> tuple[str, Any]:
        """The observation, and the work's result when this call ends it (else ``None``)."""
        ...


class InvalidAtLastTurn(Exception):
    """The last turn's submit found the file invalid: no turn is left to fix it."""


@dataclass
class Tools:
    """How the agent's tool calls run."""

    prompt: Prompt
    max_turns: int
    command_timeout: float
    max_observation: int
    file: str = RUBRIC_FILE
    """The file the agent writes, validates and submits."""
    validator: Callable[[str], tuple[Any, str, str]] = validate_text
    """The file's text -> (what it holds, or ``None``; its errors; its warnings), one per line."""
    content: bool = False
    """A submit may carry the file's content (then that is what is checked, not the file)."""

    def turns_left(self, turn: int) -> int | None:
        """The turns left, said every five turns and in the last two."""
        left = self.max_turns - turn
        return left if turn % 5 == 0 or left <= 2 else None

    async def run(self, run: Run, tool: str, argument: str, turn: int) -> tuple[str, Any]:
        """Run one tool call; the observation, and the rubric when a submit is accepted.

        Raises:
            InvalidAtLastTurn: a submit of an invalid file with no turn left.
            SandboxError: the sandbox failed (the loop tells the model).
        """
        if tool in ("validate", "submit"):
            given = argument if tool == "submit" and self.content and argument.strip() else None
            return await self._validate(run, tool, turn, given)
        p = self.prompt
        left = self.turns_left(turn)
        if tool == "view":
            done = await tools.view(run.sandbox, argument, max_chars=self.max_observation, prompt=p)
        elif tool == "search":
            done = await tools.search(
                run.sandbox,
                argument,
                max_chars=self.max_observation,
                timeout=self.command_timeout,
                prompt=p,
            )
        else:
            done = await tools.bash(
                run.sandbox, argument, max_chars=self.max_observation, timeout=self.command_timeout
            )
        if tool != "view":
            run.steps[-1].update(exit_code=done.exit_code, timed_out=done.timed_out)
        run.steps[-1].update(truncated=done.truncated)
        obs = p.render(
            "observation",
            tool=tool,
            output=done.output,
            note=done.note,
            exit_code=done.exit_code,
            timed_out=done.timed_out,
            turns_left=left,
        )
        return obs, None

    async def _validate(
        self, run: Run, tool: str, turn: int, given: str | None = None
    ) -> tuple[str, Any]:
        """``validate`` or ``submit``: the validator's answer, or the rubric a submit got accepted."""
        p = self.prompt
        left = self.turns_left(turn)
        try:
            text = given if given is not None else await run.sandbox.read_file(self.file)
        except SandboxError:
            text = None
        if text is None:
            errors, warnings, rubric = f"{self.file} does not exist yet.", "", None
        else:
            rubric, errors, warnings = self.validator(text)
        if errors:
            run.steps[-1]["validation"] = errors.splitlines()[0][:300]
        if tool == "submit" and rubric is not None and (not warnings or run.warned):
            return "", rubric
        if tool == "submit" and rubric is not None:
            run.warned = True  # warnings go back once; a second submit is accepted
        if tool == "submit" and rubric is None and turn >= self.max_turns:
            raise InvalidAtLastTurn
        obs = p.render(
            "validation",
            errors=errors,
            warnings=warnings,
            rubric_file=self.file,
            turns_left=left,
        )
        return obs, None
