"""Exceptions raised by pagewise."""


class PaginationError(ValueError):
    """Base class of the errors raised when asking a paginator for a page."""


class PageNotAnInteger(PaginationError):
    """The requested page number is not an integer (for example ``"abc"`` from a query string)."""


class EmptyPage(PaginationError):
    """The requested page number is out of range: below 1 or past the last page."""
