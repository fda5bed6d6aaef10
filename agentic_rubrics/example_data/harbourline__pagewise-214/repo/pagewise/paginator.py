"""Split a sequence into numbered pages.

The API follows the familiar Django paginator: a :class:`Paginator` over a sequence hands out
:class:`Page` objects by number, and can fold a short last page into the one before it
(``orphans``) so that a listing never ends on a page with one or two lonely items.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Generic, TypeVar, overload

from .constants import (
    DEFAULT_ON_EACH_SIDE,
    DEFAULT_ON_ENDS,
    DEFAULT_ORPHANS,
    DEFAULT_PER_PAGE,
    MAX_PER_PAGE,
)
from .errors import EmptyPage, PageNotAnInteger
from .ranges import elided_page_range

T = TypeVar("T")


def _ceil_div(numerator: int, denominator: int) -> int:
    """Integer division rounding up, for non-negative numerator and positive denominator."""
    return -(-numerator // denominator)


class Page(Sequence[T]):
    """One page of a :class:`Paginator`: the items on it plus where it sits among the pages."""

    def __init__(self, object_list: Sequence[T], number: int, paginator: Paginator[T]) -> None:
        self.object_list = object_list
        self.number = number
        self.paginator = paginator

    def __repr__(self) -> str:
        return f"<Page {self.number} of {self.paginator.num_pages}>"

    def __len__(self) -> int:
        return len(self.object_list)

    @overload
    def __getitem__(self, index: int) -> T: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[T]: ...

    def __getitem__(self, index: int | slice) -> T | Sequence[T]:
        return self.object_list[index]

    def has_next(self) -> bool:
        return self.number < self.paginator.num_pages

    def has_previous(self) -> bool:
        return self.number > 1

    def has_other_pages(self) -> bool:
        return self.has_previous() or self.has_next()

    def next_page_number(self) -> int:
        return self.paginator.validate_number(self.number + 1)

    def previous_page_number(self) -> int:
        return self.paginator.validate_number(self.number - 1)

    def start_index(self) -> int:
        """1-based position of the first item on this page; 0 when there are no items at all."""
        if self.paginator.count == 0:
            return 0
        return (self.number - 1) * self.paginator.per_page + 1

    def end_index(self) -> int:
        """1-based position of the last item on this page."""
        if self.number == self.paginator.num_pages:
            return self.paginator.count
        return self.number * self.paginator.per_page


class Paginator(Generic[T]):
    """Hand out the pages of ``items``, ``per_page`` items each.

    Args:
        items: a sequence, or any iterable (it is then read into a list once).
        per_page: items per page, between 1 and ``MAX_PER_PAGE``.
        orphans: when the last page would hold this many items or fewer, they are added to the
            previous page instead. Must be smaller than ``per_page``.
        allow_empty_first_page: when false, an empty ``items`` has no pages at all and asking for
            page 1 raises :class:`EmptyPage`.
    """

    def __init__(
        self,
        items: Iterable[T],
        per_page: int = DEFAULT_PER_PAGE,
        orphans: int = DEFAULT_ORPHANS,
        allow_empty_first_page: bool = True,
    ) -> None:
        if isinstance(per_page, bool) or not isinstance(per_page, int):
            raise TypeError(f"per_page must be an int, got {per_page!r}")
        if not 1 <= per_page <= MAX_PER_PAGE:
            raise ValueError(f"per_page must be between 1 and {MAX_PER_PAGE}, got {per_page}")
        if not 0 <= orphans < per_page:
            raise ValueError(f"orphans must be between 0 and per_page - 1, got {orphans}")
        self.items: Sequence[T] = items if isinstance(items, Sequence) else list(items)
        self.per_page = per_page
        self.orphans = orphans
        self.allow_empty_first_page = allow_empty_first_page

    def __repr__(self) -> str:
        return f"<Paginator count={self.count} per_page={self.per_page} orphans={self.orphans}>"

    def __iter__(self) -> Iterator[Page[T]]:
        for number in self.page_range:
            yield self.page(number)

    @property
    def count(self) -> int:
        """Total number of items."""
        return len(self.items)

    @property
    def num_pages(self) -> int:
        """Total number of pages, after folding orphans into the page before them."""
        if self.count == 0 and not self.allow_empty_first_page:
            return 0
        hits = max(1, self.count - self.orphans)
        return _ceil_div(hits, self.per_page)

    @property
    def page_range(self) -> range:
        """The valid page numbers, 1-based."""
        return range(1, self.num_pages + 1)

    def validate_number(self, number: object) -> int:
        """Return ``number`` as a valid page number or raise a :class:`PaginationError`."""
        if isinstance(number, float) and not number.is_integer():
            raise PageNotAnInteger(f"page number {number!r} is not an integer")
        try:
            value = int(number)  # type: ignore[call-overload]
        except (TypeError, ValueError):
            raise PageNotAnInteger(f"page number {number!r} is not an integer") from None
        if value < 1:
            raise EmptyPage(f"page number {value} is less than 1")
        if value > self.num_pages:
            raise EmptyPage(f"page {value} is past the last page ({self.num_pages})")
        return value

    def page(self, number: object) -> Page[T]:
        """The page with the given 1-based number."""
        value = self.validate_number(number)
        bottom = (value - 1) * self.per_page
        top = bottom + self.per_page
        if top + self.orphans >= self.count:
            top = self.count
        return Page(self.items[bottom:top], value, self)

    def get_page(self, number: object) -> Page[T]:
        """Like :meth:`page`, but forgiving: a non-integer gives the first page, a number past the
        end gives the last page. Meant for page numbers taken straight from a request."""
        try:
            value = self.validate_number(number)
        except PageNotAnInteger:
            value = 1
        except EmptyPage:
            value = max(self.num_pages, 1)
        return self.page(value)

    def elided_page_range(
        self,
        number: object = 1,
        *,
        on_each_side: int = DEFAULT_ON_EACH_SIDE,
        on_ends: int = DEFAULT_ON_ENDS,
    ) -> list[int | str]:
        """Page numbers to show in a navigation bar around page ``number``; see
        :func:`pagewise.ranges.elided_page_range`."""
        return elided_page_range(
            self.validate_number(number),
            self.num_pages,
            on_each_side=on_each_side,
            on_ends=on_ends,
        )
