"""A provider's response read defensively: it is untrusted input like any other.

Whatever the server sent — no choice at all, a token count that is not a number, log-probabilities of
another shape, lone surrogates in the text — becomes a :class:`Completion` of a fixed shape or a
classified :class:`CallFailed`, never an exception from deep inside.
"""

from __future__ import annotations

import math
from typing import Any

from agentic_rubrics.llm_errors import CallFailed
from agentic_rubrics.text import replace_lone_surrogates
from agentic_rubrics.types import Completion, Usage

__all__ = ["to_completion"]


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
    return Completion(
        content=_text(getattr(message, "content", None)),
        finish_reason=finish if isinstance(finish, str) else None,
        refusal=_text(getattr(message, "refusal", None)),
        model=_text(getattr(response, "model", None)) or "",
        usage=Usage(
            prompt_tokens=_count(getattr(usage, "prompt_tokens", 0)),
            completion_tokens=_count(getattr(usage, "completion_tokens", 0)),
            cost_usd=_cost(response, model, litellm),
        ),
        logprobs=_logprobs(getattr(choice, "logprobs", None)),
    )
