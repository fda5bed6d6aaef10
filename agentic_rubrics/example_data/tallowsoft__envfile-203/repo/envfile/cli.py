"""``envfile`` command line.

    envfile check .env              report syntax errors
    envfile get .env KEY            print a value (interpolated)
    envfile set .env KEY VALUE      assign a value, keeping the rest of the file
    envfile unset .env KEY          remove a key
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from envfile.document import EnvDocument
from envfile.errors import ParseError
from envfile.parser import load


def _check(args: argparse.Namespace) -> int:
    try:
        values = load(args.file, interpolate=False)
    except ParseError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{args.file}: {len(values)} variables")
    return 0


def _get(args: argparse.Namespace) -> int:
    values = load(args.file)
    if args.key not in values:
        print(f"{args.key}: not set", file=sys.stderr)
        return 1
    print(values[args.key])
    return 0


def _set(args: argparse.Namespace) -> int:
    doc = EnvDocument.from_file(args.file)
    doc.set(args.key, args.value)
    doc.save(args.file)
    return 0


def _unset(args: argparse.Namespace) -> int:
    doc = EnvDocument.from_file(args.file)
    if not doc.remove(args.key):
        print(f"{args.key}: not set", file=sys.stderr)
        return 1
    doc.save(args.file)
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="envfile", description="Read and edit .env files.")
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("check", help="report syntax errors")
    check.add_argument("file")
    check.set_defaults(run=_check)
    get = sub.add_parser("get", help="print a value")
    get.add_argument("file")
    get.add_argument("key")
    get.set_defaults(run=_get)
    set_ = sub.add_parser("set", help="assign a value")
    set_.add_argument("file")
    set_.add_argument("key")
    set_.add_argument("value")
    set_.set_defaults(run=_set)
    unset = sub.add_parser("unset", help="remove a key")
    unset.add_argument("file")
    unset.add_argument("key")
    unset.set_defaults(run=_unset)
    args = parser.parse_args(argv)
    try:
        return args.run(args)
    except ParseError as exc:
        print(exc, file=sys.stderr)
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
