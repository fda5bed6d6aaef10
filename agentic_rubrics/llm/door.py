"""The one door to litellm: every model call of the library goes through :class:`LLM`.

What it guarantees, for any litellm model string (hosted APIs, or a local OpenAI-compatible server):

- a timeout on every call; bounded retries (tenacity) on transient failures only — rate limits (honouring
  ``Retry-After``), timeouts, 5xx, dropped connections; authentication and unknown-model errors abort the
  run at once with a clear message; a context-window error fails that call without retrying;
- tokens and cost per call; a model litellm cannot price has cost ``None`` (unknown), never 0; every
  request recorded in the run's spend log when it leaves and when it ends (:mod:`agentic_rubrics.llm.spend`);
- a content-addressed response cache on disk (key: model, server, messages, parameters, repeat index), so a rerun
  costs nothing, a resumed run sends no request twice, and repeats are never collapsed;
- one concurrency limit and one cost budget shared by every task of a run.

litellm is imported lazily (it is slow to import) with the local cost map, so importing it never
reaches for the network.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from agentic_rubrics.exceptions import WorkerStartError
from agentic_rubrics.limits import Ledger, Limiter, LocalLimiter
from agentic_rubrics.llm.cache import ResponseCache
from agentic_rubrics.llm.clients import close_loop_clients
from agentic_rubrics.llm.config import LLMConfig, ReasoningEffort, llm_slot_key
from agentic_rubrics.llm.errors import CallFailed, PhaseGuard, classify, retrying
from agentic_rubrics.llm.params import import_litellm
from agentic_rubrics.llm.reply import redact_completion, to_completion
from agentic_rubrics.llm.spend import SpendLog, recorded
from agentic_rubrics.protocols import Completion
from agentic_rubrics.redaction import Redactor, split_credentials, url_secrets
from agentic_rubrics.surrogates import clean_value, has_lone_surrogates

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from agentic_rubrics.llm.params import ModelTraits


__all__ = [
    "LLM",
    "CallFailed",
    "LLMConfig",
    "Ledger",
    "ReasoningEffort",
    "ResponseCache",
    "classify",
    "import_litellm",
    "llm_slot_key",
]

POOL_GRACE = 10.0
"""Seconds a worker process gets beyond the call's timeout before the door gives up on it (a backstop:
the pool itself stops a worker that has not answered 5 s past the timeout, ``pool.ANSWER_GRACE``)."""

PLACEHOLDER_KEY = "no-key-needed-for-local-server"
"""Sent as the API key when an ``api_base`` is given and no key exists anywhere (local servers)."""


class LLM:
    """A model behind the door. Implements the ``Model`` protocol (``name``, ``complete``).

    Args:
        config: the model and how to call it.
        api_key: the key, if any (never written anywhere).
        cache_dir: where responses are cached (``None``: no cache).
        ledger: accounting of this process (per phase and task).
        limiter: the run's global limits (concurrency per model, budget); one per run.
        redactor: what is removed from every reply before anyone reads or stores it (default: the
            key, the credentials of ``api_base``, this process's secret-looking environment values).
        spend_log: the run's durable record of every request sent (``None``: not recorded).
    """

    def __init__(
        self,
        config: LLMConfig,
        *,
        api_key: SecretStr | str | None = None,
        cache_dir: Path | None = None,
        ledger: Ledger | None = None,
        limiter: Limiter | None = None,
        redactor: Redactor | None = None,
        spend_log: SpendLog | None = None,
    ) -> None:
        self.config = config
        self.spend_log = spend_log
        self.name = config.model
        self._key = SecretStr(api_key) if isinstance(api_key, str) else api_key
        key = self._key.get_secret_value() if self._key is not None else None
        self.redactor = redactor or Redactor([key, *url_secrets(config.api_base)])
        self.cache = ResponseCache(cache_dir) if cache_dir is not None else None
        self.ledger = ledger or Ledger()
        self.limiter: Limiter = limiter or LocalLimiter({self.slot_key: config.concurrency})
        self._pool: Any = None
        self._pool_gone = False  # a fixed pool none of whose workers runs: warned once
        self._auto: Any = None  # processes="auto": its AutoPool, or False where workers cannot run
        self._priced = False
        self.requests_sent = 0
        self._prices: tuple[tuple[float, float] | None] | None = None  # looked up on first need
        self.retry_waits: list[float] = []
        """Seconds waited before each retry of this door's calls, in order (at most ``backoff_max``)."""
        self.guard = PhaseGuard(config.model)

    @property
    def slot_key(self) -> str:
        """The limiter key of this model (one concurrency limit per model configuration)."""
        return llm_slot_key(self.config)

    def _api_key(self) -> str | None:
        if self._key is not None:
            return self._key.get_secret_value()
        if self.config.api_base is None:
            return None  # litellm finds the provider's key in the environment
        provider = self.config.model.split("/", 1)[0].upper().replace("-", "_")
        if os.environ.get(f"{provider}_API_KEY"):
            return None
        return PLACEHOLDER_KEY

    def _kwargs(self, messages: list[dict[str, Any]], params: dict[str, Any]) -> dict[str, Any]:
        kwargs: dict[str, Any] = {
            "model": self.config.model,
            "messages": messages,
            "timeout": self.config.timeout,
            "max_retries": 0,  # retries are ours (bounded, classified); none inside the client
            "num_retries": 0,
            **params,
        }
        if self.config.api_base:
            kwargs["api_base"], auth = split_credentials(self.config.api_base)
            if auth is not None:
                # credentials in the URL travel as basic authentication, in place of a bearer key
                kwargs["extra_headers"] = {
                    **(kwargs.get("extra_headers") or {}),
                    "Authorization": auth,
                }
        key = self._api_key()
        if key is not None:
            kwargs["api_key"] = key
        return kwargs

    def price_entry(self) -> dict[str, Any] | None:
        """The litellm model-map entry pricing this model, when the configuration sets a price."""
        c = self.config
        if c.input_cost_per_token is None and c.output_cost_per_token is None:
            return None
        return {
            c.model: {
                "litellm_provider": c.model.split("/", 1)[0],
                "mode": "chat",
                "input_cost_per_token": c.input_cost_per_token or 0.0,
                "output_cost_per_token": c.output_cost_per_token or 0.0,
            }
        }

    def _register_price(self, litellm: Any) -> None:
        # in every process that calls the model (Ray workers, litellm worker processes): prices set in
        # the configuration must hold wherever the call is made
        entry = self.price_entry()
        if entry is not None:
            litellm.register_model(entry)

    async def _send(self, kwargs: dict[str, Any]) -> Completion:
        """One attempt, ended at the configured timeout however slowly the answer arrives.

        The HTTP client's timeout applies to each read, so a body trickled a byte at a time would
        never trip it; this deadline covers the whole attempt. Starting worker processes does not count.
        """
        deadline = self.config.timeout
        pool = await self._pool_for_call()
        if pool is not None:
            deadline += POOL_GRACE  # the worker enforces the timeout itself; this guards the worker
        elif not self._priced:  # importing litellm and registering prices is no call's time
            self._register_price(import_litellm())
            self._priced = True
        try:
            async with asyncio.timeout(deadline):
                started = time.monotonic()
                completion = await self._attempt(kwargs, pool)
                if pool is None and self._auto:
                    self._auto.record(time.monotonic() - started)
                return completion
        except TimeoutError as exc:
            raise CallFailed(
                "transient", f"no complete answer within {self.config.timeout:g} s"
            ) from exc

    async def _pool_for_call(self) -> Any:
        """The worker pool this call goes to, or ``None``: this process."""
        processes = self.config.processes
        if processes == "auto":
            if self._auto is None:
                from agentic_rubrics.llm.pool_auto import AutoPool

                provider = self.config.model.split("/", 1)[0]
                in_process_only = any(  # a provider registered here (a scripted model) stays here
                    p.get("provider") == provider for p in import_litellm().custom_provider_map
                )
                self._auto = False if in_process_only else AutoPool(self.config.concurrency)
            return self._auto.ready_pool() if self._auto else None
        if processes > 0:
            if self._pool is None:
                from agentic_rubrics.llm.pool import WorkerPool

                self._pool = WorkerPool(processes)
            await self._pool.ready()
            if self._pool.is_serving():
                return self._pool
            error = self._pool.start_error()
            if error is not None:  # none ever started: the run stops and says why
                raise WorkerStartError(error)
            if not self._pool_gone:  # every worker died or never started: the calls go on here
                self._pool_gone = True
                log.warning(
                    "no model worker process runs (%d were started): calls are made in this process",
                    processes,
                )
        return None

    @property
    def pool_decision(self) -> dict[str, Any] | None:
        """What ``processes="auto"`` measured and decided so far, with ``calls_in_workers``: the calls
        answered by its workers (``None``: not auto, or no call yet)."""
        if not self._auto:
            return None
        pool = self._auto.pool
        return {**self._auto.decision, "calls_in_workers": pool.answered if pool is not None else 0}

    async def _attempt(self, kwargs: dict[str, Any], pool: Any) -> Completion:
        if pool is not None:
            from agentic_rubrics.llm.pool import Unsendable

            entry = self.price_entry()
            try:
                pooled: Completion = await pool.complete(
                    {**kwargs, "_price": entry} if entry else kwargs
                )
                return pooled
            except Unsendable:  # a parameter JSON cannot carry: this call is made here, as
                pass  # it would be without workers (workers change speed, never an answer)
            if not self._priced:
                self._register_price(import_litellm())
                self._priced = True
        litellm = import_litellm()
        try:
            response = await litellm.acompletion(**kwargs)
        except Exception as exc:
            raise classify(exc) from exc
        return to_completion(response, litellm, kwargs["model"])

    @property
    def traits(self) -> ModelTraits:
        """What litellm knows about this model (parameters, reasoning, tool calls, context window)."""
        from agentic_rubrics.llm.params import model_traits

        return model_traits(self.config.model)

    def params(self, *, answer_tokens: int | None = None, **extra: Any) -> dict[str, Any]:
        """The parameters one call sends, shaped for this model (see :mod:`agentic_rubrics.llm.params`)."""
        from agentic_rubrics.llm.params import call_params

        return call_params(self.config, self.traits, answer_tokens=answer_tokens, **extra)

    async def complete(
        self,
        messages: list[dict[str, Any]],
        *,
        repeat: int = 0,
        phase: str = "judge",
        task: str = "",
        answer_tokens: int | None = None,
        **params: Any,
    ) -> Completion:
        """One chat completion, from the cache or the provider.

        ``answer_tokens`` replaces ``max_tokens`` as the answer's own budget (room for reasoning comes on
        top when the model reasons); ``params`` (``logprobs``, ``tools`` ...) are sent where litellm maps
        them for this model.

        Raises:
            ModelError: authentication failed, the model does not exist, or the first calls of this
                phase were refused for their parameters or configuration (the run cannot go on).
            BudgetExceeded: the run's cost limit is reached; no call was started.
            CallFailed: this call failed (after bounded retries for transient failures).
        """
        self.guard.check()  # a model found unusable is not asked again
        merged = self.params(answer_tokens=answer_tokens, **params)
        if any(has_lone_surrogates(str(m.get("content") or "")) for m in messages):
            # undecodable bytes (from a repository file, say) cannot be sent as JSON: replace them
            messages = clean_value(messages)
        # the server is part of the key (without credentials: a new password asks the same server)
        server = split_credentials(self.config.api_base)[0] if self.config.api_base else None
        try:
            key = ResponseCache.key(self.config.model, messages, merged, repeat, server)
        except (TypeError, ValueError, RecursionError) as exc:  # bytes, objects: not a request body
            raise CallFailed("bad_request", f"the request is not JSON: {exc}") from exc
        if (cached := self._cached(key, phase, task)) is not None:
            return cached
        completion = await self._call(self._kwargs(messages, merged), phase, task)
        # what the caller reads is what the cache keeps, so a resumed run replays the same text
        completion = self._redacted(completion)
        if self.cache is not None:
            self.cache.put(key, completion)
        return completion

    def _cached(self, key: str, phase: str, task: str) -> Completion | None:
        """The cached answer under ``key`` (counted as a cached call), if any."""
        if self.cache is None or (hit := self.cache.get(key)) is None:
            return None
        hit = self._redacted(hit)  # a cache written before redaction existed, too
        cached = hit.model_copy(update={"usage": hit.usage.model_copy(update={"cached": True})})
        self.ledger.record(phase, task, cached.usage)
        return cached

    async def _call(self, kwargs: dict[str, Any], phase: str, task: str) -> Completion:
        """One call to the provider in a slot of the run's limits, retried, recorded and paid for."""
        async with self.limiter.slot(self.slot_key):
            self.guard.check()  # found unusable while this call waited for its slot
            await self.limiter.check_budget()
            try:
                async for attempt in retrying(self.config, self.retry_waits):
                    with attempt:
                        self.requests_sent += 1
                        send = functools.partial(self._send_priced, kwargs)
                        completion: Completion = await recorded(
                            self.spend_log, send, self.name, phase, task
                        )
            except CallFailed as failure:
                self.ledger.record(phase, task, None, failed=True)
                fatal = self.guard.failed(failure, phase)
                if fatal is not None:
                    raise fatal from failure
                raise
            self.guard.answered(phase)
            # counted before the slot is released, so the next call sees this one's cost
            self.ledger.record(phase, task, completion.usage)
            usage = completion.usage
            charge = usage.cost_usd if usage.cost_usd is not None else usage.estimated_usd
            if charge:
                await self.limiter.spend(charge)
        return completion

    async def _send_priced(self, kwargs: dict[str, Any]) -> Completion:
        """:meth:`_send`, and a call of unknown cost given the estimate the budget is charged."""
        completion = await self._send(kwargs)
        if completion.usage.cost_usd is not None:
            return completion
        if self._prices is None:
            from agentic_rubrics.llm.price import prices

            self._prices = (prices(self.config),)
        from agentic_rubrics.llm.price import estimate_usd

        usd = estimate_usd(self.config, kwargs, completion, self._prices[0])
        usage = completion.usage.model_copy(update={"estimated_usd": usd})
        return completion.model_copy(update={"usage": usage})

    def _redacted(self, completion: Completion) -> Completion:
        return redact_completion(completion, self.redactor)

    async def aclose(self) -> None:
        """Stop worker processes, if any, close the cache segment, and close litellm's connections
        of this event loop (call it from the loop that made the calls, before it ends)."""
        if self.cache is not None:
            self.cache.close()
        if self._pool is not None:
            await self._pool.close()
            self._pool = None
        if self._auto and self._auto.pool is not None:
            await self._auto.pool.close()
            self._auto.pool = None
        await close_loop_clients()
