"""Command line interface: page through or window over the lines of a text file.

    pagewise page notes.txt --per-page 25 --page 3
    pagewise window prices.csv --size 7
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .constants import DEFAULT_PER_PAGE, DEFAULT_WINDOW_STEP
from .paginator import Paginator
from .windows import sliding_window


def _read_lines(path: str) -> list[str]:
    if path == "-":
        return sys.stdin.read().splitlines()
    with open(path, encoding="utf-8") as handle:
        return handle.read().splitlines()


def _format_nav(nav: Sequence[int | str], current: int) -> str:
    return " ".join(f"[{item}]" if item == current else str(item) for item in nav)


def _cmd_page(args: argparse.Namespace) -> int:
    paginator = Paginator(_read_lines(args.file), per_page=args.per_page, orphans=args.orphans)
    page = paginator.get_page(args.page)
    for line in page:
        print(line)
    print(
        f"-- page {page.number} of {paginator.num_pages}, "
        f"lines {page.start_index()}-{page.end_index()} of {paginator.count} --"
    )
    if paginator.num_pages > 1:
        print(_format_nav(paginator.elided_page_range(page.number), page.number))
    return 0


def _cmd_window(args: argparse.Namespace) -> int:
    lines = _read_lines(args.file)
    for number, window in enumerate(sliding_window(lines, args.size, args.step), start=1):
        print(f"{number}: {args.separator.join(window)}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pagewise", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    page = commands.add_parser("page", help="print one page of a file's lines")
    page.add_argument("file", help="a text file, or - for standard input")
    page.add_argument("--page", default="1", help="page number (default: 1)")
    page.add_argument("--per-page", type=int, default=DEFAULT_PER_PAGE)
    page.add_argument("--orphans", type=int, default=0)
    page.set_defaults(handler=_cmd_page)

    window = commands.add_parser("window", help="print every window of a file's lines")
    window.add_argument("file", help="a text file, or - for standard input")
    window.add_argument("--size", type=int, required=True)
    window.add_argument("--step", type=int, default=DEFAULT_WINDOW_STEP)
    window.add_argument("--separator", default=" | ")
    window.set_defaults(handler=_cmd_window)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return int(args.handler(args))
    except (OSError, ValueError) as exc:
        print(f"pagewise: error: {exc}", file=sys.stderr)
        return 2
