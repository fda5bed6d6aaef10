"""Write values and mappings in env-file syntax that :mod:`envfile.parser` reads back."""

from __future__ import annotations

import re
from collections.abc import Mapping

from envfile.lexer import KEY_RE

_BARE = re.compile(r"[A-Za-z0-9_./:@%+,=-]+\Z")
_CONTROL = ("\n", "\r", "\t")


def quote_value(value: str) -> str:
    """``value`` as it should appear after ``=``.

    Simple values are written bare. Others are single-quoted (taken literally on reading)
    unless they contain a single quote or a control character, in which case they are
    double-quoted with escapes and ``$`` doubled so that it is not interpolated.
    """
    if _BARE.match(value):
        return value
    if "'" not in value and not any(c in value for c in _CONTROL):
        return f"'{value}'"
    escaped = (
        value.replace("\\", "\\\\")
        .replace('"', '\\"')
        .replace("\n", "\\n")
        .replace("\r", "\\r")
        .replace("\t", "\\t")
        .replace("$", "$$")
    )
    return f'"{escaped}"'


def format_assignment(key: str, value: str, *, export: bool = False) -> str:
    """One ``KEY=VALUE`` line (without newline)."""
    if not KEY_RE.match(key):
        raise ValueError(f"invalid key {key!r}")
    prefix = "export " if export else ""
    return f"{prefix}{key}={quote_value(value)}"


def dumps(values: Mapping[str, str], *, export: bool = False) -> str:
    """Env-file text for ``values``, one line per key, in mapping order."""
    return "".join(format_assignment(k, v, export=export) + "\n" for k, v in values.items())
