"""Turn a timedelta back into text: ``"1h 30m"`` or ``"1 hour, 30 minutes"``."""

from __future__ import annotations

from datetime import timedelta

from .units import LONG_NAMES, UNIT_SECONDS

STYLES = ("compact", "long")

_MICROSECONDS = {unit: round(UNIT_SECONDS[unit] * 1_000_000) for unit in ("w", "d", "h", "m", "s")}


def _seconds_text(whole: int, micro: int) -> str:
    if not micro:
        return str(whole)
    return f"{whole}.{micro:06d}".rstrip("0")


def format_duration(
    delta: timedelta,
    *,
    style: str = "compact",
    max_units: int | None = None,
    use_weeks: bool = False,
) -> str:
    """Format ``delta`` from the largest unit down.

    Args:
        style: ``"compact"`` gives ``"1d 2h 5s"``, ``"long"`` gives ``"1 day, 2 hours, 5 seconds"``.
        max_units: keep only this many of the largest non-zero units (the rest is dropped, not
            rounded).
        use_weeks: express whole weeks as weeks instead of days.

    >>> format_duration(timedelta(hours=1, minutes=30))
    '1h 30m'
    """
    if style not in STYLES:
        raise ValueError(f"style must be one of {STYLES}, got {style!r}")
    if max_units is not None and max_units < 1:
        raise ValueError("max_units must be at least 1")
    negative = delta < timedelta(0)
    remaining = abs(delta) // timedelta(microseconds=1)

    parts: list[tuple[str, str]] = []
    for unit in ("w", "d", "h", "m", "s"):
        if unit == "w" and not use_weeks:
            continue
        amount, remaining = divmod(remaining, _MICROSECONDS[unit])
        if unit == "s":
            if amount or remaining:
                parts.append((_seconds_text(amount, remaining), unit))
        elif amount:
            parts.append((str(amount), unit))
    if not parts:
        parts.append(("0", "s"))
    if max_units is not None:
        parts = parts[:max_units]

    if style == "compact":
        text = " ".join(f"{amount}{unit}" for amount, unit in parts)
    else:
        text = ", ".join(
            f"{amount} {LONG_NAMES[unit][0 if amount == '1' else 1]}" for amount, unit in parts
        )
    return "-" + text if negative else text
