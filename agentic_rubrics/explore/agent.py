"""The rubric-writing agent: explores the repository in a sandbox, writes rubrics.yaml, submits.

One tool call per turn (bash, view, search, validate, submit): a native tool call where litellm says the
model supports function calling, else a THOUGHT summary and one fenced block (``explore.agent_actions``).
A turn budget with a note every five turns; the library validates the file after submit and sends
errors back while turns remain; the conversation is kept within the model's context window
(``explore.agent_context``). It never writes a fix. The issue-only explorer is the same prompt without
the exploration instructions and tools, answered from the issue alone (the paper's ablation). Both raise
:class:`ExplorationFailed` — carrying the trajectory — when no valid rubric comes out; the pipeline
records that and the task's candidates stay inconclusive.
"""

from __future__ import annotations

import re
from typing import Any, Literal

from agentic_rubrics.exceptions import (
    BudgetExceeded,
    ExplorationFailed,
    SandboxError,
)
from agentic_rubrics.explore.agent_actions import (
    TOOLS,
    Action,
    Parameters,
    assistant_message,
    native_action,
    text_action,
    tool_schemas,
)
from agentic_rubrics.explore.agent_context import Conversation, estimate_tokens
from agentic_rubrics.explore.agent_tools import (
    RUBRIC_FILE,
    AgentTools,
    InvalidAtLastTurn,
    Run,
    Tools,
    validate_text,
)
from agentic_rubrics.llm.door import LLM, CallFailed
from agentic_rubrics.llm.params import context_budget
from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.protocols import Completion, Sandbox
from agentic_rubrics.rubric.checks import CHECKS
from agentic_rubrics.types import Rubric, Task

__all__ = ["RUBRIC_FILE", "TOOLS", "AgentExplorer", "ExplorationFailed", "IssueOnlyExplorer"]

_YAML = re.compile(r"```(?:yaml|yml)[ \t]*\n(.*?)```", re.S)
CONTEXT_RETRIES = 2
"""Times a turn is asked again, with a smaller budget, when the provider finds the prompt too long."""


def check_vocabulary() -> list[dict[str, str]]:
    """The check vocabulary as the prompts document it."""
    return [
        {"name": s.name, "arg": s.arg, "doc": s.doc, "example": s.example} for s in CHECKS.values()
    ]


def _opening(schemas: list[dict[str, Any]] | None, turn: int) -> dict[str, Any]:
    """What the first step records beside its messages (the conversation as the model wrote it and
    the loop answered it, export-sft's source; the first step's start with the system prompt and
    the issue): the tool definitions every request sends."""
    return {"tools": schemas} if turn == 1 and schemas else {}


class AgentExplorer:
    """The model-driven explorer (``--explorer agent``); the proxy-patch author
    (:mod:`agentic_rubrics.explore.solver`) is the same loop with another prompt and tool set."""

    name = "agent"
    prompt_name = "rubric_agent"
    """The prompt (prompts/<name>.yaml): the role the agent plays."""
    tool_names: tuple[str, ...] = TOOLS
    """The tools it may call."""
    phase = "explore"
    """What its model calls are counted under."""
    file = RUBRIC_FILE
    """The file it writes and submits."""
    invalid = "invalid_rubric"
    """The reason when the last turn submits an invalid file."""
    parameters: Parameters | None = None
    """Its tools' arguments, when not the rubric agent's (the test writer's submit takes content)."""

    def __init__(
        self,
        llm: LLM,
        *,
        max_turns: int = 30,
        command_timeout: float = 60.0,
        max_observation: int = 10_000,
        tool_calls: Literal["auto", "native", "text"] = "auto",
    ) -> None:
        self.llm = llm
        self.max_turns = max_turns
        self.tool_calls = tool_calls
        self.prompt = load_prompt(self.prompt_name)
        tools = Tools(
            self.prompt, max_turns, command_timeout, max_observation, self.file, self.validate
        )
        tools.content = self.parameters is not None and bool(self.parameters["submit"])
        self.tools: AgentTools = tools

    @staticmethod
    def validate(text: str) -> tuple[Any, str, str]:
        """The submitted file's text -> (its content, or ``None``; errors; warnings)."""
        return validate_text(text)

    def prompt_variables(self) -> dict[str, Any]:
        """Variables of its role's prompt beyond the loop's own (none for the rubric agent)."""
        return {}

    @property
    def native(self) -> bool:
        """Whether turns are native tool calls (litellm's capability lookup, unless configured)."""
        if self.tool_calls != "auto":
            return self.tool_calls == "native"
        return self.llm.traits.function_calling

    async def _ask(
        self, convo: Conversation, schemas: list[dict[str, Any]] | None, run: Run
    ) -> Completion:
        """One turn's call, the conversation fitted to the context window first."""
        params: dict[str, Any] = {"tools": schemas, "parallel_tool_calls": False} if schemas else {}
        for attempt in range(CONTEXT_RETRIES + 1):
            if not convo.fit():
                raise ExplorationFailed("context_window", run.steps)
            try:
                return await self.llm.complete(
                    convo.messages, phase=self.phase, task=run.task.instance_id, **params
                )
            except BudgetExceeded as exc:
                raise ExplorationFailed("budget", run.steps) from exc
            except CallFailed as exc:
                if exc.kind == "context_window" and attempt < CONTEXT_RETRIES:
                    convo.shrink()  # the estimate was short for this model's tokenizer
                    continue
                raise ExplorationFailed(f"model_error:{exc.kind}", run.steps) from exc
        raise AssertionError("unreachable")  # pragma: no cover

    def _answer(
        self, convo: Conversation, action: Action, text: str, turn: int, step: dict[str, Any]
    ) -> None:
        """The loop's answer to a turn: a tool message per native call, else a user message (each
        also recorded whole in the turn's step, whatever the context window later elides)."""
        answers: list[dict[str, Any]] = []
        if action.call_id is not None:
            answers.append({"role": "tool", "tool_call_id": action.call_id, "content": text})
            for call_id in action.unanswered:
                not_run = self.prompt.render("not_run")
                answers.append({"role": "tool", "tool_call_id": call_id, "content": not_run})
        else:
            answers.append({"role": "user", "content": text})
        for message in answers:
            convo.add_observation(message, turn)
            step["messages"].append(message)

    def _start(self, task: Task, sandbox: Sandbox, native: bool) -> Conversation:
        p = self.prompt
        variables = {
            "workspace": sandbox.workdir,
            "max_turns": self.max_turns,
            "checks": check_vocabulary(),
            "repo": task.repo or task.instance_id,
            "explore": True,
            "native_tools": native,
            "errors": "",
            **self.prompt_variables(),
        }
        messages = [
            {"role": "system", "content": p.render("system", **variables)},
            {
                "role": "user",
                "content": p.render("instance", issue=task.problem_statement, **variables),
            },
        ]
        schemas = tool_schemas(p, self.parameters, self.tool_names) if native else []
        budget = context_budget(self.llm.config, self.llm.traits)
        return Conversation(
            messages, budget=budget, prompt=p, fixed_tokens=estimate_tokens(schemas)
        )

    async def explore(
        self, task: Task, sandbox: Sandbox | None
    ) -> tuple[Rubric, list[dict[str, Any]]]:
        """Run the agent to a valid, submitted rubric; raise ExplorationFailed otherwise."""
        rubric, steps = await self.loop(task, sandbox)
        return rubric, steps

    async def loop(self, task: Task, sandbox: Sandbox | None) -> tuple[Any, list[dict[str, Any]]]:
        """Run the agent to a valid, submitted file (what :meth:`validate` made of it); raise
        ExplorationFailed otherwise."""
        if sandbox is None:
            raise ExplorationFailed("no_repository", [])
        rubric, steps = await self._loop(Run(task, sandbox))
        return rubric, steps

    async def _loop(self, run: Run) -> tuple[Any, list[dict[str, Any]]]:
        """Turns until a tool call ends the work: what its tool returned, and the steps."""
        task, sandbox, tools = run.task, run.sandbox, self.tool_names
        native = self.native
        schemas = tool_schemas(self.prompt, self.parameters, tools) if native else None
        convo = self._start(task, sandbox, native)
        for turn in range(1, self.max_turns + 1):
            completion = await self._ask(convo, schemas, run)
            if native:
                action = native_action(completion, self.parameters, tools)
            else:
                action = text_action(completion.content or "", tools)
            message = assistant_message(completion, native)
            convo.add_assistant(message, turn)
            step: dict[str, Any] = {
                "turn": turn,
                "thought": action.thought,
                "tool": action.tool,
                "argument": action.argument if action.tool else None,
                "native": action.call_id is not None,
                "prompt_tokens": completion.usage.prompt_tokens,
                "completion_tokens": completion.usage.completion_tokens,
                "cost_usd": completion.usage.cost_usd,
                "cached": completion.usage.cached,
                "context_estimate": convo.tokens(),
                "elided_outputs": convo.elided_outputs,
                "dropped_turns": convo.dropped_turns,
                **_opening(schemas, turn),
                "messages": [*(convo.pinned if turn == 1 else ()), message],
            }
            run.steps.append(step)
            if action.problems or action.tool is None:
                step["error"] = "format"
                feedback = self.prompt.render(
                    "format_error",
                    errors="; ".join(action.problems),
                    native_tools=native,
                    turns_left=self.tools.turns_left(turn),
                )
                self._answer(convo, action, feedback, turn, step)
                continue
            try:
                observation, rubric = await self.tools.run(run, action.tool, action.argument, turn)
            except InvalidAtLastTurn:
                raise ExplorationFailed(self.invalid, run.steps) from None
            except SandboxError as exc:
                observation, rubric = f"The tool failed: {exc}", None
            if rubric is not None:  # the work's result (a rubric, a proxy patch)
                step["submitted"] = True
                return rubric, run.steps
            # what a command printed (the environment of an unisolated sandbox ...) may hold a secret:
            # neither the provider nor anything written gets it
            observation = self.llm.redactor.text(observation)
            step["observation_chars"] = len(observation)
            step["observation"] = observation[:2000]
            self._answer(convo, action, observation, turn, step)
        raise ExplorationFailed("turn_budget_exhausted", run.steps)


class IssueOnlyExplorer:
    """The same model and prompt writing the rubric from the issue alone (``--explorer issue-only``):
    the rubric agent's system prompt without the exploration instructions and tools."""

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
        variables = {
            "repo": task.repo or task.instance_id,
            "checks": check_vocabulary(),
            "explore": False,
            "native_tools": False,
        }
        system = self.prompt.render("system", **variables)
        for attempt in range(1, self.attempts + 1):
            user = self.prompt.render(
                "instance", issue=task.problem_statement, errors=errors, **variables
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
            blocks = _YAML.findall(text)
            rubric, errors, _ = validate_text(blocks[-1] if blocks else text)
            reply = assistant_message(completion, native=False)
            steps.append(
                {
                    "turn": attempt,
                    "tool": "write",
                    "valid": rubric is not None,
                    "prompt_tokens": completion.usage.prompt_tokens,
                    "completion_tokens": completion.usage.completion_tokens,
                    "cost_usd": completion.usage.cost_usd,
                    # each attempt is a conversation of its own (the errors go into its issue)
                    "messages": [
                        {"role": "system", "content": system},
                        {"role": "user", "content": user},
                        reply,
                    ],
                }
            )
            if rubric is not None:
                return rubric, steps
        raise ExplorationFailed("invalid_rubric", steps)
