"""pagewise: pagination and windowing helpers for Python sequences."""

from .constants import ELLIPSIS
from .errors import EmptyPage, PageNotAnInteger, PaginationError
from .paginator import Page, Paginator
from .ranges import elided_page_range
from .windows import chunked, count_windows, rolling, sliding_window, window_bounds

__version__ = "0.6.1"

__all__ = [
    "ELLIPSIS",
    "EmptyPage",
    "Page",
    "PageNotAnInteger",
    "PaginationError",
    "Paginator",
    "chunked",
    "count_windows",
    "elided_page_range",
    "rolling",
    "sliding_window",
    "window_bounds",
]
