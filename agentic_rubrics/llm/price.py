"""What a call costs when the provider does not say: the estimate the run's budget is charged.

A call's cost is unknown when litellm cannot price the model, or when the provider reported no usable
token counts (see :func:`agentic_rubrics.llm.reply.to_completion`). Such a call still spent money, so
``--max-cost`` is charged an estimate, never 0: the request's size at the model's price.

- Tokens: the provider's counts where they are usable, else the text's length over 4 characters per
  token (prompt: every message's text and the tools' definitions; answer: its text and tool calls),
  at least one each. A tokenizer-free estimate: within a factor of about 1.5 for English and code.
- Price: the configured ``input_cost_per_token`` / ``output_cost_per_token``, else litellm's map,
  else ``unpriced_usd_per_mtok`` (per million tokens, prompt and answer alike), which the run names
  in a warning at its start when a budget is set.

The estimate is recorded apart from measured dollars (``estimated_usd`` in spend.jsonl and the report).
"""

from __future__ import annotations

import json
import math
from typing import Any

from agentic_rubrics.llm.config import LLMConfig
from agentic_rubrics.protocols import Completion

CHARS_PER_TOKEN = 4


def litellm_prices(model: str) -> tuple[float, float] | None:
    """litellm's prices per prompt and per answer token for ``model`` (``None``: it has none)."""
    from agentic_rubrics.llm.params import import_litellm

    litellm = import_litellm()
    try:
        info = dict(litellm.get_model_info(model))
    except Exception:
        return None
    prompt, answer = (
        _price(info.get("input_cost_per_token")),
        _price(info.get("output_cost_per_token")),
    )
    if not prompt and not answer:
        return None
    return prompt, answer


def _price(value: Any) -> float:
    """A price from litellm's map: a finite number > 0, else 0."""
    ok = isinstance(value, int | float) and math.isfinite(value) and value > 0
    return float(value) if ok else 0.0


def prices(config: LLMConfig) -> tuple[float, float] | None:
    """The model's prices per prompt and per answer token, from the configuration or litellm."""
    if config.input_cost_per_token is not None or config.output_cost_per_token is not None:
        return (config.input_cost_per_token or 0.0, config.output_cost_per_token or 0.0)
    return litellm_prices(config.model)


def _chars(value: Any) -> int:
    if isinstance(value, str):
        return len(value)
    if value is None:
        return 0
    try:
        return len(json.dumps(value, default=str))
    except (TypeError, ValueError, RecursionError):
        return len(str(value))


def estimate_usd(
    config: LLMConfig,
    kwargs: dict[str, Any],
    completion: Completion,
    known: tuple[float, float] | None,
) -> float:
    """The dollars a call of unknown cost is charged (``known``: :func:`prices` of its model)."""
    usage = completion.usage
    if usage.reported:
        prompt, answer = usage.prompt_tokens, usage.completion_tokens
    else:
        text = sum(_chars(m.get("content")) for m in kwargs.get("messages") or [])
        prompt = max(1, (text + _chars(kwargs.get("tools"))) // CHARS_PER_TOKEN)
        said = _chars(completion.content) + sum(
            _chars(c.arguments) for c in completion.tool_calls or ()
        )
        answer = max(1, said // CHARS_PER_TOKEN)
    if known is None:
        return (prompt + answer) * config.unpriced_usd_per_mtok / 1e6
    return prompt * known[0] + answer * known[1]
