"""Exceptions raised by durata."""

from __future__ import annotations


class DurationParseError(ValueError):
    """A string could not be read as a duration.

    Attributes:
        text: the string as it was given.
        reason: a short explanation of what is wrong with it.
    """

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"cannot parse duration {text!r}: {reason}")
