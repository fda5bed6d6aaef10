"""Border styles.

A style says which characters draw the outer frame, the line under the
header and the column separators.  ``None`` for a rule means "no such line".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional, Tuple

Rule = Optional[Tuple[str, str, str, str]]  # (left, fill, join, right)


@dataclass(frozen=True)
class BorderStyle:
    """Characters used to draw a table."""

    name: str
    top: Rule
    header: Rule
    bottom: Rule
    row: Tuple[str, str, str]  # (left edge, column separator, right edge)


STYLES: dict[str, BorderStyle] = {
    "ascii": BorderStyle(
        "ascii",
        top=("+", "-", "+", "+"),
        header=("+", "=", "+", "+"),
        bottom=("+", "-", "+", "+"),
        row=("|", "|", "|"),
    ),
    "box": BorderStyle(
        "box",
        top=("\u250c", "\u2500", "\u252c", "\u2510"),
        header=("\u251c", "\u2500", "\u253c", "\u2524"),
        bottom=("\u2514", "\u2500", "\u2534", "\u2518"),
        row=("\u2502", "\u2502", "\u2502"),
    ),
    "rounded": BorderStyle(
        "rounded",
        top=("\u256d", "\u2500", "\u252c", "\u256e"),
        header=("\u251c", "\u2500", "\u253c", "\u2524"),
        bottom=("\u2570", "\u2500", "\u2534", "\u256f"),
        row=("\u2502", "\u2502", "\u2502"),
    ),
    "markdown": BorderStyle(
        "markdown",
        top=None,
        header=("|", "-", "|", "|"),
        bottom=None,
        row=("|", "|", "|"),
    ),
    "plain": BorderStyle("plain", top=None, header=None, bottom=None, row=("", " ", "")),
}


def get_style(style: "str | BorderStyle") -> BorderStyle:
    """Look up a style by name (or pass a :class:`BorderStyle` through)."""
    if isinstance(style, BorderStyle):
        return style
    try:
        return STYLES[style]
    except KeyError:
        known = ", ".join(sorted(STYLES))
        raise ValueError(f"unknown style {style!r} (known: {known})") from None
