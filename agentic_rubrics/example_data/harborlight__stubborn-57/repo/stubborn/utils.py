"""Helpers for argument normalisation and human-readable output."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

ExceptionTypes = tuple[type[BaseException], ...]


def normalise_exceptions(exceptions: Any) -> ExceptionTypes:
    """Accept one exception class or an iterable of them; return a tuple of classes.

    Raises:
        TypeError: something other than exception classes was given.
    """
    if isinstance(exceptions, type):
        exceptions = (exceptions,)
    try:
        result = tuple(exceptions)
    except TypeError:
        raise TypeError(f"expected exception classes, got {exceptions!r}") from None
    for exc in result:
        if not (isinstance(exc, type) and issubclass(exc, BaseException)):
            raise TypeError(f"expected exception classes, got {exc!r}")
    if not result:
        raise TypeError("at least one exception class is required")
    return result


def format_seconds(seconds: float) -> str:
    """``0.25`` -> ``"250ms"``, ``1.5`` -> ``"1.5s"``, ``90`` -> ``"1m30s"``."""
    if seconds < 1:
        return f"{seconds * 1000:.0f}ms"
    if seconds < 60:
        return f"{seconds:.3g}s"
    minutes, rest = divmod(seconds, 60)
    return f"{int(minutes)}m{rest:.0f}s"


def callable_name(func: Callable[..., Any]) -> str:
    """Best-effort qualified name of a callable, for messages."""
    name = getattr(func, "__qualname__", None) or getattr(func, "__name__", None)
    return name if name else repr(func)
