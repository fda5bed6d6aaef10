"""A loopback server speaking Anthropic's Messages API (``POST /v1/messages``), scriptable per request.

Point ``anthropic/<model>`` at it (``api_base=server.url``, any key): litellm builds the real Anthropic
request (system blocks, content blocks, ``thinking``, tools with ``input_schema``) and reads the real
response shape back. Before answering, it refuses what the real API refuses, with the real API's error
shape (``{"type": "error", "error": {"type": "invalid_request_error", ...}}``):

- no ``max_tokens``; a temperature outside 0..1;
- with extended thinking (``thinking: {type: enabled}``): a budget under 1,024 tokens, ``max_tokens`` not
  above the budget, a temperature other than 1, ``top_p`` below 0.95, ``top_k``; the last assistant
  message of a tool loop not starting with a thinking block; a thinking block whose signature is not
  the one this server gave it (a block changed on its way back).

A scripted :class:`~agentic_rubrics.testing.replies.Reply` becomes content blocks: a thinking block
(``reasoning``, or a default text when thinking is on), a text block (``content``) and ``tool_use`` blocks
(``tool_calls``); ``finish_reason`` ``length`` becomes ``stop_reason: max_tokens``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any

from agentic_rubrics.testing.replies import Reply
from agentic_rubrics.testing.server import LoopbackServer

__all__ = ["AnthropicServer"]

MIN_THINKING_BUDGET = 1024
"""The smallest ``thinking.budget_tokens`` the API accepts."""

_DOCS = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"


def _blocks(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


def _invalid(message: str) -> Reply:
    return Reply(status=400, error=message)


class AnthropicServer(LoopbackServer):
    """Anthropic's Messages API on 127.0.0.1. ``thinking_requests`` counts requests with thinking on."""

    _secret = os.urandom(16)

    def sign(self, thinking: str) -> str:
        """The signature this server gives a thinking block (checked when the block comes back)."""
        return hmac.new(self._secret, thinking.encode(), hashlib.sha256).hexdigest()

    @property
    def url(self) -> str:
        """The ``api_base`` to give litellm (it appends ``/v1/messages`` itself)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def refuse(self, body: dict[str, Any], path: str) -> Reply | None:
        if path.rstrip("/") != "/v1/messages":
            return Reply(status=404, error=f"Not found: {path}")
        max_tokens = body.get("max_tokens")
        if not isinstance(max_tokens, int):
            return _invalid("max_tokens: Field required")
        temperature = body.get("temperature")
        if temperature is not None and not 0 <= temperature <= 1:
            return _invalid("temperature: range: 0..1")
        thinking = body.get("thinking") or {}
        if thinking.get("type") != "enabled":
            return None
        budget = thinking.get("budget_tokens")
        if not isinstance(budget, int) or budget < MIN_THINKING_BUDGET:
            return _invalid(
                "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024"
            )
        if max_tokens <= budget:
            return _invalid(
                "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our"
                f" documentation at {_DOCS}#max-tokens-and-context-window-size"
            )
        if temperature is not None and temperature != 1:
            return _invalid(
                "`temperature` may only be set to 1 when thinking is enabled. Please consult our"
                f" documentation at {_DOCS}#feature-compatibility"
            )
        top_p = body.get("top_p")
        if top_p is not None and top_p < 0.95:
            return _invalid("`top_p` must be unset or between 0.95 and 1 when thinking is enabled.")
        if body.get("top_k") is not None:
            return _invalid("`top_k` must be unset when thinking is enabled.")
        return self._check_thinking_blocks(body.get("messages") or [])

    def _check_thinking_blocks(self, messages: list[Any]) -> Reply | None:
        assistants = [
            (n, m)
            for n, m in enumerate(messages)
            if isinstance(m, dict) and m.get("role") == "assistant"
        ]
        for n, message in assistants:
            for block in _blocks(message):
                if isinstance(block, dict) and block.get("type") == "thinking":
                    text, signature = str(block.get("thinking", "")), block.get("signature")
                    if not hmac.compare_digest(str(signature), self.sign(text)):
                        return _invalid(
                            f"messages.{n}.content: Invalid `signature` in `thinking` block"
                        )
        if not assistants:
            return None
        n, last = assistants[-1]
        blocks = _blocks(last)
        uses_tools = any(isinstance(b, dict) and b.get("type") == "tool_use" for b in blocks)
        first = blocks[0].get("type") if blocks and isinstance(blocks[0], dict) else None
        if uses_tools and first not in ("thinking", "redacted_thinking"):
            return _invalid(
                f"messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found"
                f" `{first}`. When `thinking` is enabled, a final `assistant` message must start with a"
                " thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks)."
            )
        return None

    def success_body(self, reply: Reply, body: dict[str, Any]) -> dict[str, Any]:
        blocks: list[dict[str, Any]] = []
        thinking_on = (body.get("thinking") or {}).get("type") == "enabled"
        if thinking_on or reply.reasoning is not None:
            text = reply.reasoning if reply.reasoning is not None else "Let me weigh the request."
            blocks.append({"type": "thinking", "thinking": text, "signature": self.sign(text)})
        if reply.content:
            blocks.append({"type": "text", "text": reply.content})
        for n, call in enumerate(reply.tool_calls or []):
            args = call.get("arguments", {})
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.get("id") or f"toolu_{n:04d}",
                    "name": call["name"],
                    "input": json.loads(args) if isinstance(args, str) else args,
                }
            )
        stop = {"length": "max_tokens", "content_filter": "refusal"}.get(reply.finish_reason)
        return {
            "id": "msg_loopback",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", "loopback"),
            "content": blocks,
            "stop_reason": stop or ("tool_use" if reply.tool_calls else "end_turn"),
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.prompt_tokens,
                "output_tokens": reply.completion_tokens,
            },
        }

    def error_body(self, reply: Reply) -> dict[str, Any]:
        kind = {401: "authentication_error", 404: "not_found_error", 429: "rate_limit_error"}.get(
            reply.status, "invalid_request_error" if reply.status < 500 else "api_error"
        )
        return {"type": "error", "error": {"type": kind, "message": reply.error}}
