"""Command line: convert a duration between notations.

    durata 1h30m                 ->  1h 30m
    durata 90 minutes --to iso   ->  PT1H30M
    durata PT36H --to long       ->  1 day, 12 hours
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .errors import DurationParseError
from .formatter import STYLES, format_duration
from .iso import format_iso
from .parser import parse

TARGETS = (*STYLES, "iso", "seconds")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="durata", description="Convert a duration between notations.")
    parser.add_argument("duration", nargs="+", help="the duration; several words are joined")
    parser.add_argument("--to", choices=TARGETS, default="compact", help="output notation")
    parser.add_argument("--max-units", type=int, default=None, help="compact/long: largest units only")
    parser.add_argument("--weeks", action="store_true", help="compact/long: use weeks")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    text = " ".join(args.duration)
    try:
        delta = parse(text)
    except DurationParseError as exc:
        print(f"durata: {exc}", file=sys.stderr)
        return 2
    if args.to == "iso":
        print(format_iso(delta))
    elif args.to == "seconds":
        print(f"{delta.total_seconds():g}")
    else:
        print(format_duration(delta, style=args.to, max_units=args.max_units, use_weeks=args.weeks))
    return 0
