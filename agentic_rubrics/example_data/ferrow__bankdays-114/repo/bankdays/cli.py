"""Command line interface.

    bankdays --calendar uk add 2025-03-28 5
    bankdays between 2025-01-01 2025-02-01
    bankdays --calendar target holidays 2025
    bankdays roll 2025-05-31 --convention modified_following
"""

from __future__ import annotations

import argparse
from datetime import date
from typing import Optional, Sequence

from bankdays.calendar import CONVENTIONS, BusinessCalendar
from bankdays.holidays import CALENDARS


def _date(text: str) -> date:
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date: {text!r}") from None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="bankdays", description="Business-day arithmetic.")
    parser.add_argument("--calendar", choices=sorted(CALENDARS), default="us")
    sub = parser.add_subparsers(dest="command", required=True)

    add = sub.add_parser("add", help="add (or subtract) business days")
    add.add_argument("start", type=_date)
    add.add_argument("days", type=int)

    between = sub.add_parser("between", help="count business days in [start, end)")
    between.add_argument("start", type=_date)
    between.add_argument("end", type=_date)

    hol = sub.add_parser("holidays", help="list the holidays of a year")
    hol.add_argument("year", type=int)

    roll = sub.add_parser("roll", help="roll a date to a business day")
    roll.add_argument("day", type=_date)
    roll.add_argument("--convention", choices=CONVENTIONS, default="following")
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    holidays = CALENDARS[args.calendar]
    cal = BusinessCalendar(holidays)
    if args.command == "add":
        print(cal.add_business_days(args.start, args.days).isoformat())
    elif args.command == "between":
        print(cal.business_days_between(args.start, args.end))
    elif args.command == "holidays":
        for day, name in holidays.named_dates_in(args.year).items():
            print(f"{day.isoformat()}  {day:%a}  {name}")
    elif args.command == "roll":
        print(cal.roll(args.day, args.convention).isoformat())
    return 0
