"""Read durations the way people write them.

Accepted forms, all with an optional leading sign:

- unit amounts: ``"1h30m"``, ``"2 days 3 hours"``, ``"1.5h"``, ``"1 hour, 30 minutes and 5s"``
- clock notation: ``"1:30:00"``, ``"4:05"`` (minutes and seconds), ``"0:00:01.5"``
- a bare number, read in ``default_unit`` (seconds unless told otherwise)
- ISO 8601: ``"PT1H30M"``, ``"P2D"``, handed to :func:`durata.iso.parse_iso`
"""

from __future__ import annotations

import re
from datetime import timedelta

from .errors import DurationParseError
from .iso import parse_iso
from .units import UNIT_SECONDS, canonical_unit, unit_seconds

_AMOUNT = re.compile(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*([^\W\d_]+)\s*(?:,\s*)?(?:and\s+)?", re.IGNORECASE)
_CLOCK = re.compile(r"(?:(?P<hours>\d+):)?(?P<minutes>\d{1,2}):(?P<seconds>\d{1,2}(?:\.\d+)?)")
_BARE_NUMBER = re.compile(r"\d+(?:\.\d+)?|\.\d+")


def _split_sign(raw: str) -> tuple[int, str]:
    if raw[:1] in "+-":
        return (-1 if raw[0] == "-" else 1), raw[1:].lstrip()
    return 1, raw


def _looks_like_iso(raw: str) -> bool:
    return raw.lstrip("+-")[:1] in ("P", "p")


def _parse_clock(match: re.Match[str]) -> timedelta:
    minutes = int(match["minutes"])
    seconds = float(match["seconds"])
    if match["hours"] is not None and minutes >= 60:
        raise DurationParseError(match.string, "minutes must be below 60 in h:mm:ss")
    if seconds >= 60:
        raise DurationParseError(match.string, "seconds must be below 60")
    return timedelta(hours=int(match["hours"] or 0), minutes=minutes, seconds=seconds)


def _parse_amounts(body: str, text: str) -> timedelta:
    total = timedelta(0)
    seen: set[str] = set()
    position = 0
    while position < len(body):
        match = _AMOUNT.match(body, position)
        if match is None:
            raise DurationParseError(text, f"unexpected {body[position:]!r}")
        unit = canonical_unit(match[2])
        if unit in seen:
            raise DurationParseError(text, f"unit {match[2]!r} given more than once")
        seen.add(unit)
        total += timedelta(seconds=float(match[1]) * UNIT_SECONDS[unit])
        position = match.end()
    return total


def parse(text: str, *, default_unit: str = "s") -> timedelta:
    """Parse a duration into a :class:`datetime.timedelta`.

    >>> parse("1h30m")
    datetime.timedelta(seconds=5400)
    >>> parse("PT90S") == parse("1.5 min") == parse("1:30")
    True

    Raises:
        DurationParseError: ``text`` is not a duration in any accepted form.
    """
    if not isinstance(text, str):
        raise TypeError(f"expected a string, got {type(text).__name__}")
    raw = text.strip()
    if not raw:
        raise DurationParseError(text, "empty string")
    if _looks_like_iso(raw):
        return parse_iso(raw).to_timedelta()
    sign, body = _split_sign(raw)
    if not body:
        raise DurationParseError(text, "no amount after the sign")
    if _BARE_NUMBER.fullmatch(body):
        return sign * timedelta(seconds=float(body) * unit_seconds(default_unit))
    clock = _CLOCK.fullmatch(body)
    if clock is not None:
        return sign * _parse_clock(clock)
    return sign * _parse_amounts(body, text)
