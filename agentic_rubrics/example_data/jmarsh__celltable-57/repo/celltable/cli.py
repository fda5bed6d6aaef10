"""Command line: render a CSV file as a table.

    celltable data.csv --style markdown --max-width 30
    cat data.csv | celltable - --align lrr
"""

from __future__ import annotations

import argparse
import csv
import io
import sys
from typing import Optional, Sequence

from celltable.styles import STYLES
from celltable.table import OVERFLOW_MODES, Table


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="celltable", description="Render CSV as a text table.")
    parser.add_argument("file", help="CSV file to read, or - for standard input")
    parser.add_argument("--style", choices=sorted(STYLES), default="box")
    parser.add_argument("--align", default="", help="per-column alignment, e.g. lrc")
    parser.add_argument("--max-width", type=int, default=None, help="widest a column may be")
    parser.add_argument("--overflow", choices=OVERFLOW_MODES, default="truncate")
    parser.add_argument("--delimiter", default=",", help="CSV field delimiter")
    parser.add_argument("--no-header", action="store_true", help="the first row is data")
    return parser


def read_rows(stream: io.TextIOBase, delimiter: str) -> list[list[str]]:
    return [row for row in csv.reader(stream, delimiter=delimiter) if row]


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    if args.file == "-":
        rows = read_rows(sys.stdin, args.delimiter)
    else:
        with open(args.file, newline="", encoding="utf-8-sig") as fh:
            rows = read_rows(fh, args.delimiter)
    if not rows:
        print("celltable: no rows", file=sys.stderr)
        return 1
    headers = None if args.no_header else rows.pop(0)
    table = Table(
        headers,
        style=args.style,
        align=args.align,
        max_width=args.max_width,
        overflow=args.overflow,
    )
    try:
        table.add_rows(rows)
    except ValueError as exc:
        print(f"celltable: {exc}", file=sys.stderr)
        return 1
    print(table.render())
    return 0
