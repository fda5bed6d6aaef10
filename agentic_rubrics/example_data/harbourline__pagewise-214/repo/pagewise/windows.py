"""Sliding windows, fixed-size chunks and rolling aggregates over sequences.

Everything here is built on :func:`window_bounds`, which only does index arithmetic, so it can also
drive windows over data you do not want to slice eagerly (a memory-mapped file, an array, a
database cursor with ``OFFSET``/``LIMIT``).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import islice
from typing import TypeVar

from .constants import DEFAULT_WINDOW_STEP

T = TypeVar("T")
R = TypeVar("R")


def _check_window(size: int, step: int) -> None:
    if size < 1:
        raise ValueError(f"window size must be at least 1, got {size}")
    if step < 1:
        raise ValueError(f"window step must be at least 1, got {step}")


def count_windows(
    length: int, size: int, step: int = DEFAULT_WINDOW_STEP, *, partial: bool = False
) -> int:
    """How many windows :func:`window_bounds` produces over ``length`` items."""
    _check_window(size, step)
    if length <= 0:
        return 0
    if partial:
        return (length - 1) // step + 1
    if length < size:
        return 0
    return (length - size) // step + 1


def window_bounds(
    length: int, size: int, step: int = DEFAULT_WINDOW_STEP, *, partial: bool = False
) -> Iterator[tuple[int, int]]:
    """Yield the ``(start, stop)`` indices of the windows over ``length`` items.

    Windows start at index 0 and advance by ``step``. Only windows holding exactly ``size`` items
    are produced, unless ``partial`` is true: then windows keep coming until the start runs past
    the end, and the trailing ones may be shorter than ``size``.

    >>> list(window_bounds(5, 2, 2, partial=True))
    [(0, 2), (2, 4), (4, 5)]
    """
    _check_window(size, step)
    start = 0
    if partial:
        while start < length:
            yield start, min(start + size, length)
            start += step
        return
    while start + size < length:
        yield start, start + size
        start += step


def sliding_window(
    items: Iterable[T], size: int, step: int = DEFAULT_WINDOW_STEP, *, partial: bool = False
) -> Iterator[Sequence[T]]:
    """Yield the windows of ``items`` as slices: a list gives lists, a string gives strings.

    Iterables that are not sequences are read into a list first.

    >>> list(sliding_window("abcdef", 4, 2))
    ['abcd', 'cdef']
    """
    seq: Sequence[T] = items if isinstance(items, Sequence) else list(items)
    for start, stop in window_bounds(len(seq), size, step, partial=partial):
        yield seq[start:stop]


def chunked(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """Split any iterable into lists of ``size`` items; the last list may be shorter.

    Unlike :func:`sliding_window` this never reads ahead more than one chunk, so it works on
    unbounded iterators.
    """
    _check_window(size, 1)
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def rolling(
    values: Iterable[T],
    size: int,
    func: Callable[[Sequence[T]], R] | None = None,
    *,
    step: int = DEFAULT_WINDOW_STEP,
) -> list[R]:
    """Apply ``func`` to every full window of ``values`` (by default: the arithmetic mean).

    >>> rolling([1, 2, 3, 4], 2)
    [1.5, 2.5, 3.5]
    """
    reducer = statistics.fmean if func is None else func
    return [reducer(window) for window in sliding_window(values, size, step)]  # type: ignore[arg-type]
