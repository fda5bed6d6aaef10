"""What a git binary hunk declares, against what its data can hold: a hunk claiming more than its
compressed bytes could inflate to is corrupt (``git apply``: "corrupt binary patch"), whatever size it
names; an attacker's ``literal 99999999999`` is not a reason to leave the patch unanalysed."""

from __future__ import annotations

import re

SIZE = re.compile(r"^(?:literal|delta) (\d{1,20})$")
"""A binary hunk's first line: its kind and declared size."""
INFLATE_MAX = 1032
"""zlib's deflate expands its input at most about 1032 times."""


def binary_sizes(lines: list[str]) -> list[tuple[int, int]]:
    """Each binary hunk's declared size (``literal N`` / ``delta N``), and how many compressed bytes
    its base85 lines hold (a line's first letter says: ``A``-``Z`` 1-26, ``a``-``z`` 27-52); a blank
    line ends a hunk's data."""
    out: list[tuple[int, int]] = []
    open_ = False
    for line in lines:
        if m := SIZE.match(line):
            out.append((int(m.group(1)), 0))
            open_ = True
        elif open_ and line[:1].isascii() and line[:1].isalpha():
            held = ord(line[0]) - 64 if line[0].isupper() else ord(line[0]) - 70
            out[-1] = (out[-1][0], out[-1][1] + held)
        else:
            open_ = False
    return out
