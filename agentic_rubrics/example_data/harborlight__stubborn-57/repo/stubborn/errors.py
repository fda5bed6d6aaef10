"""Exceptions raised by stubborn."""

from __future__ import annotations


class RetryError(Exception):
    """Every attempt failed with a retryable exception.

    The last exception is also chained as ``__cause__``.

    Attributes:
        attempts: how many times the function was called.
        last_exception: what the final attempt raised.
    """

    def __init__(self, attempts: int, last_exception: BaseException) -> None:
        super().__init__(f"gave up after {attempts} attempt(s): {last_exception!r}")
        self.attempts = attempts
        self.last_exception = last_exception
