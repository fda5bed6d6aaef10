"""Parsing of INI-like configuration files and conversion of raw string values."""

from __future__ import annotations

from .errors import ConfigError

COMMENT_PREFIXES = ("#", ";")
TRUE_WORDS = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS = frozenset({"0", "false", "no", "off"})


def parse_ini(text: str, *, origin: str = "<string>") -> dict[str, str]:
    """Parse INI-like text into a flat mapping of dotted keys to raw string values.

    A ``[section]`` header prefixes the keys below it (``[db]`` then ``host = x`` gives
    ``db.host``); nested sections are written with dots (``[db.replica]``). Blank lines and lines
    starting with ``#`` or ``;`` are ignored. A value wrapped in matching quotes is unquoted.

    Raises:
        ConfigError: a line is neither a section header, a comment nor ``key = value``.
    """
    values: dict[str, str] = {}
    prefix = ""
    for lineno, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(COMMENT_PREFIXES):
            continue
        if stripped.startswith("["):
            name = stripped[1:-1].strip()
            if not stripped.endswith("]") or not name:
                raise ConfigError(
                    f"{origin}:{lineno}: malformed section header {stripped!r}", source=origin
                )
            prefix = name + "."
            continue
        key, sep, value = stripped.partition("=")
        key = key.strip()
        if not sep or not key:
            raise ConfigError(
                f"{origin}:{lineno}: expected 'key = value', got {stripped!r}", source=origin
            )
        values[prefix + key] = unquote(value.strip())
    return values


def unquote(value: str) -> str:
    """Remove one pair of matching single or double quotes around ``value``."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return value[1:-1]
    return value


def to_bool(value: object) -> bool:
    """Interpret ``value`` as a boolean (``yes``/``no``, ``on``/``off``, ``1``/``0`` ...)."""
    if isinstance(value, bool):
        return value
    word = str(value).strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    raise ValueError(f"not a boolean: {value!r}")


def to_int(value: object) -> int:
    """Interpret ``value`` as an integer; ``_`` separators are allowed (``10_000``)."""
    if isinstance(value, bool):
        raise ValueError(f"not an integer: {value!r}")
    if isinstance(value, int):
        return value
    return int(str(value).strip())


def to_float(value: object) -> float:
    """Interpret ``value`` as a float."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    return float(str(value).strip())


def to_list(value: object, *, separator: str = ",") -> list[str]:
    """Split ``value`` on ``separator`` into stripped, non-empty items."""
    if isinstance(value, (list, tuple)):
        return [str(item) for item in value]
    return [item.strip() for item in str(value).split(separator) if item.strip()]


CONVERTERS = {bool: to_bool, int: to_int, float: to_float, list: to_list, str: str}
