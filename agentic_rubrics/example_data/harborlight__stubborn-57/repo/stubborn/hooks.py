"""Ready-made ``on_retry`` callbacks."""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from stubborn.utils import format_seconds

_log = logging.getLogger("stubborn")


def log_retry(logger: logging.Logger | None = None, level: int = logging.WARNING):
    """An ``on_retry`` callback that logs each failed attempt and the coming wait."""
    target = logger or _log

    def on_retry(attempt: int, exc: BaseException, delay: float) -> None:
        target.log(
            level, "attempt %d failed with %r; retrying in %s", attempt, exc, format_seconds(delay)
        )

    return on_retry


@dataclass
class RetryRecorder:
    """An ``on_retry`` callback that remembers every call, for tests and metrics."""

    calls: list[tuple[int, BaseException, float]] = field(default_factory=list)

    def __call__(self, attempt: int, exc: BaseException, delay: float) -> None:
        self.calls.append((attempt, exc, delay))

    @property
    def delays(self) -> list[float]:
        """The delays announced so far."""
        return [delay for _, _, delay in self.calls]

    @property
    def total_delay(self) -> float:
        """Seconds spent (or about to be spent) waiting."""
        return sum(self.delays)
