"""How the LLM door classifies failures: retry (transient), abort the run, or fail one call.

A model that cannot be used as configured stops the run early: :class:`PhaseGuard` turns the first
refusals of a phase (a parameter the model does not take, a configuration the provider rejects) into a
:class:`~agentic_rubrics.exceptions.ModelError` that quotes the provider and names the setting to
change, before the rest of the phase is spent on answers that would all be missing.
"""

from __future__ import annotations

import email.utils
import math
import os
import re
import time
from typing import TYPE_CHECKING, Any

from agentic_rubrics.exceptions import CallFailed, FailureKind, ModelError

if TYPE_CHECKING:
    from agentic_rubrics.llm.config import LLMConfig

__all__ = ["CallFailed", "FailureKind", "PhaseGuard", "classify"]


_AUTH_HINTS = (
    "missing credentials",
    "api_key client option must be set",
    "no api key",
    "api key not valid",
    "invalid api key",
    "incorrect api key",
    "missing api key",
    "no auth credentials",
)


RETRY_AFTER_MAX = 3600.0
"""The longest Retry-After read from a server (seconds); the door caps it further by ``backoff_max``."""

_SECONDS = re.compile(r"\s*(\d{1,9}(?:\.\d{1,9})?)\s*s?\s*")


def parse_retry_after(value: object, *, unit: float = 1.0) -> float | None:
    """Seconds to wait from a ``Retry-After`` (or ``retry-after-ms`` with ``unit=0.001``) header.

    Read defensively, since servers send anything: a number of seconds (``"60"``, ``"1.5"``,
    ``"60s"``) or an HTTP date. Anything else — ``"soon"``, ``"nan"``, ``"inf"``, a negative number,
    an unreadable date — is ``None`` (the caller falls back to its own backoff). The result is finite,
    at least 0 and at most :data:`RETRY_AFTER_MAX`.
    """
    if not isinstance(value, str) or len(value) > 100:
        return None
    match = _SECONDS.fullmatch(value)
    if match is not None:
        seconds = float(match.group(1)) * unit
    elif unit != 1.0:
        return None
    else:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
        if parsed.tzinfo is None:
            return None
        seconds = parsed.timestamp() - time.time()
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_MAX)


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        millis, seconds = headers.get("retry-after-ms"), headers.get("retry-after")
    except Exception:  # a headers object of another shape: no hint
        return None
    found = parse_retry_after(millis, unit=0.001)
    return found if found is not None else parse_retry_after(seconds)


def classify(exc: BaseException) -> CallFailed:
    """Turn whatever litellm (or the transport) raised into a :class:`CallFailed`."""
    if isinstance(exc, CallFailed):
        return exc
    name = type(exc).__name__
    names = {c.__name__ for c in type(exc).__mro__}
    text = str(exc)
    lower = text.lower()
    short = text if len(text) < 400 else text[:400] + "..."
    if (
        "AuthenticationError" in names
        or "PermissionDeniedError" in names
        or any(h in lower for h in _AUTH_HINTS)
    ):
        return CallFailed("auth", short)
    if "ContextWindowExceededError" in names:
        return CallFailed("context_window", short)
    if (
        "NotFoundError" in names
        or "LiteLLMUnknownProvider" in names
        or ("BadRequestError" in names and "llm provider not provided" in lower)
    ):
        return CallFailed("unknown_model", short)
    if "ContentPolicyViolationError" in names:
        return CallFailed("refusal", short)
    transient = {
        "RateLimitError",
        "Timeout",
        "APITimeoutError",
        "APIConnectionError",
        "InternalServerError",
        "ServiceUnavailableError",
        "BadGatewayError",
        "TimeoutError",
        "ConnectionError",
    }
    status = getattr(exc, "status_code", None)
    if names & transient or (isinstance(status, int) and status >= 500):
        return CallFailed("transient", f"{name}: {short}", retry_after=_retry_after(exc))
    if "UnsupportedParamsError" in names or _PARAMS.search(lower):
        return CallFailed("bad_params", f"{name}: {short}")
    return CallFailed("bad_request", f"{name}: {short}")


# what providers say when a request's parameters, not its content, are wrong (OpenAI's
# "Unsupported parameter: 'temperature'", Anthropic's "`temperature` may only be set to 1 when thinking
# is enabled", litellm's own "does not support temperature=0.0" ...)
_PARAMS = re.compile(
    r"unsupported (?:param|value)|unsupportedparams|not supported with this model|does(?:n't| not)"
    r" support (?:temperature|param|the param|max_tokens|logprobs|tools)|may only be set to"
    r"|must be greater than `?thinking|budget_tokens|unrecognized request argument"
    r"|extra inputs are not permitted|reasoning_effort|max_completion_tokens"
)
_SETTINGS = (
    (
        ("temperature", "top_p"),
        "set {s}.temperature to null (reasoning models take only their"
        " provider's default; if litellm does not know this one reasons, also set {s}.reasoning_effort)",
    ),
    (
        ("budget_tokens", "thinking", "reasoning_effort"),
        "change {s}.reasoning_effort, or the thinking entry of {s}.extra_params",
    ),
    (("max_completion_tokens", "max_tokens"), "change {s}.max_tokens or {s}.reasoning_tokens"),
    (("logprobs",), "leave patch_classifier out of --selectors"),
    (("tools", "tool_choice", "function"), "set explorer.tool_calls to text"),
)
EARLY_STOP_AFTER = 3
"""Refused calls (other than for their parameters) at the start of a phase, none answered, that stop
the run: a provider refusing every request is misconfigured, not unlucky."""


def setting_hint(message: str, phase: str) -> str:
    """The setting to change for a provider's refusal, by the parameter its message names."""
    section = "explorer.model" if phase in ("explore", "proxy") else "judge.model"
    lower = message.lower()
    for names, setting in _SETTINGS:
        if any(n in lower for n in names):
            return f"To fix it, {setting.format(s=section)} in the YAML given to --config."
    return f"Check {section}.extra_params and the model string (provider/model) in --config."


class PhaseGuard:
    """Turns failures that no retry can fix into a :class:`ModelError` that stops the run.

    Authentication and unknown models stop it at once. So does a refusal for the request's parameters
    when no call of that phase has been answered yet (every call of a phase sends the same
    parameters), and :data:`EARLY_STOP_AFTER` refusals of any other kind at the start of a phase.
    Once stopped, every later call raises the same error without being sent.
    """

    def __init__(self, model: str) -> None:
        self.model = model
        self._answered: set[str] = set()
        self._refused: dict[str, int] = {}
        self.stopped: ModelError | None = None

    def check(self) -> None:
        """Raise the stop, if there was one."""
        if self.stopped is not None:
            raise self.stopped

    def answered(self, phase: str) -> None:
        """A call of ``phase`` got an answer: later refusals there are about one call only."""
        self._answered.add(phase)

    def failed(self, failure: CallFailed, phase: str) -> ModelError | None:
        """The error that stops the run for this failure, or ``None`` (only this call failed)."""
        if failure.kind == "auth":
            return ModelError(
                f"authentication failed for model {self.model!r}: {failure}. Set the provider's API"
                " key in the environment or pass --api-key; for a local server pass --api-base."
            )
        if failure.kind == "unknown_model":
            return ModelError(
                f"model {self.model!r} is unknown to the provider or to litellm: {failure}. Check the"
                " model string (provider/model) and --api-base."
            )
        if failure.kind not in ("bad_params", "bad_request") or phase in self._answered:
            return None
        refused = self._refused[phase] = self._refused.get(phase, 0) + 1
        if failure.kind == "bad_request" and refused < EARLY_STOP_AFTER:
            return None
        what = "its parameters" if failure.kind == "bad_params" else f"{refused} requests in a row"
        self.stopped = ModelError(
            f"model {self.model!r} cannot be used as configured: the first {phase} calls were"
            f" refused ({what}), so the run stops before spending on the rest. The provider said:"
            f" {failure} {setting_hint(str(failure), phase)}"
        )
        return self.stopped


def retrying(config: LLMConfig, waits: list[float]) -> Any:
    """tenacity's retry loop for one call: transient failures only, ``max_retries`` times, exponential
    backoff with jitter (or the provider's Retry-After, capped at ``backoff_max``); each wait that
    happens is appended to ``waits``."""
    from tenacity import AsyncRetrying, retry_if_exception, stop_after_attempt

    def transient(exc: BaseException) -> bool:
        return isinstance(exc, CallFailed) and exc.kind == "transient"

    def wait(state: Any) -> float:
        exc = state.outcome.exception() if state.outcome else None
        if isinstance(exc, CallFailed) and exc.retry_after is not None:
            return min(exc.retry_after, config.backoff_max)
        base = config.backoff_initial * 2 ** (state.attempt_number - 1)
        return float(min(config.backoff_max, base * (0.5 + _jitter())))

    def waited(state: Any) -> None:
        """Before each wait that happens (tenacity also computes one after the last attempt)."""
        waits.append(float(state.next_action.sleep))

    return AsyncRetrying(
        stop=stop_after_attempt(config.max_retries + 1),
        wait=wait,
        before_sleep=waited,
        retry=retry_if_exception(transient),
        reraise=True,
    )


def _jitter() -> float:
    return int.from_bytes(os.urandom(2), "big") / 65535
