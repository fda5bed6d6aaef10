"""Edit an env file in place while keeping its comments, blank lines and order."""

from __future__ import annotations

from pathlib import Path

from envfile.errors import ParseError
from envfile.lexer import EXPORT_PREFIX, is_blank_or_comment, read_value, split_assignment
from envfile.writer import format_assignment


class EnvDocument:
    """An env file held line by line.

    ``get`` reads a value as written (quotes removed, no interpolation); ``set`` rewrites the
    line that assigns a key, or appends one; ``remove`` drops it. Every other line is kept
    exactly as it was.
    """

    def __init__(self, text: str = "") -> None:
        self.lines: list[str] = text.splitlines()

    @classmethod
    def from_file(cls, path: str | Path, encoding: str = "utf-8") -> EnvDocument:
        path = Path(path)
        return cls(path.read_text(encoding=encoding) if path.exists() else "")

    def save(self, path: str | Path, encoding: str = "utf-8") -> None:
        Path(path).write_text(str(self), encoding=encoding)

    def __str__(self) -> str:
        return "".join(line + "\n" for line in self.lines)

    def __contains__(self, key: str) -> bool:
        return self._find(key) is not None

    def keys(self) -> list[str]:
        """The assigned keys, in order of first assignment."""
        seen: dict[str, None] = {}
        for lineno, line in enumerate(self.lines, start=1):
            if not is_blank_or_comment(line):
                seen.setdefault(split_assignment(line, lineno)[0], None)
        return list(seen)

    def get(self, key: str, default: str | None = None) -> str | None:
        """The value of the last assignment of ``key``, or ``default``."""
        index = self._find(key)
        if index is None:
            return default
        line = self.lines[index]
        _, raw = split_assignment(line, index + 1)
        value, _ = read_value(raw, index + 1, line)
        return value

    def set(self, key: str, value: str) -> None:
        """Assign ``key``: rewrite its last assignment (keeping ``export``) or append a line."""
        index = self._find(key)
        if index is None:
            self.lines.append(format_assignment(key, value))
            return
        export = self.lines[index].lstrip().startswith(EXPORT_PREFIX)
        self.lines[index] = format_assignment(key, value, export=export)

    def remove(self, key: str) -> bool:
        """Drop every assignment of ``key``; True if there was one."""
        kept = [line for i, line in enumerate(self.lines) if not self._assigns(i, key)]
        removed = len(kept) != len(self.lines)
        self.lines = kept
        return removed

    def _assigns(self, index: int, key: str) -> bool:
        line = self.lines[index]
        if is_blank_or_comment(line):
            return False
        try:
            return split_assignment(line, index + 1)[0] == key
        except ParseError:
            return False

    def _find(self, key: str) -> int | None:
        for index in range(len(self.lines) - 1, -1, -1):
            if self._assigns(index, key):
                return index
        return None
