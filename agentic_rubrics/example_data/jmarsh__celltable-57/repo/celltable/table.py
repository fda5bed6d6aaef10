"""The :class:`Table` builder and its renderer."""

from __future__ import annotations

from typing import Any, Iterable, Optional, Sequence

from celltable.styles import BorderStyle, get_style
from celltable.width import display_width, pad, truncate
from celltable.wrap import wrap_text

OVERFLOW_MODES = ("truncate", "wrap")


def format_cell(value: Any, float_format: str = "g") -> str:
    """Turn a cell value into text: ``None`` is empty, floats use ``float_format``."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return format(value, float_format)
    return str(value)


class Table:
    """A table of rows, rendered with :meth:`render`.

    Args:
        headers: column titles, or ``None`` for a table without a header row.
        style: a style name from :data:`celltable.styles.STYLES` or a ``BorderStyle``.
        align: one of ``"l"``, ``"r"``, ``"c"`` per column (``"lrr"``); missing
            columns are left-aligned.
        max_width: the widest a column may be, in terminal columns.
        overflow: what to do with cells wider than ``max_width``:
            ``"truncate"`` (cut with an ellipsis) or ``"wrap"`` (more lines).
        padding: spaces on each side of a cell.
    """

    def __init__(
        self,
        headers: Optional[Sequence[Any]] = None,
        *,
        style: "str | BorderStyle" = "box",
        align: str = "",
        max_width: Optional[int] = None,
        overflow: str = "truncate",
        padding: int = 1,
        float_format: str = "g",
    ) -> None:
        if overflow not in OVERFLOW_MODES:
            raise ValueError(f"overflow must be one of {OVERFLOW_MODES}, not {overflow!r}")
        if max_width is not None and max_width < 1:
            raise ValueError("max_width must be >= 1")
        self.style = get_style(style)
        self.align = align
        self.max_width = max_width
        self.overflow = overflow
        self.padding = padding
        self.float_format = float_format
        self.headers = [format_cell(h) for h in headers] if headers is not None else None
        self.rows: list[list[str]] = []

    @property
    def column_count(self) -> int:
        if self.headers is not None:
            return len(self.headers)
        return max((len(r) for r in self.rows), default=0)

    def add_row(self, row: Iterable[Any]) -> "Table":
        """Append one row; returns the table so calls can be chained."""
        cells = [format_cell(v, self.float_format) for v in row]
        if self.headers is not None and len(cells) != len(self.headers):
            raise ValueError(f"row has {len(cells)} cells, the table has {len(self.headers)} columns")
        self.rows.append(cells)
        return self

    def add_rows(self, rows: Iterable[Iterable[Any]]) -> "Table":
        for row in rows:
            self.add_row(row)
        return self

    def _cell_lines(self, text: str) -> list[str]:
        """The physical lines one cell occupies."""
        lines = text.splitlines() or [""]
        if self.max_width is None:
            return lines
        if self.overflow == "wrap":
            return wrap_text(text, self.max_width)
        return [truncate(line, self.max_width) for line in lines]

    def _alignment(self, column: int) -> str:
        return self.align[column] if column < len(self.align) else "l"

    def render(self) -> str:
        """The table as text, lines joined with ``\\n`` (no trailing newline)."""
        ncols = self.column_count
        body = [r + [""] * (ncols - len(r)) for r in self.rows]
        grid = [[self._cell_lines(c) for c in row] for row in body]
        head = [self._cell_lines(h) for h in self.headers] if self.headers is not None else None

        widths = [0] * ncols
        for row in ([head] if head else []) + grid:
            for i, lines in enumerate(row):
                widths[i] = max(widths[i], *(display_width(line) for line in lines))

        out: list[str] = []
        if self.style.top:
            out.append(self._rule(self.style.top, widths))
        if head is not None:
            out.extend(self._row_lines(head, widths))
            if self.style.header:
                out.append(self._rule(self.style.header, widths))
        for row in grid:
            out.extend(self._row_lines(row, widths))
        if self.style.bottom:
            out.append(self._rule(self.style.bottom, widths))
        return "\n".join(out)

    def _rule(self, rule: tuple, widths: list[int]) -> str:
        left, fill, join, right = rule
        segments = [fill * (w + 2 * self.padding) for w in widths]
        return left + join.join(segments) + right

    def _row_lines(self, row: list[list[str]], widths: list[int]) -> list[str]:
        left, sep, right = self.style.row
        height = max((len(lines) for lines in row), default=1)
        space = " " * self.padding
        out = []
        for n in range(height):
            cells = []
            for i, lines in enumerate(row):
                text = lines[n] if n < len(lines) else ""
                cells.append(space + pad(text, widths[i], self._alignment(i)) + space)
            line = left + sep.join(cells) + right
            out.append(line if right else line.rstrip())
        return out

    def __str__(self) -> str:
        return self.render()


def render_table(
    rows: Iterable[Iterable[Any]], headers: Optional[Sequence[Any]] = None, **options: Any
) -> str:
    """One-call helper: ``render_table(rows, headers, style="markdown")``."""
    return Table(headers, **options).add_rows(rows).render()
