"""Delay schedules: infinite iterators of the seconds to wait before each retry."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator


def constant(delay: float) -> Iterator[float]:
    """``delay, delay, delay, ...``"""
    return itertools.repeat(float(delay))


def linear(delay: float, step: float, max_delay: float | None = None) -> Iterator[float]:
    """``delay, delay + step, delay + 2*step, ...``, each capped at ``max_delay``."""
    current = float(delay)
    while True:
        yield current if max_delay is None else min(current, max_delay)
        current += step


def exponential(
    delay: float, factor: float = 2.0, max_delay: float | None = None
) -> Iterator[float]:
    """``delay, delay*factor, delay*factor**2, ...``, each capped at ``max_delay``."""
    current = float(delay)
    while True:
        if max_delay is not None and current >= max_delay:
            yield from itertools.repeat(float(max_delay))
            return
        yield current
        current *= factor


def take(schedule: Iterable[float], count: int) -> list[float]:
    """The first ``count`` delays of a schedule."""
    return list(itertools.islice(schedule, max(count, 0)))
