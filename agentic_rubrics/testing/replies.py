"""What the shipped fakes answer: scripted replies, and the reply of a judge that answers every item."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Reply:
    """What the fake server (or provider) answers to one request.

    ``action`` ``"hang"`` never answers (until the server stops); ``"drop"`` closes the connection
    without a response. ``status`` other than 200 sends ``error`` as an OpenAI-style error body.
    ``raw`` replaces the body the server would build (malformed JSON, ``"choices": []`` ...);
    ``trickle`` sends the body one byte every ``trickle`` seconds (the loopback server only).
    """

    content: str | None = ""
    finish_reason: str = "stop"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    error: str = "scripted error"
    refusal: str | None = None
    action: str | None = None
    prompt_tokens: int = 100
    completion_tokens: int = 20
    logprobs: list[Any] | None = None
    raw: str | bytes | None = None
    trickle: float = 0.0
    tool_calls: list[dict[str, Any]] | None = None
    """Native tool calls, each ``{"name", "arguments"}`` (arguments a dict or a JSON string; ``id``
    optional)."""
    reasoning: str | None = None
    """Reasoning shown apart from the answer: ``reasoning_content`` in the OpenAI shape, a thinking
    block from the Anthropic server."""
    usage: Any = "counts"
    """The ``usage`` object as sent: ``"counts"`` builds it from ``prompt_tokens`` and
    ``completion_tokens``; ``None`` leaves the key out; anything else is sent as it is (a provider's
    nulls, negative or absurd counts)."""
    message_extra: dict[str, Any] = field(default_factory=dict)
    """More keys of the OpenAI-shaped message, as a server sends them (vLLM without a reasoning parser
    sends ``"reasoning_content": null`` beside a content that holds the ``<think>`` block)."""


Script = Callable[[dict[str, Any], int], Reply]
"""``script(request_body, request_number)`` -> the reply; request numbers start at 0."""

_ITEM_IDS = re.compile(r"Answer for exactly these item ids: (\[[^\n]*\])")


def message_text(message: dict[str, Any]) -> str:
    """A chat message's text, whether its content is a string or a list of blocks (Anthropic's text
    and ``tool_result`` blocks)."""
    content = message.get("content")
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                parts.append(message_text(block))
            elif isinstance(block, dict):
                parts.append(str(block.get("text", "")))
        return "\n".join(parts)
    return str(content or "")


def requested_ids(body: dict[str, Any]) -> list[str]:
    """The item ids a judge prompt asks about (the judge template lists them as a JSON list)."""
    text = message_text((body.get("messages") or [{}])[-1])
    found = _ITEM_IDS.findall(text)
    if not found:
        return []
    ids = json.loads(found[-1])
    return [str(i) for i in ids]


def judge_answer(value: int | Callable[[str], Any] = 1, *, fenced: bool = True) -> Script:
    """A script answering every requested item with ``value`` (or ``value(item_id)``), as JSON."""

    def script(body: dict[str, Any], _: int) -> Reply:
        answer = {i: value(i) if callable(value) else value for i in requested_ids(body)}
        text = json.dumps(answer)
        return Reply(content=f"Verdicts:\n```json\n{text}\n```" if fenced else text)

    return script


def completion_body(reply: Reply, model: str) -> dict[str, Any]:
    """An OpenAI chat.completion response body for ``reply``."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.refusal is not None:
        message["refusal"] = reply.refusal
    if reply.reasoning is not None:
        message["reasoning_content"] = reply.reasoning
    message.update(reply.message_extra)
    finish = reply.finish_reason
    if reply.tool_calls:
        message["tool_calls"] = [
            {
                "id": call.get("id") or f"call_{n}",
                "type": "function",
                "function": {"name": call["name"], "arguments": _arguments(call)},
            }
            for n, call in enumerate(reply.tool_calls)
        ]
        finish = "tool_calls" if finish == "stop" else finish
    choice: dict[str, Any] = {"index": 0, "message": message, "finish_reason": finish}
    if reply.logprobs is not None:
        choice["logprobs"] = {"content": reply.logprobs}
    body: dict[str, Any] = {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [choice],
    }
    if isinstance(reply.usage, str) and reply.usage == "counts":
        body["usage"] = {
            "prompt_tokens": reply.prompt_tokens,
            "completion_tokens": reply.completion_tokens,
            "total_tokens": reply.prompt_tokens + reply.completion_tokens,
        }
    elif reply.usage is not None:
        body["usage"] = reply.usage
    return body


def _arguments(call: dict[str, Any]) -> str:
    args = call.get("arguments", {})
    return args if isinstance(args, str) else json.dumps(args)
