"""Declarative checks and conversions for records."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from .records import get_path, merge, set_path

MISSING: Any = object()


class SchemaError(ValueError):
    """A record does not fit a :class:`Schema`. ``problems`` lists every reason."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True)
class Field:
    """One field of a schema.

    ``name`` may be a dotted path into nested dicts. ``type`` is used both to check and to convert
    a value (``int("3")``); ``None`` is always accepted for a field that is not ``required``.
    """

    name: str
    type: type = object
    default: Any = MISSING
    required: bool = False


class Schema:
    """A list of fields that records can be checked against and brought into shape with."""

    def __init__(self, fields: Iterable[Field]) -> None:
        self.fields = list(fields)

    def defaults(self) -> dict[str, Any]:
        """The nested record of every field's default value."""
        result: dict[str, Any] = {}
        for field in self.fields:
            if field.default is not MISSING:
                result = set_path(result, field.name, field.default)
        return result

    def problems(self, record: Mapping[str, Any]) -> list[str]:
        """Why ``record`` does not fit the schema (an empty list when it does)."""
        found = []
        for field in self.fields:
            value = get_path(record, field.name, MISSING)
            if value is MISSING or value is None:
                if field.required:
                    found.append(f"{field.name}: required")
            elif not isinstance(value, field.type):
                found.append(f"{field.name}: expected {field.type.__name__}, got {value!r}")
        return found

    def apply(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """A new record with defaults filled in and values converted to their field's type.

        Raises:
            SchemaError: a required field is missing or a value cannot be converted.
        """
        result = merge(self.defaults(), record)
        problems = []
        for field in self.fields:
            value = get_path(result, field.name, MISSING)
            if value is MISSING or value is None:
                if field.required:
                    problems.append(f"{field.name}: required")
                continue
            if isinstance(value, field.type):
                continue
            try:
                result = set_path(result, field.name, field.type(value))
            except (TypeError, ValueError):
                problems.append(f"{field.name}: cannot convert {value!r} to {field.type.__name__}")
        if problems:
            raise SchemaError(problems)
        return result
