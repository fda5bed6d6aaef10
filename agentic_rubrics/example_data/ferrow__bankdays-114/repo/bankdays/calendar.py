"""Business-day arithmetic on top of a holiday calendar."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Iterable, Optional

from bankdays.holidays import HolidayCalendar
from bankdays.months import end_of_month

ONE_DAY = timedelta(days=1)
CONVENTIONS = ("following", "preceding", "modified_following", "modified_preceding")


class BusinessCalendar:
    """Weekends plus holidays, and the date arithmetic that skips them.

    Args:
        holidays: a :class:`~bankdays.holidays.HolidayCalendar`, or ``None`` for
            weekends only.
        weekend: weekday numbers that are never business days (Monday is 0).
        extra_holidays: one-off closures (a national day of mourning, an
            office move...), added to whatever ``holidays`` produces.
    """

    def __init__(
        self,
        holidays: Optional[HolidayCalendar] = None,
        *,
        weekend: Iterable[int] = (5, 6),
        extra_holidays: Iterable[date] = (),
    ) -> None:
        self.holidays = holidays
        self.weekend = frozenset(weekend)
        if len(self.weekend) >= 7 or not self.weekend <= set(range(7)):
            raise ValueError("weekend must be a proper subset of weekdays 0-6")
        self.extra_holidays = frozenset(extra_holidays)
        self._by_year: dict[int, frozenset[date]] = {}

    def __repr__(self) -> str:
        name = self.holidays.name if self.holidays else "no holidays"
        return f"BusinessCalendar({name!r}, weekend={sorted(self.weekend)})"

    def holidays_in(self, year: int) -> frozenset[date]:
        """All holidays (observed dates) that fall in calendar year ``year``."""
        cached = self._by_year.get(year)
        if cached is None:
            base = self.holidays.dates_in(year) if self.holidays else frozenset()
            extra = {d for d in self.extra_holidays if d.year == year}
            cached = self._by_year[year] = frozenset(base | extra)
        return cached

    def is_holiday(self, day: date) -> bool:
        return day in self.holidays_in(day.year)

    def is_business_day(self, day: date) -> bool:
        """True if ``day`` is neither a weekend day nor a holiday."""
        return day.weekday() not in self.weekend and not self.is_holiday(day)

    def next_business_day(self, day: date) -> date:
        """The first business day strictly after ``day``."""
        day += ONE_DAY
        while not self.is_business_day(day):
            day += ONE_DAY
        return day

    def previous_business_day(self, day: date) -> date:
        """The last business day strictly before ``day``."""
        day -= ONE_DAY
        while not self.is_business_day(day):
            day -= ONE_DAY
        return day

    def roll(self, day: date, convention: str = "following") -> date:
        """Move a non-business ``day`` to a business day by a market convention.

        ``following``/``preceding`` take the next/previous business day;
        the ``modified_`` variants do the same unless that leaves the month, in
        which case they go the other way.  Business days are returned as is.
        """
        if convention not in CONVENTIONS:
            raise ValueError(f"unknown convention {convention!r}")
        if self.is_business_day(day):
            return day
        forward = convention in ("following", "modified_following")
        rolled = self.next_business_day(day) if forward else self.previous_business_day(day)
        if convention.startswith("modified_") and rolled.month != day.month:
            rolled = self.previous_business_day(day) if forward else self.next_business_day(day)
        return rolled

    def add_business_days(self, start: date, days: int) -> date:
        """The date ``days`` business days after ``start`` (before it if negative).

        ``start`` itself need not be a business day; ``days == 0`` returns
        ``start`` unchanged.
        """
        step = ONE_DAY if days >= 0 else -ONE_DAY
        holidays = self.holidays_in(start.year)
        current = start
        remaining = abs(days)
        while remaining:
            current += step
            if current.weekday() in self.weekend or current in holidays:
                continue
            remaining -= 1
        return current

    def business_days_between(self, start: date, end: date) -> int:
        """Number of business days in ``[start, end)``; negative if ``end < start``."""
        if end < start:
            return -self.business_days_between(end, start)
        holidays = self.holidays_in(start.year)
        count = 0
        current = start
        while current < end:
            if current.weekday() not in self.weekend and current not in holidays:
                count += 1
            current += ONE_DAY
        return count

    def business_days_in_month(self, year: int, month: int) -> list[date]:
        """Every business day of the given month, in order."""
        day = date(year, month, 1)
        last = end_of_month(day)
        out = []
        while day <= last:
            if self.is_business_day(day):
                out.append(day)
            day += ONE_DAY
        return out
