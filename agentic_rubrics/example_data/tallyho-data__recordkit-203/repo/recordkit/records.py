"""Operations on a single record: a dict of field names to values, possibly nested.

Every function here returns a new record and leaves its arguments unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

SEPARATOR = "."


def get_path(record: Mapping[str, Any], path: str, default: Any = None) -> Any:
    """The value at a dotted ``path`` (``"address.city"``), or ``default`` if any part is missing."""
    node: Any = record
    for part in path.split(SEPARATOR):
        if not isinstance(node, Mapping) or part not in node:
            return default
        node = node[part]
    return node


def set_path(record: Mapping[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``record`` with ``value`` stored at the dotted ``path``.

    Intermediate dicts are created as needed; a non-dict value in the way is replaced.
    """
    parts = path.split(SEPARATOR)
    result = dict(record)
    node = result
    for part in parts[:-1]:
        child = node.get(part)
        child = dict(child) if isinstance(child, Mapping) else {}
        node[part] = child
        node = child
    node[parts[-1]] = value
    return result


def pick(record: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """Only the top-level ``fields`` of ``record`` that it has, in the order of ``fields``."""
    return {name: record[name] for name in fields if name in record}


def drop(record: Mapping[str, Any], fields: Iterable[str]) -> dict[str, Any]:
    """``record`` without the top-level ``fields``."""
    unwanted = set(fields)
    return {name: value for name, value in record.items() if name not in unwanted}


def rename(record: Mapping[str, Any], mapping: Mapping[str, str]) -> dict[str, Any]:
    """``record`` with top-level fields renamed by ``mapping`` (old -> new), order preserved."""
    return {mapping.get(name, name): value for name, value in record.items()}


def merge(*layers: Mapping[str, Any]) -> dict[str, Any]:
    """Deep-merge ``layers`` left to right into a new dict.

    A later layer wins over an earlier one. When both hold a dict under the same key, the two are
    merged key by key, recursively; any other value simply replaces the earlier one. The layers are
    never modified, and the result shares no dicts or lists with them, so it can be changed freely.
    """
    result: dict[str, Any] = {}
    for layer in layers:
        _merge_into(result, layer)
    return result


def _merge_into(target: dict[str, Any], source: Mapping[str, Any]) -> None:
    for key, value in source.items():
        current = target.get(key)
        if isinstance(current, dict) and isinstance(value, Mapping):
            _merge_into(current, value)
        else:
            target[key] = value


def flatten(record: Mapping[str, Any], *, separator: str = SEPARATOR) -> dict[str, Any]:
    """Nested dicts as dotted keys: ``{"a": {"b": 1}}`` -> ``{"a.b": 1}``. Lists are kept as values."""
    flat: dict[str, Any] = {}
    for name, value in record.items():
        if isinstance(value, Mapping) and value:
            for sub, inner in flatten(value, separator=separator).items():
                flat[f"{name}{separator}{sub}"] = inner
        else:
            flat[name] = value
    return flat


def unflatten(record: Mapping[str, Any], *, separator: str = SEPARATOR) -> dict[str, Any]:
    """The inverse of :func:`flatten`: dotted keys become nested dicts."""
    result: dict[str, Any] = {}
    for name, value in record.items():
        *parents, leaf = name.split(separator)
        node = result
        for part in parents:
            child = node.get(part)
            if not isinstance(child, dict):
                child = node[part] = {}
            node = child
        node[leaf] = value
    return result
