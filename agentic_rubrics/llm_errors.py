"""How the LLM door classifies failures: retry (transient), abort the run, or fail one call."""

from __future__ import annotations

import email.utils
import time
from typing import Literal

FailureKind = Literal[
    "transient", "auth", "unknown_model", "context_window", "refusal", "bad_request", "budget"
]


class CallFailed(Exception):
    """A model call that did not produce a completion, classified once, for retry and reporting."""

    def __init__(
        self, kind: FailureKind, message: str, *, retry_after: float | None = None
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.retry_after = retry_after


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


def _retry_after(exc: BaseException) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    value = headers.get("retry-after-ms")
    if value:
        try:
            return float(value) / 1000
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


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
        "RateLimitError", "Timeout", "APITimeoutError", "APIConnectionError", "InternalServerError",
        "ServiceUnavailableError", "BadGatewayError", "TimeoutError", "ConnectionError",
    }  # fmt: skip
    status = getattr(exc, "status_code", None)
    if names & transient or (isinstance(status, int) and status >= 500):
        return CallFailed("transient", f"{name}: {short}", retry_after=_retry_after(exc))
    return CallFailed("bad_request", f"{name}: {short}")
