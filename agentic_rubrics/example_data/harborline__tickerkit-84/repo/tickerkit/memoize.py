"""The :func:`cached` decorator: keep a function's results in a :class:`TTLCache` for a while."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

from tickerkit.cache import TTLCache
from tickerkit.constants import DEFAULT_MAXSIZE

F = TypeVar("F", bound=Callable[..., Any])

_MISSING = object()


def make_key(signature: inspect.Signature, args: tuple, kwargs: dict) -> tuple:
    """Normalise one call into a cache key.

    The arguments are bound to ``signature`` and missing ones get their defaults, so the
    positional and keyword spellings of the same call (``f(1)``, ``f(x=1)``) give the same key.

    Raises:
        TypeError: the arguments do not fit the signature (as calling the function would).
    """
    bound = signature.bind(*args, **kwargs)
    bound.apply_defaults()
    return bound.args


def cached(
    ttl: float = 60.0,
    *,
    maxsize: int = DEFAULT_MAXSIZE,
    clock: Callable[[], float] | None = None,
) -> Callable[[F], F]:
    """Memoise a function for ``ttl`` seconds.

    Works on plain functions and on methods (``self`` is part of the key). Calls whose arguments
    are not hashable go straight to the function and are not stored. The wrapper gains:

    - ``cache``: the underlying :class:`TTLCache`;
    - ``cache_clear()``: drop every stored result;
    - ``cache_info()``: hit and miss counters;
    - ``invalidate(*args, **kwargs)``: drop the result of one call; True if there was one.
    """

    def decorator(func: F) -> F:
        signature = inspect.signature(func)
        cache = TTLCache(ttl, maxsize=maxsize, clock=clock)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            key = make_key(signature, args, kwargs)
            try:
                hash(key)
            except TypeError:
                return func(*args, **kwargs)
            value = cache.get(key, _MISSING)
            if value is _MISSING:
                value = func(*args, **kwargs)
                cache.set(key, value)
            return value

        def invalidate(*args: Any, **kwargs: Any) -> bool:
            return cache.pop(make_key(signature, args, kwargs), _MISSING) is not _MISSING

        wrapper.cache = cache  # type: ignore[attr-defined]
        wrapper.cache_clear = cache.clear  # type: ignore[attr-defined]
        wrapper.cache_info = cache.info  # type: ignore[attr-defined]
        wrapper.invalidate = invalidate  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorator
