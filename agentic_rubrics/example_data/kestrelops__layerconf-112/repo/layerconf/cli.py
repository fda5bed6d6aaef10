"""Command line: print the merged configuration, or one key of it.

    layerconf [--env-prefix APP_] [--get KEY] FILE...

The exit status is 2 when the configuration is invalid, with the reason on standard error.
"""

from __future__ import annotations

import argparse
import sys

from .config import Config
from .errors import LayerconfError


def format_value(value: object) -> str:
    """A value as it would be written in an INI file."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return ", ".join(str(item) for item in value)
    return str(value)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="layerconf", description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="INI-like files, later ones override earlier ones")
    parser.add_argument("--env-prefix", help="also read environment variables with this prefix")
    parser.add_argument("--get", metavar="KEY", help="print only this key's value")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        config = Config.load(files=args.files, env_prefix=args.env_prefix)
        if args.get:
            print(format_value(config.get(args.get)))
            return 0
        for key, value in config.as_dict().items():
            print(f"{key} = {format_value(value)}")
    except LayerconfError as exc:
        print(f"layerconf: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
