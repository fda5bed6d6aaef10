"""``${key}`` references inside configuration values.

A string value may refer to another key with ``${other.key}``; the reference is replaced by the
other key's value, itself expanded first. ``${other.key:-fallback}`` gives ``fallback`` when
``other.key`` is not set in any layer. ``$${`` produces a literal ``${``, and a ``$`` that does not
start a reference is kept as it is.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import ConfigError

OPEN = "${"
CLOSE = "}"
ESCAPE = "$${"
FALLBACK_SEPARATOR = ":-"


def expand(value: object, lookup: Mapping[str, object], *, key: str | None = None) -> object:
    """Expand every ``${...}`` reference in ``value`` using ``lookup`` (dotted key -> raw value).

    Values that are not strings are returned unchanged. ``key`` is the key ``value`` belongs to;
    it lets a value that refers back to itself be reported as a circular reference.

    Raises:
        ConfigError: the references form a cycle.
    """
    return _expand(value, lookup, (key,) if key else ())


def _expand(value: object, lookup: Mapping[str, object], chain: tuple[str, ...]) -> object:
    if not isinstance(value, str) or "$" not in value:
        return value
    out: list[str] = []
    pos = 0
    while True:
        start = value.find("$", pos)
        if start == -1:
            out.append(value[pos:])
            break
        out.append(value[pos:start])
        if value.startswith(ESCAPE, start):
            out.append(OPEN)
            pos = start + len(ESCAPE)
            continue
        if not value.startswith(OPEN, start):
            out.append("$")
            pos = start + 1
            continue
        end = value.index(CLOSE, start)
        name, has_fallback, fallback = value[start + len(OPEN) : end].partition(FALLBACK_SEPARATOR)
        name = name.strip()
        if has_fallback and name not in lookup:
            out.append(fallback)
        else:
            if name in chain:
                cycle = " -> ".join((*chain, name))
                raise ConfigError(f"circular reference: {cycle}", key=chain[0] if chain else name)
            replacement = lookup[name]
            out.append(_to_text(_expand(replacement, lookup, (*chain, name))))
        pos = end + len(CLOSE)
    return "".join(out)


def _to_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
