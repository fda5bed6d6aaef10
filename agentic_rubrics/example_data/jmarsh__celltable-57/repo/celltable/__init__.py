"""celltable: plain-text tables for terminals and Markdown.

Quick start::

    >>> from celltable import Table
    >>> t = Table(["Name", "Qty"], align="lr")
    >>> t.add_row(["apples", 3])
    >>> print(t.render())
"""

from celltable.styles import STYLES, BorderStyle, get_style
from celltable.table import Table, format_cell, render_table
from celltable.width import char_width, display_width, pad, truncate
from celltable.wrap import wrap_text

__version__ = "0.6.2"

__all__ = [
    "STYLES",
    "BorderStyle",
    "Table",
    "char_width",
    "display_width",
    "format_cell",
    "get_style",
    "pad",
    "render_table",
    "truncate",
    "wrap_text",
]
