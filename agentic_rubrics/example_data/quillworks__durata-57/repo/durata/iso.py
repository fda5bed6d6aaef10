"""ISO 8601 durations: ``P3DT4H``, ``PT1.5S``, ``P1Y2M``, ``-P2W``.

Years and months have no fixed length. :class:`IsoDuration` keeps every component as written;
:meth:`IsoDuration.to_timedelta` uses nominal lengths (a year is 365 days, a month 30 days), while
:func:`shift` applies years and months on the calendar.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import date, timedelta
from typing import TypeVar

from .errors import DurationParseError

DAYS_PER_YEAR = 365
DAYS_PER_MONTH = 30

_SHAPE = re.compile(
    r"""
    (?P<sign>[-+])?
    P
    (?P<date>(?:\d+(?:[.,]\d+)?[YMWD])*)
    (?:T(?P<time>(?:\d+(?:[.,]\d+)?[HMS])+))?
    """,
    re.VERBOSE,
)
_COMPONENT = re.compile(r"(\d+(?:[.,]\d+)?)([A-Z])")

# designators in the order they must appear, and the IsoDuration field each one sets
_DATE_ORDER = "YMWD"
_TIME_ORDER = "HMS"
_DATE_DESIGNATORS = {"Y": "years", "M": "months", "D": "days"}
_TIME_DESIGNATORS = {"H": "hours", "M": "minutes", "S": "seconds"}

D = TypeVar("D", bound=date)


@dataclass(frozen=True)
class IsoDuration:
    """The components of an ISO 8601 duration, as written. All components are non-negative; the
    sign applies to the whole duration."""

    years: float = 0
    months: float = 0
    days: float = 0
    hours: float = 0
    minutes: float = 0
    seconds: float = 0
    negative: bool = False

    def __post_init__(self) -> None:
        for name in ("years", "months", "days", "hours", "minutes", "seconds"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative; use negative=True")

    @property
    def is_exact(self) -> bool:
        """True when the duration has no years or months, so its length does not depend on
        the calendar."""
        return not (self.years or self.months)

    def to_timedelta(self) -> timedelta:
        """The duration as a timedelta, with nominal year and month lengths."""
        delta = timedelta(
            days=self.years * DAYS_PER_YEAR + self.months * DAYS_PER_MONTH + self.days,
            hours=self.hours,
            minutes=self.minutes,
            seconds=self.seconds,
        )
        return -delta if self.negative else delta

    def isoformat(self) -> str:
        """The canonical text form, e.g. ``P1Y2M3DT4H5M6.5S``; zero is ``PT0S``."""
        date_part = "".join(
            f"{_format_number(value)}{designator}"
            for value, designator in ((self.years, "Y"), (self.months, "M"), (self.days, "D"))
            if value
        )
        time_part = "".join(
            f"{_format_number(value)}{designator}"
            for value, designator in ((self.hours, "H"), (self.minutes, "M"), (self.seconds, "S"))
            if value
        )
        if not date_part and not time_part:
            return "PT0S"
        text = "P" + date_part + ("T" + time_part if time_part else "")
        return "-" + text if self.negative else text

    def __str__(self) -> str:
        return self.isoformat()


def _format_number(value: float) -> str:
    if float(value).is_integer():
        return str(int(value))
    return f"{value:.6f}".rstrip("0")


def _number(text: str) -> float:
    return float(text.replace(",", "."))


def _components(part: str, designators: dict[str, str], order: str, text: str) -> dict[str, float]:
    """Read the ``<number><designator>`` pairs of one part (date or time) into field values."""
    values: dict[str, float] = {}
    position = -1
    for number, designator in _COMPONENT.findall(part):
        index = order.index(designator)
        if index <= position:
            raise DurationParseError(text, f"designator {designator!r} repeated or out of order")
        position = index
        values[designators[designator]] = _number(number)
    return values


def parse_iso(text: str) -> IsoDuration:
    """Parse an ISO 8601 duration such as ``P1DT12H`` (case-insensitive, optional sign).

    Raises:
        DurationParseError: ``text`` is not an ISO 8601 duration.
    """
    raw = text.strip().upper()
    match = _SHAPE.fullmatch(raw)
    if match is None or not (match["date"] or match["time"]):
        raise DurationParseError(text, "not an ISO 8601 duration")
    fields = _components(match["date"], _DATE_DESIGNATORS, _DATE_ORDER, text)
    fields.update(_components(match["time"] or "", _TIME_DESIGNATORS, _TIME_ORDER, text))
    return IsoDuration(**fields, negative=match["sign"] == "-")


def format_iso(delta: timedelta) -> str:
    """Exact ISO 8601 text for a timedelta, using days and time only: ``P1DT2H3M4.5S``."""
    negative = delta < timedelta(0)
    delta = abs(delta)
    minutes, seconds = divmod(delta.seconds, 60)
    hours, minutes = divmod(minutes, 60)
    return IsoDuration(
        days=delta.days,
        hours=hours,
        minutes=minutes,
        seconds=seconds + delta.microseconds / 1_000_000,
        negative=negative,
    ).isoformat()


def _add_months(moment: D, months: int) -> D:
    years, month_index = divmod(moment.month - 1 + months, 12)
    year = moment.year + years
    month = month_index + 1
    day = min(moment.day, calendar.monthrange(year, month)[1])
    return moment.replace(year=year, month=month, day=day)


def shift(moment: D, duration: str | IsoDuration) -> D:
    """Add an ISO 8601 duration to a date or datetime on the calendar.

    Years and months move the calendar month, keeping the day where possible (January 31 plus one
    month is the last day of February); the other components are then added exactly. A negative
    duration moves back in time. Adding to a ``date`` ignores hours, minutes and seconds.

    Raises:
        ValueError: years or months are fractional, which has no calendar meaning.
    """
    iso = parse_iso(duration) if isinstance(duration, str) else duration
    if not (float(iso.years).is_integer() and float(iso.months).is_integer()):
        raise ValueError("fractional years or months cannot be applied to a calendar date")
    sign = -1 if iso.negative else 1
    moved = _add_months(moment, sign * (int(iso.years) * 12 + int(iso.months)))
    rest = timedelta(days=iso.days, hours=iso.hours, minutes=iso.minutes, seconds=iso.seconds)
    return moved - rest if iso.negative else moved + rest
