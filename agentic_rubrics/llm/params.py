"""What a model accepts, from litellm's own knowledge, and the parameters each call sends it.

Providers differ in what a request may carry: OpenAI's reasoning models (o1, o3, gpt-5) refuse any
temperature but their default and count their hidden reasoning against ``max_completion_tokens``;
Anthropic with extended thinking accepts only temperature 1 and needs ``max_tokens`` above the thinking
budget; a local server accepts almost anything. Rather than a table of our own, the door asks litellm
(``get_supported_openai_params``, ``supports_reasoning``, ``supports_function_calling``,
``get_model_info``) and sends every call with ``drop_params=True``, so a parameter litellm knows the
model cannot take is left out instead of failing the call before it is sent.

When the model reasons, the call sends no temperature and its completion budget is the answer's own
(``max_tokens``) plus room for the reasoning (``reasoning_tokens``, or a default by ``reasoning_effort``),
capped by the model's ``max_output_tokens`` where litellm knows it.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentic_rubrics.llm.config import LLMConfig

__all__ = ["REASONING_TOKENS", "ModelTraits", "call_params", "model_traits", "reasoning_active"]

REASONING_TOKENS: dict[str | None, int] = {
    "minimal": 2048,
    "low": 4096,
    None: 16384,  # the provider's default effort (medium for OpenAI)
    "medium": 16384,
    "high": 32768,
    "xhigh": 49152,
    "max": 65536,
}
"""Tokens kept for reasoning on top of the answer's own budget, by ``reasoning_effort``. OpenAI
advises leaving about 25,000 tokens for reasoning and answer together at medium effort; Anthropic's
thinking budgets that litellm derives from an effort (1,024 to 16,384 tokens) all fit below these."""

DEFAULT_CONTEXT_TOKENS = 32_768
"""The context window assumed for a model litellm does not know (a local server), unless configured."""


@dataclass(frozen=True)
class ModelTraits:
    """What litellm knows about a model; ``None`` where it does not know."""

    supported: frozenset[str] | None
    """The OpenAI-style parameters litellm maps for this model (``None``: provider unknown to it)."""
    reasoning: bool
    """litellm says the model reasons (``supports_reasoning``)."""
    reasoning_opt_in: bool
    """Its reasoning is off unless asked for: a ``thinking`` parameter (Anthropic-style), or a
    default reasoning effort of ``none`` (gpt-5.1)."""
    function_calling: bool
    """litellm says the model takes native tool calls (``supports_function_calling``)."""
    max_input_tokens: int | None
    """The model's context window for the prompt, where litellm knows it."""
    max_output_tokens: int | None
    """The most tokens the model may write in one reply, where litellm knows it."""


def _positive(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


_LITELLM: Any = None


def import_litellm() -> Any:
    """Import litellm once (every module imports it through here), with the local cost map (no network at import) and quiet logging.

    It also answers one mocked request (no network): litellm builds much of its machinery on the
    first call, seconds on a busy machine, and that must not count against a real call's deadline.
    """
    global _LITELLM
    if _LITELLM is None:
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True
        with contextlib.suppress(Exception):  # a warm-up only: a failure here changes nothing
            litellm.completion(
                model="openai/agentic-rubrics-warm-up",
                messages=[{"role": "user", "content": "warm-up"}],
                mock_response="ok",
            )
        _LITELLM = litellm
    return _LITELLM


@lru_cache(maxsize=64)
def model_traits(model: str) -> ModelTraits:
    """What litellm knows about ``model`` (each lookup guarded: an unknown model knows nothing)."""
    litellm = import_litellm()
    supported: frozenset[str] | None = None
    reasoning = function_calling = False
    info: dict[str, Any] = {}
    with contextlib.suppress(Exception):
        found = litellm.get_supported_openai_params(model=model)
        supported = frozenset(found) if isinstance(found, list) else None
    with contextlib.suppress(Exception):
        reasoning = bool(litellm.supports_reasoning(model=model))
    with contextlib.suppress(Exception):
        function_calling = bool(litellm.supports_function_calling(model=model))
    with contextlib.suppress(Exception):
        info = dict(litellm.get_model_info(model))
    opt_in = (supported is not None and "thinking" in supported) or info.get(
        "default_reasoning_effort"
    ) == "none"
    return ModelTraits(
        supported=supported,
        reasoning=reasoning,
        reasoning_opt_in=opt_in,
        function_calling=function_calling,
        max_input_tokens=_positive(info.get("max_input_tokens")),
        max_output_tokens=_positive(info.get("max_output_tokens")),
    )


def _thinking(config: LLMConfig) -> dict[str, Any] | None:
    value = config.extra_params.get("thinking")
    if isinstance(value, dict) and value.get("type") in ("enabled", "adaptive"):
        return value
    return None


def reasoning_active(config: LLMConfig, traits: ModelTraits) -> bool:
    """Whether this model reasons on these calls: asked for by ``reasoning_effort`` (anything but
    ``none``), by an enabled ``thinking`` in ``extra_params`` or by a ``reasoning_tokens`` reserve (a
    local model that thinks aloud); otherwise whenever litellm says the model reasons and its
    reasoning is not opt-in."""
    if config.reasoning_effort is not None:
        return config.reasoning_effort != "none"
    if _thinking(config) is not None or config.reasoning_tokens is not None:
        return True
    return traits.reasoning and not traits.reasoning_opt_in


def reasoning_reserve(config: LLMConfig) -> int:
    """Tokens kept for the reasoning of one call."""
    if config.reasoning_tokens is not None:
        return config.reasoning_tokens
    thinking = _thinking(config)
    budget = _positive((thinking or {}).get("budget_tokens"))
    if budget is not None:
        return budget
    return REASONING_TOKENS.get(config.reasoning_effort, REASONING_TOKENS[None])


def completion_budget(
    config: LLMConfig, traits: ModelTraits, answer_tokens: int | None = None
) -> int | None:
    """The cap on one reply: the answer's tokens, plus the reasoning reserve when the model reasons,
    at most the model's ``max_output_tokens`` (``None``: no cap is sent)."""
    answer = answer_tokens if answer_tokens is not None else config.max_tokens
    if answer is None:
        return None
    total = answer + (reasoning_reserve(config) if reasoning_active(config, traits) else 0)
    if traits.max_output_tokens is not None:
        total = min(total, traits.max_output_tokens)
    return total


def context_budget(config: LLMConfig, traits: ModelTraits) -> int:
    """Tokens the prompt of one call may take: the configured ``context_tokens``, else litellm's
    ``max_input_tokens``, else :data:`DEFAULT_CONTEXT_TOKENS`; less the reply's own budget, since
    many servers count prompt and reply against one window (vLLM's ``max_model_len``)."""
    window = config.context_tokens or traits.max_input_tokens or DEFAULT_CONTEXT_TOKENS
    reply = completion_budget(config, traits) or 0
    return max(window - reply, window // 4)


def call_params(
    config: LLMConfig, traits: ModelTraits, *, answer_tokens: int | None = None, **extra: Any
) -> dict[str, Any]:
    """The parameters of one call: what the configuration asks, shaped for this model.

    ``answer_tokens`` replaces ``max_tokens`` as the answer's own budget (the reasoning reserve comes on
    top); ``extra`` (``logprobs``, ``tools`` ...) is sent where litellm maps it for this model.
    """
    reasoning = reasoning_active(config, traits)
    params: dict[str, Any] = {}
    if config.temperature is not None and not reasoning:
        params["temperature"] = config.temperature
    budget = completion_budget(config, traits, answer_tokens)
    if budget is not None:
        params["max_tokens"] = (
            budget  # litellm sends max_completion_tokens where the model wants it
        )
    if config.reasoning_effort is not None:
        params["reasoning_effort"] = config.reasoning_effort
    params.update(config.extra_params)
    for name, value in extra.items():
        if traits.supported is None or name in traits.supported:
            params[name] = value
    params["drop_params"] = True  # what litellm knows the model refuses is left out, not an error
    return dict(sorted(params.items()))
