"""Small helpers shared by the pipeline, the graph and the command line."""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Sequence
from typing import Any, TypeVar

T = TypeVar("T")

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_.\-]*$")


def check_name(name: str) -> str:
    """Return ``name`` unchanged if it is a valid step name, else raise ``ValueError``.

    Step names start with a letter or underscore and may contain letters, digits,
    ``_``, ``.`` and ``-``.
    """
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(f"invalid step name: {name!r}")
    return name


def unique(items: Iterable[T]) -> list[T]:
    """The items without duplicates, keeping the first occurrence of each."""
    return list(dict.fromkeys(items))


def load_object(spec: str) -> Any:
    """Import ``"package.module:attribute"`` and return the attribute."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise ValueError(f"expected 'module:attribute', got {spec!r}")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def format_table(rows: Sequence[Sequence[str]], *, gap: int = 2) -> str:
    """Left-aligned plain-text table, one line per row, no trailing spaces."""
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(max(map(len, rows)))]
    lines = []
    for row in rows:
        cells = [cell.ljust(widths[i]) for i, cell in enumerate(row)]
        lines.append((" " * gap).join(cells).rstrip())
    return "\n".join(lines)
