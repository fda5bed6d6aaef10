"""A provider's response read defensively: it is untrusted input like any other.

Whatever the server sent — no choice at all, a token count that is not a number, log-probabilities of
another shape, lone surrogates in the text, tool calls by the thousand — becomes a :class:`Completion`
of a fixed shape or a classified :class:`CallFailed`, never an exception from deep inside.

The answer is the text without the model's reasoning: a provider's separate reasoning
(``reasoning_content``, thinking blocks) never enters it, and ``<think>…</think>`` blocks written into
the text (open models served without a reasoning parser) are cut out, so no reader parses a thought
as the answer.
"""

from __future__ import annotations

import math
import re
from typing import Any

from agentic_rubrics.llm.errors import CallFailed
from agentic_rubrics.protocols import Completion, ToolCall, Usage
from agentic_rubrics.redaction import Redactor
from agentic_rubrics.surrogates import replace_lone_surrogates

__all__ = ["redact_completion", "strip_reasoning", "to_completion"]


def _cost(response: Any, model: str, litellm: Any) -> float | None:
    """The call's dollar cost, or ``None`` when litellm cannot price the model (unknown, never 0)."""
    hidden = getattr(response, "_hidden_params", None) or {}
    try:
        if "response_cost" in hidden:  # litellm priced it already (None: it could not)
            cost = hidden["response_cost"]
            found = None if cost is None else float(cost)
        else:
            found = float(litellm.completion_cost(completion_response=response, model=model))
    except Exception:
        return None
    # a provider's absurd token counts must not become a negative or endless bill
    return found if found is not None and math.isfinite(found) and found >= 0 else None


MAX_TOKENS = 100_000_000
"""A count above this for one call is not a count (no model reads or writes that much at once)."""


def _usage(usage: Any, content: str | None, response: Any, model: str, litellm: Any) -> Usage:
    """Tokens and cost, read defensively. Counts are *reported* when the prompt has at least one token
    (litellm reads a null or missing count as 0, and no request has an empty prompt), the answer's
    count is at least one when it has text, and neither is over ``MAX_TOKENS``; otherwise the cost is
    unknown (``None``), since a price times a made-up count is not a cost."""
    prompt = _count(getattr(usage, "prompt_tokens", 0))
    completion = _count(getattr(usage, "completion_tokens", 0))
    reported = (
        1 <= prompt <= MAX_TOKENS
        and completion <= MAX_TOKENS
        and (completion >= 1 or not (content or "").strip())
    )
    return Usage(
        prompt_tokens=min(prompt, MAX_TOKENS),
        completion_tokens=min(completion, MAX_TOKENS),
        cost_usd=_cost(response, model, litellm) if reported else None,
        reported=reported,
    )


def _count(value: Any) -> int:
    """A token count from a provider: a finite whole number >= 0, else 0 (never a crash)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    if isinstance(value, float) and not math.isfinite(value):
        return 0
    return max(int(value), 0)


def _field(obj: Any, name: str) -> Any:
    return obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)


def _token_logprob(entry: Any) -> dict[str, Any] | None:
    """One token's log-probability in the OpenAI shape, keeping only ``token`` and ``logprob``."""
    if not isinstance(entry, dict) and hasattr(entry, "model_dump"):
        entry = entry.model_dump(warnings=False)  # the provider's types, not ours: no warnings
    if not isinstance(entry, dict):
        return None
    token, logprob = entry.get("token"), entry.get("logprob")
    return {
        "token": replace_lone_surrogates(token) if isinstance(token, str) else "",
        "logprob": logprob if isinstance(logprob, int | float) else None,
    }


def _logprobs(raw: Any) -> list[dict[str, Any]] | None:
    """The reply's token log-probabilities, in a fixed shape; anything malformed is dropped."""
    content = _field(raw, "content") if raw is not None else None
    if not isinstance(content, list) or not content:
        return None
    out = []
    for entry in content[:_MAX_LOGPROB_TOKENS]:
        token = _token_logprob(entry)
        if token is None:
            return None
        top = _field(entry, "top_logprobs")
        alts = (
            [_token_logprob(a) for a in top[:_MAX_LOGPROB_TOKENS]] if isinstance(top, list) else []
        )
        token["top_logprobs"] = [a for a in alts if a is not None]
        out.append(token)
    return out


_MAX_LOGPROB_TOKENS = 64
"""Log-probabilities kept per reply (the classifier reads the first token only)."""


def _text(value: Any) -> str | None:
    return replace_lone_surrogates(value) if isinstance(value, str) else None


_THINK_TAG = re.compile(r"<(/?)think(?:ing)?>", re.I)


def strip_reasoning(text: str) -> str:
    """``text`` without ``<think>…</think>`` (or ``<thinking>``) blocks, in one pass.

    A close tag with no open tag before it ends a thought the chat template opened (Qwen3, DeepSeek-R1
    behind vLLM): everything before it is reasoning. An unclosed block runs to the end: a reply cut off
    while thinking holds no answer.
    """
    if "think" not in text.lower():
        return text
    kept: list[str] = []
    depth = start = 0
    for tag in _THINK_TAG.finditer(text):
        if depth == 0:
            kept.append(text[start : tag.start()])
        if tag.group(1):  # a close tag
            if depth == 0:
                kept = []  # the thought began before the reply did
            depth = max(depth - 1, 0)
        else:
            depth += 1
        start = tag.end()
    if depth == 0:
        kept.append(text[start:])
    return "".join(kept).strip()


_MAX_TOOL_CALLS = 16
"""Tool calls kept per reply (the agent runs one per turn)."""
_MAX_ARGUMENTS = 100_000
"""Characters of one tool call's arguments kept (longer ones are cut, and so fail to parse)."""
_MAX_THINKING = 400_000
"""Characters of thinking blocks kept per reply; longer ones are dropped whole (a signature covers the
whole block)."""


def _tool_calls(raw: Any) -> list[ToolCall] | None:
    if not isinstance(raw, list) or not raw:
        return None
    calls = []
    for n, entry in enumerate(raw[:_MAX_TOOL_CALLS]):
        function = _field(entry, "function")
        name, arguments = _field(function, "name"), _field(function, "arguments")
        call_id = _text(_field(entry, "id"))
        calls.append(
            ToolCall(
                id=call_id[:200] if call_id else f"call_{n}",
                name=(_text(name) or "")[:200],
                arguments=(_text(arguments) or "")[:_MAX_ARGUMENTS],
            )
        )
    return calls


def _thinking_blocks(raw: Any) -> list[dict[str, str]] | None:
    if not isinstance(raw, list) or not raw:
        return None
    blocks = []
    for entry in raw:
        kind = _field(entry, "type")
        if kind not in ("thinking", "redacted_thinking"):
            continue
        block = {"type": kind}
        for key in ("thinking", "signature", "data"):
            value = _field(entry, key)
            if isinstance(value, str):
                block[key] = replace_lone_surrogates(value)
        blocks.append(block)
    if not blocks or sum(len(v) for b in blocks for v in b.values()) > _MAX_THINKING:
        return None
    return blocks


def to_completion(response: Any, litellm: Any, model: str) -> Completion:
    """The provider's response as a :class:`Completion`, read defensively (it is untrusted input).

    Raises:
        CallFailed: ``empty_reply`` when the response holds no choice at all.
    """
    choices = getattr(response, "choices", None)
    if not isinstance(choices, list) or not choices:
        raise CallFailed("empty_reply", "the provider answered without any choice")
    choice = choices[0]
    message = getattr(choice, "message", None)
    usage = getattr(response, "usage", None)
    finish = getattr(choice, "finish_reason", None)
    content = _text(getattr(message, "content", None))
    return Completion(
        content=strip_reasoning(content) if content is not None else None,
        finish_reason=finish if isinstance(finish, str) else None,
        refusal=_text(getattr(message, "refusal", None)),
        model=_text(getattr(response, "model", None)) or "",
        usage=_usage(usage, content, response, model, litellm),
        logprobs=_logprobs(getattr(choice, "logprobs", None)),
        tool_calls=_tool_calls(getattr(message, "tool_calls", None)),
        thinking_blocks=_thinking_blocks(getattr(message, "thinking_blocks", None)),
    )


def redact_completion(completion: Completion, redactor: Redactor) -> Completion:
    """The reply with secrets replaced; its token log-probabilities dropped if they spelled one,
    its thinking blocks if they held one."""
    content = completion.content
    clean = redactor.text(content) if content is not None else None
    refusal = completion.refusal
    update: dict[str, Any] = {}
    if clean != content:
        update.update(content=clean, logprobs=None)
    if refusal is not None and (clean_refusal := redactor.text(refusal)) != refusal:
        update["refusal"] = clean_refusal
    if completion.tool_calls:
        calls = [
            c.model_copy(update={"arguments": redactor.text(c.arguments)})
            for c in completion.tool_calls
        ]
        if calls != completion.tool_calls:
            update["tool_calls"] = calls
    blocks = completion.thinking_blocks or []
    if any(redactor.text(v) != v for b in blocks for v in b.values()):
        update["thinking_blocks"] = None  # a signed block cannot be redacted, only left out
    return completion.model_copy(update=update) if update else completion
