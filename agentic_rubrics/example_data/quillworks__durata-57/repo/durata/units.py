"""Time units understood by the human-friendly parser and written by the formatter."""

from __future__ import annotations

from .errors import DurationParseError

SECONDS_PER_MINUTE = 60
SECONDS_PER_HOUR = 60 * SECONDS_PER_MINUTE
SECONDS_PER_DAY = 24 * SECONDS_PER_HOUR
SECONDS_PER_WEEK = 7 * SECONDS_PER_DAY

#: Length of each canonical unit, in seconds.
UNIT_SECONDS: dict[str, float] = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1,
    "m": SECONDS_PER_MINUTE,
    "h": SECONDS_PER_HOUR,
    "d": SECONDS_PER_DAY,
    "w": SECONDS_PER_WEEK,
}

#: Every spelling accepted for each canonical unit (matched case-insensitively).
UNIT_ALIASES: dict[str, tuple[str, ...]] = {
    "us": ("us", "µs", "usec", "usecs", "microsecond", "microseconds"),
    "ms": ("ms", "msec", "msecs", "millisecond", "milliseconds"),
    "s": ("s", "sec", "secs", "second", "seconds"),
    "m": ("m", "min", "mins", "minute", "minutes"),
    "h": ("h", "hr", "hrs", "hour", "hours"),
    "d": ("d", "day", "days"),
    "w": ("w", "wk", "wks", "week", "weeks"),
}

#: Singular and plural names used by the long output style.
LONG_NAMES: dict[str, tuple[str, str]] = {
    "w": ("week", "weeks"),
    "d": ("day", "days"),
    "h": ("hour", "hours"),
    "m": ("minute", "minutes"),
    "s": ("second", "seconds"),
}

_LOOKUP = {alias: unit for unit, aliases in UNIT_ALIASES.items() for alias in aliases}


def canonical_unit(name: str) -> str:
    """The canonical unit for a spelling such as ``"hrs"`` or ``"Minutes"``.

    Raises:
        DurationParseError: the spelling is not known.
    """
    try:
        return _LOOKUP[name.strip().lower()]
    except KeyError:
        raise DurationParseError(name, f"unknown unit {name!r}") from None


def unit_seconds(name: str) -> float:
    """Length in seconds of the unit spelled ``name``."""
    return UNIT_SECONDS[canonical_unit(name)]
