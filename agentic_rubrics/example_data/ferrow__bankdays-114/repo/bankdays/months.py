"""Calendar-month arithmetic with end-of-month clamping."""

from __future__ import annotations

import calendar as _stdlib_calendar
from datetime import date


def days_in_month(year: int, month: int) -> int:
    return _stdlib_calendar.monthrange(year, month)[1]


def end_of_month(day: date) -> date:
    """The last day of ``day``'s month."""
    return day.replace(day=days_in_month(day.year, day.month))


def is_month_end(day: date) -> bool:
    return day.day == days_in_month(day.year, day.month)


def add_months(day: date, months: int, *, keep_month_end: bool = False) -> date:
    """Shift ``day`` by whole calendar months, clamping to the end of shorter months.

    ``add_months(date(2024, 1, 31), 1)`` is 29 February 2024.  With
    ``keep_month_end=True`` a month-end date stays on month ends, so
    ``add_months(date(2024, 2, 29), 1, keep_month_end=True)`` is 31 March.
    """
    index = day.year * 12 + (day.month - 1) + months
    year, month = divmod(index, 12)
    month += 1
    last = days_in_month(year, month)
    if keep_month_end and is_month_end(day):
        return date(year, month, last)
    return date(year, month, min(day.day, last))


def months_between(start: date, end: date) -> int:
    """Whole calendar months from ``start`` to ``end`` (negative if ``end`` is earlier).

    A month counts once the day of month is reached, with month ends treated
    as reached: 31 January to 29 February 2024 is one month.
    """
    if end < start:
        return -months_between(end, start)
    months = (end.year - start.year) * 12 + (end.month - start.month)
    if end.day < start.day and not is_month_end(end):
        months -= 1
    return months
