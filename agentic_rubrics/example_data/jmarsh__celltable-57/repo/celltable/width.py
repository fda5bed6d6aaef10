"""Terminal display width of text.

A terminal does not give every code point one column: East Asian wide and
fullwidth characters take two, and some format characters take none.  Every
measurement and every padding/truncation in celltable goes through this
module so that columns line up.
"""

from __future__ import annotations

import unicodedata

#: East Asian Width classes that occupy two terminal columns.
WIDE_CLASSES = frozenset({"W", "F"})

#: Format characters that are invisible in a terminal.
ZERO_WIDTH_CHARS = frozenset(
    {
        "\u200b",  # ZERO WIDTH SPACE
        "\u200c",  # ZERO WIDTH NON-JOINER
        "\u200d",  # ZERO WIDTH JOINER
        "\u2060",  # WORD JOINER
        "\ufeff",  # ZERO WIDTH NO-BREAK SPACE (BOM)
    }
)

DEFAULT_PLACEHOLDER = "\u2026"  # HORIZONTAL ELLIPSIS


def char_width(char: str) -> int:
    """Number of terminal columns the single code point ``char`` occupies (0, 1 or 2)."""
    if len(char) != 1:
        raise ValueError(f"char_width() expects a single character, got {char!r}")
    if char in ZERO_WIDTH_CHARS:
        return 0
    if unicodedata.east_asian_width(char) in WIDE_CLASSES:
        return 2
    return 1


def display_width(text: str) -> int:
    """Number of terminal columns ``text`` occupies on one line."""
    return sum(char_width(ch) for ch in text)


def truncate(text: str, width: int, placeholder: str = DEFAULT_PLACEHOLDER) -> str:
    """Shorten ``text`` to at most ``width`` columns, ending with ``placeholder`` if cut.

    Text that already fits is returned unchanged.  If even the placeholder does
    not fit, the placeholder itself is cut.
    """
    if width < 0:
        raise ValueError("width must be >= 0")
    if display_width(text) <= width:
        return text
    room = width - display_width(placeholder)
    if room < 0:
        return truncate(placeholder, width, placeholder="")
    kept: list[str] = []
    used = 0
    for ch in text:
        w = char_width(ch)
        if used + w > room:
            break
        kept.append(ch)
        used += w
    return "".join(kept) + placeholder


def pad(text: str, width: int, align: str = "l", fill: str = " ") -> str:
    """Pad ``text`` with ``fill`` to exactly ``width`` columns.

    ``align`` is ``"l"`` (left), ``"r"`` (right) or ``"c"`` (centre; an odd
    remainder goes to the right).  Text wider than ``width`` is returned as is.
    """
    if align not in ("l", "r", "c"):
        raise ValueError(f"align must be 'l', 'r' or 'c', not {align!r}")
    if char_width(fill) != 1:
        raise ValueError("fill must be a single-column character")
    gap = width - display_width(text)
    if gap <= 0:
        return text
    if align == "l":
        return text + fill * gap
    if align == "r":
        return fill * gap + text
    left = gap // 2
    return fill * left + text + fill * (gap - left)
