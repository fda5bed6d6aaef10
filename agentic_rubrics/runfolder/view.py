"""A typed record read as its JSON too: ``report["selectors"]["rubric"]["best_at_k"]["1"]``.

Scripts written when the API returned report.json's dict keep working; the attributes are typed and
complete (completion, type checks), and ``to_json`` is the file's content.
"""

from __future__ import annotations

from typing import Any


class JsonView:
    """Mapping-style reads of ``to_json()`` for a typed record."""

    def to_json(self) -> dict[str, Any]:
        """The record as written (a subclass says how)."""
        raise NotImplementedError

    def __getitem__(self, key: str) -> Any:
        return self.to_json()[key]

    def get(self, key: str, default: Any = None) -> Any:
        """The JSON value under ``key``, or ``default``."""
        return self.to_json().get(key, default)

    def keys(self) -> list[str]:
        """The JSON keys."""
        return list(self.to_json())

    def items(self) -> list[tuple[str, Any]]:
        """The JSON keys and values."""
        return list(self.to_json().items())

    def __contains__(self, key: object) -> bool:
        return key in self.to_json()
