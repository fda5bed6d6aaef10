"""``RetryPolicy``: how often to try, how long to wait, and which errors to retry."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from stubborn.backoff import exponential, take
from stubborn.errors import RetryError
from stubborn.utils import ExceptionTypes, normalise_exceptions

T = TypeVar("T")

OnRetry = Callable[[int, BaseException, float], Any]


@dataclass(frozen=True)
class RetryPolicy:
    """An immutable retry configuration.

    Attributes:
        attempts: total number of calls, the first one included (>= 1).
        delay: seconds to wait after the first failure.
        backoff: multiplier applied to the delay after each further failure.
        exceptions: exception classes that trigger a retry; anything else propagates at once.
        max_delay: ceiling for any single wait, or ``None`` for no ceiling.
    """

    attempts: int = 3
    delay: float = 0.1
    backoff: float = 2.0
    exceptions: ExceptionTypes = (Exception,)
    max_delay: float | None = None

    def __post_init__(self) -> None:
        if self.attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {self.attempts}")
        if self.delay < 0:
            raise ValueError(f"delay must not be negative, got {self.delay}")
        if self.backoff <= 0:
            raise ValueError(f"backoff must be positive, got {self.backoff}")
        if self.max_delay is not None and self.max_delay < 0:
            raise ValueError(f"max_delay must not be negative, got {self.max_delay}")
        object.__setattr__(self, "exceptions", normalise_exceptions(self.exceptions))

    def delays(self) -> list[float]:
        """The waits between attempts (``attempts - 1`` values), in seconds."""
        return take(exponential(self.delay, self.backoff, self.max_delay), self.attempts - 1)

    def should_retry(self, exc: BaseException) -> bool:
        """Whether ``exc`` is one of the retryable exception classes."""
        return isinstance(exc, self.exceptions)

    def run(
        self,
        func: Callable[..., T],
        args: Sequence[Any] = (),
        kwargs: Mapping[str, Any] | None = None,
        on_retry: OnRetry | None = None,
        sleep: Callable[[float], Any] = time.sleep,
    ) -> T:
        """Call ``func(*args, **kwargs)`` until it succeeds or the attempts run out.

        Returns:
            whatever ``func`` returns on the first successful call.

        Raises:
            RetryError: every attempt raised a retryable exception.
            Exception: a non-retryable exception, unchanged, as soon as it happens.
        """
        kwargs = dict(kwargs or {})
        delays = self.delays()
        for attempt in range(1, self.attempts + 1):
            try:
                return func(*args, **kwargs)
            except self.exceptions as exc:
                if attempt == self.attempts:
                    raise RetryError(attempt, exc) from exc
                wait = delays[attempt - 1]
                if on_retry is not None:
                    on_retry(attempt, exc, wait)
                sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover
