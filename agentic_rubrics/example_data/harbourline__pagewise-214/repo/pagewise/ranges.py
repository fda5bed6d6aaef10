"""Compact page ranges for navigation bars: ``1 … 4 5 [6] 7 8 … 20``."""

from __future__ import annotations

from .constants import DEFAULT_ON_EACH_SIDE, DEFAULT_ON_ENDS, ELLIPSIS


def elided_page_range(
    current: int,
    num_pages: int,
    *,
    on_each_side: int = DEFAULT_ON_EACH_SIDE,
    on_ends: int = DEFAULT_ON_ENDS,
) -> list[int | str]:
    """The page numbers to show around ``current``, with ``ELLIPSIS`` where pages are left out.

    ``on_each_side`` pages are shown on each side of the current page and ``on_ends`` pages at
    both ends. An ellipsis never stands in for a single page: that page is shown instead.

    >>> elided_page_range(10, 20)
    [1, '…', 8, 9, 10, 11, 12, '…', 20]
    >>> elided_page_range(2, 5)
    [1, 2, 3, 4, 5]
    """
    if on_each_side < 0 or on_ends < 0:
        raise ValueError("on_each_side and on_ends must not be negative")
    if num_pages < 1:
        return []
    if not 1 <= current <= num_pages:
        raise ValueError(f"current page {current} is outside 1..{num_pages}")

    shown: list[int | str] = []
    left = current - on_each_side
    right = current + on_each_side

    # head: pages 1..on_ends, then either an ellipsis or the pages up to the window
    if left > on_ends + 2:
        shown.extend(range(1, on_ends + 1))
        shown.append(ELLIPSIS)
        shown.extend(range(left, current))
    else:
        shown.extend(range(1, current))

    shown.append(current)

    # tail: the window after current, then either an ellipsis or the pages to the end
    tail_start = num_pages - on_ends + 1
    if right < tail_start - 2:
        shown.extend(range(current + 1, right + 1))
        shown.append(ELLIPSIS)
        shown.extend(range(tail_start, num_pages + 1))
    else:
        shown.extend(range(current + 1, num_pages + 1))
    return shown
