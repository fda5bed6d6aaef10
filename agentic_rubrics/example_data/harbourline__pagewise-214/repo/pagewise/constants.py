"""Default values shared by the paginator, the page-range helper, the windowing helpers and the CLI."""

#: Items per page when the caller does not say.
DEFAULT_PER_PAGE = 20

#: Upper bound on ``per_page``; larger values are almost always a bug in the caller.
MAX_PER_PAGE = 1000

#: By default a short last page is kept as its own page.
DEFAULT_ORPHANS = 0

#: Placeholder that :func:`pagewise.ranges.elided_page_range` puts where pages are skipped.
ELLIPSIS = "…"

#: Pages shown on each side of the current page in an elided page range.
DEFAULT_ON_EACH_SIDE = 2

#: Pages always shown at both ends of an elided page range.
DEFAULT_ON_ENDS = 1

#: Windows advance by one item unless a step is given.
DEFAULT_WINDOW_STEP = 1
