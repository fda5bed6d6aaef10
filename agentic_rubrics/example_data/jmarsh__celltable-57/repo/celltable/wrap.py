"""Word wrapping measured in terminal columns.

:func:`textwrap.wrap` counts code points, which breaks alignment for wide
characters, so celltable has its own small wrapper built on
:mod:`celltable.width`.
"""

from __future__ import annotations

from celltable.width import char_width, display_width


def _split_long_word(word: str, width: int) -> list[str]:
    """Hard-break ``word`` into pieces of at most ``width`` columns."""
    pieces: list[str] = []
    current = ""
    used = 0
    for ch in word:
        w = char_width(ch)
        if used + w > width and current:
            pieces.append(current)
            current, used = "", 0
        current += ch
        used += w
    if current:
        pieces.append(current)
    return pieces


def wrap_line(line: str, width: int) -> list[str]:
    """Wrap one line (no newlines) into lines of at most ``width`` columns.

    Runs of whitespace between words collapse to a single space.  Words
    longer than ``width`` are broken across lines.  An empty line wraps to
    ``[""]``.
    """
    words = line.split()
    if not words:
        return [""]
    lines: list[str] = []
    current = ""
    for word in words:
        pieces = _split_long_word(word, width) if display_width(word) > width else [word]
        for piece in pieces:
            if not current:
                current = piece
            elif display_width(current) + 1 + display_width(piece) <= width:
                current += " " + piece
            else:
                lines.append(current)
                current = piece
    lines.append(current)
    return lines


def wrap_text(text: str, width: int) -> list[str]:
    """Wrap ``text`` to ``width`` columns, keeping its explicit line breaks."""
    if width < 1:
        raise ValueError("width must be >= 1")
    out: list[str] = []
    for line in text.splitlines() or [""]:
        out.extend(wrap_line(line, width))
    return out
