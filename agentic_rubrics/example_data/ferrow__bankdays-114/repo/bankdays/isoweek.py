"""ISO 8601 week dates: weeks start on Monday, week 1 contains 4 January."""

from __future__ import annotations

from datetime import date, timedelta


def iso_week(day: date) -> tuple[int, int]:
    """``(iso_year, week)`` of ``day``; early January can belong to the previous ISO year."""
    iso = day.isocalendar()
    return iso[0], iso[1]


def weeks_in_year(iso_year: int) -> int:
    """52 or 53: the ISO week number of 28 December."""
    return date(iso_year, 12, 28).isocalendar()[1]


def week_start(iso_year: int, week: int) -> date:
    """The Monday of ISO week ``week`` of ``iso_year``."""
    if not 1 <= week <= weeks_in_year(iso_year):
        raise ValueError(f"{iso_year} has no ISO week {week}")
    jan4 = date(iso_year, 1, 4)
    return jan4 - timedelta(days=jan4.weekday()) + timedelta(weeks=week - 1)


def week_label(day: date) -> str:
    """Compact label such as ``"2025-W01"``."""
    year, week = iso_week(day)
    return f"{year}-W{week:02d}"
