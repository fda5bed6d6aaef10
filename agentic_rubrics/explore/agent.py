"""The rubric-writing agent: explores the repository in a sandbox, writes rubrics.yaml, submits.

One tool call per turn (bash, view, search, validate, submit) after a THOUGHT summary; a turn budget with
a note every five turns; the library validates the file after submit and sends errors back while turns
remain. It never writes a fix. The issue-only explorer is the same model writing the rubric from the
issue alone (the paper's ablation). Both raise :class:`ExplorationFailed` — carrying the trajectory —
when no valid rubric comes out; the pipeline records that and the task's candidates stay inconclusive.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics import Sandbox
from agentic_rubrics.checks import CHECKS
from agentic_rubrics.exceptions import (
    AgenticRubricsError,
    BudgetExceeded,
    RubricError,
    SandboxError,
)
from agentic_rubrics.llm import LLM, CallFailed
from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.rubric import parse_rubric
from agentic_rubrics.types import Rubric, Task

RUBRIC_FILE = "rubrics.yaml"
TOOLS = ("bash", "view", "search", "validate", "submit")
_BLOCK = re.compile(r"```([a-z]+)[ \t]*\n(.*?)```", re.S)
_THOUGHT = re.compile(r"THOUGHT:\s*(\S.*?)(?=```|\Z)", re.S)


class ExplorationFailed(AgenticRubricsError):
    """No valid rubric came out; ``reason`` is a short code, ``steps`` the trajectory so far."""

    def __init__(self, reason: str, steps: list[dict[str, Any]]) -> None:
        super().__init__(reason)
        self.reason = reason
        self.steps = steps


def check_vocabulary() -> list[dict[str, str]]:
    """The check vocabulary as the prompts document it."""
    return [
        {"name": s.name, "arg": s.arg, "doc": s.doc, "example": s.example} for s in CHECKS.values()
    ]


def _validate(text: str) -> tuple[Rubric | None, str, str]:
    try:
        rubric, warnings = parse_rubric(text, RUBRIC_FILE)
    except RubricError as exc:
        return None, "\n".join(str(p) for p in exc.problems), ""
    return rubric, "", "\n".join(str(w) for w in warnings)


@dataclass
class _Run:
    """One exploration's state."""

    task: Task
    sandbox: Sandbox
    steps: list[dict[str, Any]] = field(default_factory=list)
    warned: bool = False


class AgentExplorer:
    """The model-driven explorer (``--explorer agent``)."""

    name = "agent"

    def __init__(
        self,
        llm: LLM,
        *,
        max_turns: int = 30,
        command_timeout: float = 60.0,
        max_observation: int = 10_000,
    ) -> None:
        self.llm = llm
        self.max_turns = max_turns
        self.command_timeout = command_timeout
        self.max_observation = max_observation
        self.prompt = load_prompt("rubric_agent")

    def _turns_left(self, turn: int) -> int | None:
        left = self.max_turns - turn
        return left if turn % 5 == 0 or left <= 2 else None

    async def _tool(
        self, run: _Run, tool: str, argument: str, turn: int
    ) -> tuple[str, Rubric | None]:
        """Run one tool call; returns the observation, and the rubric when a submit is accepted."""
        p = self.prompt
        left = self._turns_left(turn)
        if tool in ("validate", "submit"):
            try:
                text = await run.sandbox.read_file(RUBRIC_FILE)
            except SandboxError:
                text = None
            if text is None:
                errors, warnings, rubric = f"{RUBRIC_FILE} does not exist yet.", "", None
            else:
                rubric, errors, warnings = _validate(text)
            if tool == "submit" and rubric is not None and (not warnings or run.warned):
                return "", rubric
            if tool == "submit" and rubric is not None:
                run.warned = True  # warnings go back once; a second submit is accepted
            if tool == "submit" and rubric is None and turn >= self.max_turns:
                raise ExplorationFailed("invalid_rubric", run.steps)
            obs = p.render(
                "validation",
                errors=errors,
                warnings=warnings,
                rubric_file=RUBRIC_FILE,
                turns_left=left,
            )
            return obs, None
        if tool == "view":
            parts = argument.split()
            path = parts[0] if parts else ""
            content = await run.sandbox.read_file(path)
            lines = content.splitlines()
            lo = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 1
            hi = int(parts[2]) if len(parts) > 2 and parts[2].isdigit() else len(lines)
            output = "\n".join(
                f"{n:6d}  {lines[n - 1]}" for n in range(max(lo, 1), min(hi, len(lines)) + 1)
            )
            return p.render(
                "observation", tool=tool, output=self._cap(output), turns_left=left
            ), None
        if tool == "search":
            pattern, _, where = argument.partition("\n")
            command = f"grep -rnE -- {shlex.quote(pattern.strip())} {shlex.quote(where.strip() or '.')} | head -200"
        else:
            command = argument
        result = await run.sandbox.run(
            command, timeout=self.command_timeout, max_output=self.max_observation
        )
        run.steps[-1].update(
            exit_code=result.exit_code, timed_out=result.timed_out, truncated=result.truncated
        )
        obs = p.render(
            "observation", tool=tool, output=result.output, exit_code=result.exit_code,
            timed_out=result.timed_out, turns_left=left,
        )  # fmt: skip
        return obs, None

    def _cap(self, text: str) -> str:
        if len(text) <= self.max_observation:
            return text
        return (
            text[: self.max_observation]
            + f"\n[... truncated at {self.max_observation} characters ...]"
        )

    async def explore(
        self, task: Task, sandbox: Sandbox | None
    ) -> tuple[Rubric, list[dict[str, Any]]]:
        """Run the agent to a valid, submitted rubric; raise ExplorationFailed otherwise."""
        if sandbox is None:
            raise ExplorationFailed("no_repository", [])
        p = self.prompt
        workspace = str(getattr(sandbox, "workdir", "the current folder"))
        variables = {
            "workspace": workspace,
            "max_turns": self.max_turns,
            "checks": check_vocabulary(),
        }
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": p.render("system", **variables)},
            {
                "role": "user",
                "content": p.render(
                    "instance",
                    issue=task.problem_statement,
                    repo=task.repo or task.instance_id,
                    **variables,
                ),
            },
        ]
        run = _Run(task, sandbox)
        for turn in range(1, self.max_turns + 1):
            try:
                completion = await self.llm.complete(
                    messages, phase="explore", task=task.instance_id
                )
            except BudgetExceeded as exc:
                raise ExplorationFailed("budget", run.steps) from exc
            except CallFailed as exc:
                raise ExplorationFailed(f"model_error:{exc.kind}", run.steps) from exc
            text = completion.content or ""
            messages.append({"role": "assistant", "content": text})
            thought = _THOUGHT.search(text)
            blocks = [(tool, body.strip()) for tool, body in _BLOCK.findall(text) if tool in TOOLS]
            step: dict[str, Any] = {
                "turn": turn,
                "thought": thought.group(1).strip() if thought else None,
                "tool": blocks[0][0] if len(blocks) == 1 else None,
                "argument": blocks[0][1] if len(blocks) == 1 else None,
                "prompt_tokens": completion.usage.prompt_tokens,
                "completion_tokens": completion.usage.completion_tokens,
                "cost_usd": completion.usage.cost_usd,
                "cached": completion.usage.cached,
            }
            run.steps.append(step)
            problems = []
            if thought is None:
                problems.append("the THOUGHT summary is missing")
            if len(blocks) != 1:
                problems.append(f"expected exactly one tool block, found {len(blocks)}")
            if problems:
                step["error"] = "format"
                feedback = p.render(
                    "format_error", errors="; ".join(problems), turns_left=self._turns_left(turn)
                )
                messages.append({"role": "user", "content": feedback})
                continue
            tool, argument = blocks[0]
            try:
                observation, rubric = await self._tool(run, tool, argument, turn)
            except SandboxError as exc:
                observation, rubric = f"The tool failed: {exc}", None
            if rubric is not None:
                step["submitted"] = True
                return rubric, run.steps
            # what a command printed (the environment of an unisolated sandbox ...) may hold a secret:
            # neither the provider nor anything written gets it
            observation = self.llm.redactor.text(observation)
            step["observation_chars"] = len(observation)
            step["observation"] = observation[:2000]
            messages.append({"role": "user", "content": observation})
        raise ExplorationFailed("turn_budget_exhausted", run.steps)


class IssueOnlyExplorer:
    """The same model writing the rubric from the issue alone (``--explorer issue-only``)."""

    name = "issue-only"

    def __init__(self, llm: LLM, *, attempts: int = 3) -> None:
        self.llm = llm
        self.attempts = attempts
        self.prompt = load_prompt("rubric_agent")

    async def explore(
        self, task: Task, sandbox: Sandbox | None = None
    ) -> tuple[Rubric, list[dict[str, Any]]]:
        """Ask for the file; send validation errors back up to ``attempts`` times."""
        steps: list[dict[str, Any]] = []
        errors = ""
        system = self.prompt.render("issue_only_system", checks=check_vocabulary())
        for attempt in range(1, self.attempts + 1):
            user = self.prompt.render(
                "issue_only_user",
                issue=task.problem_statement,
                repo=task.repo or task.instance_id,
                errors=errors,
            )
            try:
                completion = await self.llm.complete(
                    [{"role": "system", "content": system}, {"role": "user", "content": user}],
                    phase="explore",
                    task=task.instance_id,
                )
            except BudgetExceeded as exc:
                raise ExplorationFailed("budget", steps) from exc
            except CallFailed as exc:
                raise ExplorationFailed(f"model_error:{exc.kind}", steps) from exc
            text = completion.content or ""
            blocks = [body for tool, body in _BLOCK.findall(text) if tool in ("yaml", "yml")]
            rubric, errors, _ = _validate(blocks[-1] if blocks else text)
            steps.append({"turn": attempt, "tool": "write", "valid": rubric is not None,
                          "prompt_tokens": completion.usage.prompt_tokens,
                          "completion_tokens": completion.usage.completion_tokens,
                          "cost_usd": completion.usage.cost_usd})  # fmt: skip
            if rubric is not None:
                return rubric, steps
        raise ExplorationFailed("invalid_rubric", steps)
