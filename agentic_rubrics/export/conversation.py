"""A rubric agent's trajectory as one chat fine-tuning example.

The conversation is the steps' recorded messages, concatenated (``Step.messages``: whole, before any
elision to fit the context window). Thinking is removed unless kept; a kept one goes into the Hugging
Face file as ``reasoning_content`` (what reasoning models' chat templates read; OpenAI's format has no
field for it). The loop's accepted submit has no tool result; the export answers it
(``prompts/training_data.yaml``), so every call has its result. Tokens are estimated without a
tokenizer: characters of the example's JSON (messages and tools) divided by :data:`CHARS_PER_TOKEN`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.runfolder.rows import Trajectory

CHARS_PER_TOKEN = 4
"""Characters per token of the estimate (English and code run at 3.5-4.5 in common tokenizers)."""
_THINK = re.compile(r"<(think|thinking)>.*?(</\1>|\Z)", re.S | re.I)


@dataclass
class Example:
    """One conversation: its messages (OpenAI's form: arguments as JSON text) and tool definitions."""

    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    thinking_removed: int = 0


def from_trajectory(trajectory: Trajectory) -> tuple[Example | None, str]:
    """The trajectory's conversation, or ``None`` and why not (a filter's name).

    ``no_conversation``: no recorded messages (a static explorer, or a run from before they were
    recorded); ``not_submitted``: the agent never had a submit accepted (issue-only: no valid
    attempt).
    """
    steps = trajectory.steps
    if not steps or any(s.messages is None for s in steps):
        return None, "no_conversation"
    if trajectory.explorer == "issue-only":
        if not steps[-1].valid:
            return None, "not_submitted"
        return Example([dict(m) for m in steps[-1].messages or []], []), ""
    if not steps[-1].submitted:
        return None, "not_submitted"
    messages = [dict(m) for s in steps for m in s.messages or []]
    tools = steps[0].tools or []
    last = messages[-1] if messages else {}
    if last.get("role") == "assistant" and last.get("tool_calls"):
        text = load_prompt("training_data").render("submit_accepted", rubric_file="rubrics.yaml")
        for call in last["tool_calls"]:
            messages.append({"role": "tool", "tool_call_id": call.get("id"), "content": text})
    return Example(messages, [dict(t) for t in tools]), ""


def clean(example: Example, *, keep_thinking: bool) -> Example:
    """Only the keys a chat example has; thinking removed (counted), or kept as ``reasoning_content``."""
    out = []
    removed = 0
    for message in example.messages:
        role = message.get("role")
        content = message.get("content")
        kept: dict[str, Any] = {
            "role": role,
            "content": content if isinstance(content, str) else "",
        }
        if role == "assistant":
            thinking = [
                str(b.get("thinking") or "")
                for b in message.get("thinking_blocks") or []
                if isinstance(b, dict)
            ]
            inline = [m.group(0) for m in _THINK.finditer(kept["content"])]
            if thinking or inline:
                removed += 1
                kept["content"] = _THINK.sub("", kept["content"]).strip()
                if keep_thinking:
                    inner = [re.sub(r"</?(think|thinking)>", "", t, flags=re.I) for t in inline]
                    kept["reasoning_content"] = "\n\n".join(t.strip() for t in thinking + inner)
            if message.get("tool_calls"):
                kept["tool_calls"] = [
                    {
                        "id": c.get("id"),
                        "type": "function",
                        "function": {
                            "name": (c.get("function") or {}).get("name"),
                            "arguments": (c.get("function") or {}).get("arguments") or "{}",
                        },
                    }
                    for c in message["tool_calls"]
                ]
        if role == "tool":
            kept["tool_call_id"] = message.get("tool_call_id")
        out.append(kept)
    return Example(out, example.tools, removed)


def unanswered_calls(messages: list[dict[str, Any]]) -> int:
    """Tool calls without a tool message of their id before the next assistant message, plus tool
    messages that answer no call of the assistant message before them."""
    bad = 0
    pending: set[str] = set()
    for message in messages:
        if message["role"] == "assistant":
            bad += len(pending)
            pending = {str(c["id"]) for c in message.get("tool_calls") or []}
        elif message["role"] == "tool":
            if message.get("tool_call_id") in pending:
                pending.discard(message["tool_call_id"])
            else:
                bad += 1
    return bad + len(pending)


def estimate_tokens(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> int:
    """Characters of the example's JSON divided by :data:`CHARS_PER_TOKEN`, rounded up."""
    chars = len(json.dumps({"messages": messages, "tools": tools}, ensure_ascii=False))
    return -(-chars // CHARS_PER_TOKEN)


def openai_row(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
    """OpenAI's chat fine-tuning line: ``messages``, and ``tools`` when the agent had tools."""
    plain = [{k: v for k, v in m.items() if k != "reasoning_content"} for m in messages]
    row: dict[str, Any] = {"messages": plain}
    if tools:
        row["tools"] = tools
        row["parallel_tool_calls"] = False
    return row


def hf_row(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]], meta: dict[str, Any]
) -> dict[str, Any]:
    """The Hugging Face line: ``messages`` and ``tools`` as JSON text (each tool's parameters have
    other keys, which Arrow would merge into one struct padded with nulls), and the metadata."""
    return {"messages": messages, "tools": json.dumps(tools, ensure_ascii=False), **meta}
