"""The two everyday entry points: ``retry_call`` and the ``@retrying`` decorator."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from stubborn.policy import OnRetry, RetryPolicy
from stubborn.utils import ExceptionTypes

T = TypeVar("T")


def retry_call(
    func: Callable[..., T],
    args: Sequence[Any] = (),
    kwargs: Mapping[str, Any] | None = None,
    attempts: int = 3,
    delay: float = 0.1,
    backoff: float = 2.0,
    exceptions: type[BaseException] | ExceptionTypes = (Exception,),
    max_delay: float | None = None,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], Any] = time.sleep,
) -> T:
    """Call ``func(*args, **kwargs)``, retrying on failure, and return its result.

    See :class:`RetryPolicy` for the meaning of ``attempts``, ``delay``, ``backoff``,
    ``exceptions`` and ``max_delay``. ``on_retry(attempt, exc, delay)`` is called
    before each wait; ``sleep`` performs the wait.
    """
    policy = RetryPolicy(attempts, delay, backoff, exceptions, max_delay)
    return policy.run(func, args, kwargs, on_retry, sleep)


def retrying(
    attempts: int = 3,
    delay: float = 0.1,
    backoff: float = 2.0,
    exceptions: type[BaseException] | ExceptionTypes = (Exception,),
    max_delay: float | None = None,
    on_retry: OnRetry | None = None,
    sleep: Callable[[float], Any] = time.sleep,
) -> Callable[[Callable[..., T]], Callable[..., T]]:
    """Decorator form of :func:`retry_call`.

    The wrapped function keeps its name and docstring and exposes the policy it
    uses as ``wrapper.retry_policy``.
    """
    policy = RetryPolicy(attempts, delay, backoff, exceptions, max_delay)

    def decorate(func: Callable[..., T]) -> Callable[..., T]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> T:
            return policy.run(func, args, kwargs, on_retry, sleep)

        wrapper.retry_policy = policy  # type: ignore[attr-defined]
        return wrapper

    return decorate
