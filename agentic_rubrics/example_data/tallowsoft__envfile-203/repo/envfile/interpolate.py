"""Variable references inside values: ``$NAME``, ``${NAME}`` and ``${NAME:-default}``."""

from __future__ import annotations

import re
from collections.abc import Mapping

_REFERENCE = re.compile(
    r"\$(?:(?P<dollar>\$)"
    r"|\{(?P<braced>[A-Za-z_][A-Za-z0-9_]*)(?::-(?P<default>[^}]*))?\}"
    r"|(?P<bare>[A-Za-z_][A-Za-z0-9_]*))"
)


def expand(value: str, defined: Mapping[str, str], environ: Mapping[str, str] | None = None) -> str:
    """Replace the references in ``value``.

    A name is looked up in ``defined`` (the keys assigned earlier in the same file) and then in
    ``environ``. Unknown names become the ``:-`` default if there is one, else the empty string.
    ``$$`` stands for a literal ``$``.
    """
    env = environ or {}

    def replace(match: re.Match[str]) -> str:
        if match.group("dollar"):
            return "$"
        name = match.group("braced") or match.group("bare")
        if name in defined:
            return defined[name]
        if name in env:
            return env[name]
        default = match.group("default")
        return default if default is not None else ""

    return _REFERENCE.sub(replace, value)


def references(value: str) -> list[str]:
    """The names ``value`` refers to, in order of appearance."""
    return [
        m.group("braced") or m.group("bare")
        for m in _REFERENCE.finditer(value)
        if not m.group("dollar")
    ]
