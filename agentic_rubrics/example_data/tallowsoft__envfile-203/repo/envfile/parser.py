"""Parse env-file text into bindings and dictionaries."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from envfile.errors import ParseError
from envfile.interpolate import expand
from envfile.lexer import is_blank_or_comment, read_value, split_assignment


@dataclass(frozen=True)
class Binding:
    """One ``KEY=VALUE`` line: the value as written (quotes removed, not interpolated)."""

    key: str
    value: str
    quote: str
    lineno: int


def parse_assignment(line: str, lineno: int = 0) -> Binding:
    """Parse a single ``KEY=VALUE`` line."""
    key, raw = split_assignment(line, lineno)
    value, quote = read_value(raw, lineno, line)
    return Binding(key, value, quote, lineno)


def parse(text: str) -> list[Binding]:
    """Every assignment in ``text``, in file order; blank and comment lines are skipped."""
    bindings = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if is_blank_or_comment(line):
            continue
        bindings.append(parse_assignment(line, lineno))
    return bindings


def loads(
    text: str, *, interpolate: bool = True, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables defined by ``text``; a later assignment of a key wins.

    With ``interpolate`` (the default), references in unquoted and double-quoted values are
    expanded from earlier keys and then from ``environ`` (``os.environ`` if not given).
    Single-quoted values are never expanded.
    """
    env = os.environ if environ is None else environ
    values: dict[str, str] = {}
    for binding in parse(text):
        value = binding.value
        if interpolate and binding.quote != "'":
            value = expand(value, values, env)
        values[binding.key] = value
    return values


def load(
    path: str | Path,
    *,
    interpolate: bool = True,
    environ: Mapping[str, str] | None = None,
    encoding: str = "utf-8",
) -> dict[str, str]:
    """:func:`loads` for a file; parse errors name the file."""
    text = Path(path).read_text(encoding=encoding)
    try:
        return loads(text, interpolate=interpolate, environ=environ)
    except ParseError as exc:
        exc.source = str(path)
        raise
