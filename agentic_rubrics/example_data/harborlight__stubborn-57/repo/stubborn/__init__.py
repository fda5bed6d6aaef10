"""stubborn: retry flaky calls with exponential backoff."""

from stubborn.backoff import constant, exponential, linear
from stubborn.errors import RetryError
from stubborn.hooks import RetryRecorder, log_retry
from stubborn.policy import RetryPolicy
from stubborn.retry import retry_call, retrying

__version__ = "1.4.0"

__all__ = [
    "RetryError",
    "RetryPolicy",
    "RetryRecorder",
    "constant",
    "exponential",
    "linear",
    "log_retry",
    "retry_call",
    "retrying",
]
