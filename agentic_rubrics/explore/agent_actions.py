"""What the rubric agent asks for each turn: one tool call, read from native tool calls or from text.

Two ways to act, chosen per model: native tool calls (``tools`` in the request) where litellm says the
model supports function calling, or a THOUGHT paragraph and one fenced block (```bash, ```view ...)
otherwise. Both end as the same :class:`Action`; whatever the model wrote is untrusted, so a malformed
call is a format problem sent back to the model, never an exception. Reasoning never reaches this
module: the door cuts ``<think>`` blocks out of the text and keeps provider reasoning apart.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics.prompts import Prompt
from agentic_rubrics.protocols import Completion, ToolCall

TOOLS = ("bash", "view", "search", "validate", "submit")
SOLVE_TOOLS = ("bash", "view", "search", "submit")
"""The proxy-patch author's tools: it edits with bash and submits its workspace's diff."""
_BLOCK = re.compile(r"```([a-z]+)[ \t]*\n(.*?)```", re.S)
_THOUGHT = re.compile(r"THOUGHT:\s*(\S.*?)(?=```|\Z)", re.S)

# the arguments of each tool: (name, JSON type, required); descriptions live in the prompt file
Parameters = dict[str, list[tuple[str, str, bool]]]
_PARAMETERS: Parameters = {
    "bash": [("command", "string", True)],
    "view": [("path", "string", True), ("start", "integer", False), ("end", "integer", False)],
    "search": [("pattern", "string", True), ("path", "string", False), ("page", "integer", False)],
    "validate": [],
    "submit": [],
}
CONTENT_SUBMIT: Parameters = {**_PARAMETERS, "submit": [("content", "string", False)]}
"""The tools of an agent whose submit may carry the file's content (the test writer)."""


@dataclass
class Action:
    """One turn's request: the tool and its argument in the text form (``path start end`` for view,
    ``pattern`` newline ``path`` for search), or the problems that kept it from being one."""

    tool: str | None = None
    argument: str = ""
    thought: str | None = None
    call_id: str | None = None
    problems: list[str] = field(default_factory=list)
    unanswered: list[str] = field(default_factory=list)
    """Ids of further native calls in the same reply: answered, not run (one call per turn)."""


def tool_schemas(
    prompt: Prompt, parameters: Parameters | None = None, tools: tuple[str, ...] = TOOLS
) -> list[dict[str, Any]]:
    """The tools in OpenAI's function format (litellm translates them for other providers)."""
    table = parameters or _PARAMETERS
    out = []
    for tool in tools:
        props = {
            name: {"type": kind, "description": prompt.render(f"tool_{tool}_{name}").strip()}
            for name, kind, _ in table[tool]
        }
        required = [name for name, _, needed in table[tool] if needed]
        out.append(
            {
                "type": "function",
                "function": {
                    "name": tool,
                    "description": prompt.render(f"tool_{tool}").strip(),
                    "parameters": {"type": "object", "properties": props, "required": required},
                },
            }
        )
    return out


def text_action(text: str, tools: tuple[str, ...] = TOOLS) -> Action:
    """The action of a text reply: a THOUGHT paragraph, then exactly one fenced tool block."""
    thought = _THOUGHT.search(text)
    blocks = [(tool, body.strip()) for tool, body in _BLOCK.findall(text) if tool in tools]
    action = Action(thought=thought.group(1).strip() if thought else None)
    if thought is None:
        action.problems.append("the THOUGHT summary is missing")
    if len(blocks) != 1:
        action.problems.append(f"expected exactly one tool block, found {len(blocks)}")
    else:
        action.tool, action.argument = blocks[0]
    return action


def _argument(
    tool: str, args: dict[str, Any], table: Parameters | None = None
) -> tuple[str, str | None]:
    """A native call's arguments in the text form; or a problem."""
    table = table or _PARAMETERS
    for name, kind, needed in table[tool]:
        value = args.get(name)
        if value is None:
            if needed:
                return "", f"the {tool} tool needs the argument {name!r}"
            continue
        if kind == "string" and not isinstance(value, str):
            return "", f"the argument {name!r} of {tool} must be a string"
        if kind == "integer" and (isinstance(value, bool) or not isinstance(value, int)):
            return "", f"the argument {name!r} of {tool} must be an integer"
    if tool == "bash":
        return str(args["command"]), None
    if tool == "view":
        parts = [str(args["path"]), *(str(args[k]) for k in ("start", "end") if k in args)]
        return " ".join(parts), None
    if tool == "search":
        page = f"\npage: {args['page']}" if args.get("page") else ""
        return f"{args['pattern']}\n{args.get('path') or ''}".rstrip("\n") + page, None
    if tool == "submit" and table[tool]:
        return str(args.get("content") or ""), None
    return "", None


def native_action(
    completion: Completion, parameters: Parameters | None = None, tools: tuple[str, ...] = TOOLS
) -> Action:
    """The action of a reply with native tool calls (the first call; the others are not run); a reply
    without any falls back to a text action, so a model that writes its call as text still works."""
    calls: list[ToolCall] = completion.tool_calls or []
    text = completion.content or ""
    if not calls:
        action = text_action(text, tools)
        action.problems = [p for p in action.problems if "THOUGHT" not in p]
        if action.tool is None:
            action.problems = [f"call exactly one of the tools ({', '.join(tools)})"]
        return action
    first = calls[0]
    action = Action(
        thought=text.strip() or None,
        call_id=first.id,
        unanswered=[c.id for c in calls[1:]],
    )
    if first.name not in tools:
        action.problems.append(f"there is no tool named {first.name[:60]!r}")
        return action
    try:
        args = json.loads(first.arguments or "{}")
    except (ValueError, RecursionError):
        args = None
    if not isinstance(args, dict):
        action.problems.append(f"the arguments of {first.name} must be a JSON object")
        return action
    argument, problem = _argument(first.name, args, parameters or _PARAMETERS)
    if problem is not None:
        action.problems.append(problem)
        return action
    action.tool, action.argument = first.name, argument
    return action


def _object_or_empty(arguments: str) -> str:
    """The arguments as sent back: a provider may parse them (Anthropic's ``input`` is an object), so
    anything but a JSON object goes back as ``{}`` (the tool's answer says what was wrong)."""
    try:
        return arguments if isinstance(json.loads(arguments), dict) else "{}"
    except (ValueError, RecursionError):
        return "{}"


def assistant_message(completion: Completion, native: bool) -> dict[str, Any]:
    """The reply as it goes back into the conversation (thinking blocks kept for Anthropic's loop)."""
    message: dict[str, Any] = {"role": "assistant", "content": completion.content or ""}
    if native and completion.tool_calls:
        message["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {"name": c.name, "arguments": _object_or_empty(c.arguments)},
            }
            for c in completion.tool_calls
        ]
    if completion.thinking_blocks:
        message["thinking_blocks"] = completion.thinking_blocks
    return message
