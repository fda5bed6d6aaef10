"""Exceptions raised by envfile."""

from __future__ import annotations


class EnvFileError(Exception):
    """Base class for envfile errors."""


class ParseError(EnvFileError, ValueError):
    """A line of an env file does not follow the syntax.

    Attributes:
        message: what is wrong.
        lineno: the 1-based line number, or 0 when unknown.
        line: the offending line as written.
        source: the file name, when the text came from a file.
    """

    def __init__(self, message: str, lineno: int = 0, line: str = "", source: str = "") -> None:
        self.message = message
        self.lineno = lineno
        self.line = line
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        if self.source:
            where = f"{self.source}:{self.lineno}" if self.lineno else self.source
        else:
            where = f"line {self.lineno}" if self.lineno else ""
        return f"{where}: {self.message}" if where else self.message
