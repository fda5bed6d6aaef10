"""Holiday rules and the built-in holiday calendars.

A :class:`HolidayCalendar` is a list of rules (fixed dates, "nth weekday of
the month", offsets from Easter) plus an *observance* policy saying what
happens when a holiday falls on a weekend:

- ``"nearest"``: Saturday moves to the Friday before, Sunday to the Monday
  after (US federal practice).  New Year's Day on a Saturday is therefore
  observed on 31 December of the previous year.
- ``"substitute"``: the holiday moves to the next weekday that is not already
  a holiday (UK bank holidays).
- ``None``: weekend holidays are simply not observed (TARGET2).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta
from typing import Optional, Sequence, Union

MON, TUE, WED, THU, FRI, SAT, SUN = range(7)
OBSERVANCES = ("nearest", "substitute", None)


def easter_sunday(year: int) -> date:
    """Gregorian Easter Sunday (anonymous Gregorian algorithm)."""
    a = year % 19
    b, c = divmod(year, 100)
    d, e = divmod(b, 4)
    f = (b + 8) // 25
    g = (b - f + 1) // 3
    h = (19 * a + b - d - g + 15) % 30
    i, k = divmod(c, 4)
    l = (32 + 2 * e + 2 * i - h - k) % 7
    m = (a + 11 * h + 22 * l) // 451
    month, day = divmod(h + l - 7 * m + 114, 31)
    return date(year, month, day + 1)


@dataclass(frozen=True)
class Fixed:
    """The same month and day every year (1 January, 25 December...)."""

    name: str
    month: int
    day: int

    def in_year(self, year: int) -> date:
        return date(year, self.month, self.day)


@dataclass(frozen=True)
class NthWeekday:
    """The ``n``-th ``weekday`` of ``month``; ``n = -1`` is the last one."""

    name: str
    month: int
    weekday: int
    n: int

    def in_year(self, year: int) -> date:
        if self.n > 0:
            first = date(year, self.month, 1)
            shift = (self.weekday - first.weekday()) % 7
            return first + timedelta(days=shift + 7 * (self.n - 1))
        nxt = date(year + (self.month == 12), self.month % 12 + 1, 1)
        last = nxt - timedelta(days=1)
        shift = (last.weekday() - self.weekday) % 7
        return last - timedelta(days=shift + 7 * (-self.n - 1))


@dataclass(frozen=True)
class EasterOffset:
    """A fixed number of days from Easter Sunday (Good Friday is -2)."""

    name: str
    days: int

    def in_year(self, year: int) -> date:
        return easter_sunday(year) + timedelta(days=self.days)


Rule = Union[Fixed, NthWeekday, EasterOffset]


class HolidayCalendar:
    """A named set of holiday rules with an observance policy."""

    def __init__(self, name: str, rules: Sequence[Rule], observance: Optional[str] = None):
        if observance not in OBSERVANCES:
            raise ValueError(f"observance must be one of {OBSERVANCES}, not {observance!r}")
        self.name = name
        self.rules = tuple(rules)
        self.observance = observance

    def __repr__(self) -> str:
        return f"HolidayCalendar({self.name!r}, {len(self.rules)} rules)"

    def _observed(self, year: int) -> dict[date, str]:
        """Observed dates of the holidays *of* ``year`` (some may fall in a neighbouring year)."""
        actual = [(rule.in_year(year), rule.name) for rule in self.rules]
        if self.observance is None:
            return {d: name for d, name in actual if d.weekday() < SAT}
        if self.observance == "nearest":
            out = {}
            for d, name in actual:
                if d.weekday() == SAT:
                    d -= timedelta(days=1)
                elif d.weekday() == SUN:
                    d += timedelta(days=1)
                out[d] = name
            return out
        out = {d: name for d, name in actual if d.weekday() < SAT}
        for d, name in sorted(actual):
            if d.weekday() < SAT:
                continue
            while d.weekday() >= SAT or d in out:
                d += timedelta(days=1)
            out[d] = f"{name} (substitute day)"
        return out

    def named_dates_in(self, year: int) -> dict[date, str]:
        """Observed holidays falling in calendar year ``year``, with their names."""
        found: dict[date, str] = {}
        for y in (year - 1, year, year + 1):
            for d, name in self._observed(y).items():
                if d.year == year:
                    found[d] = name
        return dict(sorted(found.items()))

    def dates_in(self, year: int) -> frozenset[date]:
        """Observed holiday dates falling in calendar year ``year``."""
        return frozenset(self.named_dates_in(year))


US_FEDERAL = HolidayCalendar(
    "US federal",
    [
        Fixed("New Year's Day", 1, 1),
        NthWeekday("Birthday of Martin Luther King, Jr.", 1, MON, 3),
        NthWeekday("Washington's Birthday", 2, MON, 3),
        NthWeekday("Memorial Day", 5, MON, -1),
        Fixed("Juneteenth National Independence Day", 6, 19),
        Fixed("Independence Day", 7, 4),
        NthWeekday("Labor Day", 9, MON, 1),
        NthWeekday("Columbus Day", 10, MON, 2),
        Fixed("Veterans Day", 11, 11),
        NthWeekday("Thanksgiving Day", 11, THU, 4),
        Fixed("Christmas Day", 12, 25),
    ],
    observance="nearest",
)

UK_ENGLAND = HolidayCalendar(
    "England and Wales",
    [
        Fixed("New Year's Day", 1, 1),
        EasterOffset("Good Friday", -2),
        EasterOffset("Easter Monday", 1),
        NthWeekday("Early May bank holiday", 5, MON, 1),
        NthWeekday("Spring bank holiday", 5, MON, -1),
        NthWeekday("Summer bank holiday", 8, MON, -1),
        Fixed("Christmas Day", 12, 25),
        Fixed("Boxing Day", 12, 26),
    ],
    observance="substitute",
)

TARGET = HolidayCalendar(
    "TARGET2",
    [
        Fixed("New Year's Day", 1, 1),
        EasterOffset("Good Friday", -2),
        EasterOffset("Easter Monday", 1),
        Fixed("Labour Day", 5, 1),
        Fixed("Christmas Day", 12, 25),
        Fixed("Boxing Day", 12, 26),
    ],
)

CALENDARS = {"us": US_FEDERAL, "uk": UK_ENGLAND, "target": TARGET}
