"""LLMConfig: one model and how to call it (see :class:`agentic_rubrics.llm.door.LLM`, the door)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializationInfo,
    field_serializer,
    field_validator,
)

from agentic_rubrics.redaction import redact_url
from agentic_rubrics.setting_effects import SPEED

ReasoningEffort = Literal["none", "minimal", "low", "medium", "high", "xhigh", "max"]


class LLMConfig(BaseModel):
    """One model and how to call it. The API key is never part of it (see :class:`agentic_rubrics.llm.door.LLM`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    """Any litellm model string, e.g. ``openai/gpt-4o-mini`` or ``hosted_vllm/Qwen3-32B``."""
    api_base: Annotated[str | None, SPEED] = None
    """Base URL of an OpenAI-compatible server (vLLM, Ollama, a proxy). Credentials in it
    (``https://user:pass@host``) are used for the calls and left out whenever it is serialized, unless
    the serialization context asks for ``secrets`` (handing the configuration to a worker process)."""
    timeout: Annotated[float, SPEED] = Field(default=120.0, gt=0)
    """Seconds one attempt may take from sending the request to the last byte of the answer; past
    it the attempt is abandoned and retried as a transient failure. A whole call therefore ends within
    ``(max_retries + 1) * timeout + max_retries * backoff_max`` seconds."""
    max_retries: Annotated[int, SPEED] = Field(default=4, ge=0, le=20)
    """Retries after the first attempt, for transient failures only."""
    backoff_initial: Annotated[float, SPEED] = Field(default=1.0, ge=0)
    """First wait before a retry (seconds), doubled each time, with jitter."""
    backoff_max: Annotated[float, SPEED] = Field(default=60.0, ge=0)
    """Longest wait between retries, also the cap on a server's Retry-After."""
    concurrency: Annotated[int, SPEED] = Field(default=16, ge=1)
    """Calls in flight at once, shared by all tasks of a run."""
    temperature: float | None = 0.0
    """Sampling temperature (None: the provider's default). Not sent when the model reasons (see
    ``reasoning_effort``): reasoning models accept only their provider's default."""
    max_tokens: int | None = Field(default=4096, ge=1)
    """Cap on the answer's length; when the model reasons, the reasoning reserve comes on top."""
    reasoning_effort: ReasoningEffort | None = None
    """Sent as litellm's ``reasoning_effort`` (``None``: not sent; the provider's default). For
    Anthropic models litellm turns it into extended thinking with a budget; ``none`` turns reasoning
    off where the model allows it."""
    reasoning_tokens: int | None = Field(default=None, ge=1)
    """Tokens reserved for reasoning on top of ``max_tokens`` when the model reasons (``None``: by
    ``reasoning_effort``, 16,384 at the default effort). Setting it also marks a model litellm does not
    know as reasoning (a local model that thinks aloud in ``<think>`` blocks)."""
    context_tokens: int | None = Field(default=None, ge=1024)
    """The model's context window in tokens, where litellm does not know it (a local server;
    ``None``: litellm's ``max_input_tokens``, else 32,768). The agent keeps its conversation within it."""
    extra_params: dict[str, Any] = Field(default_factory=dict)
    """Passed through to litellm unchanged (e.g. ``top_p``, ``thinking``): JSON values only (they go
    into the request's body and the response cache's key)."""

    input_cost_per_token: float | None = Field(default=None, ge=0)
    """Price this model (dollars per prompt token) where litellm does not know it, e.g. a local server."""
    output_cost_per_token: float | None = Field(default=None, ge=0)
    """Price this model (dollars per completion token) where litellm does not know it."""
    unpriced_usd_per_mtok: Annotated[float, SPEED] = Field(default=15.0, ge=0)
    """What ``--max-cost`` charges per million tokens (prompt and answer alike) for a call of a model
    with no price (neither litellm's map nor the two fields above): an estimate, above most hosted
    models' prices, reported apart from measured dollars. Price the model to be exact."""
    processes: Annotated[Annotated[int, Field(ge=0, le=64)] | Literal["auto"], SPEED] = "auto"
    """0: call litellm in this process. N: run litellm in N worker processes (its per-call CPU cost
    then stops limiting throughput); not for ``local/`` scripted models. ``auto``: in this process
    until the calls' measured CPU at this concurrency would saturate a core, then in worker processes
    (never for fewer than 200 calls, nor for providers registered only in this process; see
    :class:`agentic_rubrics.llm.pool_auto.AutoPool`). Should every worker die after starting, calls go
    on in this process; should none ever start, the run stops and says why (``WorkerStartError``)."""

    @field_validator("extra_params")
    @classmethod
    def _json_values(cls, value: dict[str, Any]) -> dict[str, Any]:
        import json

        try:
            json.dumps(value, sort_keys=True)
        except (TypeError, ValueError, RecursionError) as exc:
            raise ValueError(f"extra_params must hold JSON values only: {exc}") from exc
        return value

    @field_serializer("api_base")
    def _public_api_base(self, value: str | None, info: SerializationInfo) -> str | None:
        if value is None or (info.context or {}).get("secrets"):
            return value
        return redact_url(value)


def llm_slot_key(config: LLMConfig) -> str:
    """One concurrency limit per model and server."""
    return f"llm:{config.model}@{redact_url(config.api_base or '')}"
