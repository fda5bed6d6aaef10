"""Operations on lists of records. Each returns a new list and leaves the input records unchanged."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Any

from .records import get_path, merge, rename

_WORD_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|[^A-Za-z0-9]+")

Record = Mapping[str, Any]
KeyFunc = Callable[[Record], Any]


def apply_defaults(records: Iterable[Record], defaults: Mapping[str, Any]) -> list[dict[str, Any]]:
    """New records with every field missing from a record filled in from ``defaults``.

    Nested dicts are filled in key by key (see :func:`recordkit.merge`); values a record already
    has always win. Neither the records nor ``defaults`` are modified.
    """
    return [merge(defaults, record) for record in records]


def snake_case(name: str) -> str:
    """``"First Name"``, ``"firstName"`` and ``"first-name"`` all become ``"first_name"``."""
    words = [word for word in _WORD_BOUNDARY.split(name.strip()) if word]
    return "_".join(word.lower() for word in words)


def normalise_keys(records: Iterable[Record]) -> list[dict[str, Any]]:
    """New records with their top-level field names converted to snake_case."""
    return [rename(record, {name: snake_case(name) for name in record}) for record in records]


def _key_func(key: str | KeyFunc) -> KeyFunc:
    if callable(key):
        return key
    return lambda record: get_path(record, key)


def sort_records(
    records: Iterable[Record], key: str | KeyFunc, *, reverse: bool = False
) -> list[Record]:
    """A new list sorted by a dotted field name or a function; missing values (None) sort last."""
    func = _key_func(key)
    items = list(records)
    present = [r for r in items if func(r) is not None]
    absent = [r for r in items if func(r) is None]
    return sorted(present, key=func, reverse=reverse) + absent


def dedupe(records: Iterable[Record], key: str | KeyFunc) -> list[Record]:
    """The records with a duplicate key removed, keeping the first occurrence, order preserved."""
    func = _key_func(key)
    seen: set[Hashable] = set()
    unique = []
    for record in records:
        value = func(record)
        if value in seen:
            continue
        seen.add(value)
        unique.append(record)
    return unique


def group_by(records: Iterable[Record], key: str | KeyFunc) -> dict[Any, list[Record]]:
    """Records grouped by key value, groups in order of first appearance."""
    func = _key_func(key)
    groups: dict[Any, list[Record]] = {}
    for record in records:
        groups.setdefault(func(record), []).append(record)
    return groups


def index_by(records: Iterable[Record], key: str | KeyFunc) -> dict[Any, Record]:
    """Records by key value; with duplicates, the last record wins."""
    func = _key_func(key)
    return {func(record): record for record in records}
