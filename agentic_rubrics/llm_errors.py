"""How the LLM door classifies failures: retry (transient), abort the run, or fail one call."""

from __future__ import annotations

import email.utils
import math
import re
import time
from typing import Literal

FailureKind = Literal[
    "transient", "auth", "unknown_model", "context_window", "refusal", "bad_request", "budget",
    "empty_reply",
]  # fmt: skip


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
        "RateLimitError", "Timeout", "APITimeoutError", "APIConnectionError", "InternalServerError",
        "ServiceUnavailableError", "BadGatewayError", "TimeoutError", "ConnectionError",
    }  # fmt: skip
    status = getattr(exc, "status_code", None)
    if names & transient or (isinstance(status, int) and status >= 500):
        return CallFailed("transient", f"{name}: {short}", retry_after=_retry_after(exc))
    return CallFailed("bad_request", f"{name}: {short}")
