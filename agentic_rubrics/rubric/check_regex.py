"""The regexes of checks: written in Python ``re`` syntax, run under a time limit.

A rubric's regex is untrusted (a model or a stranger wrote it) and so is every line it is searched in
(a candidate patch): ``'^(a+)+$'`` backtracks exponentially in Python's ``re``, which has no way to
stop a search. Checks therefore run on the ``regex`` package, whose searches take a ``timeout``. A
check's regex gets :data:`REGEX_SECONDS` of CPU time for all the lines of one patch; past it the check
says ``check_error`` with the detail ``timeout`` instead of deciding.

Validation accepts exactly what Python's ``re`` compiles (the syntax users write), and also requires
that ``regex`` compiles it. Where the two engines read the same pattern differently the README says
so (in short: ``[[:alpha:]]`` is a POSIX class in ``regex`` and a plain set in ``re``).
"""

from __future__ import annotations

import re
import time
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import lru_cache

import regex

from agentic_rubrics.exceptions import CheckError

REGEX_SECONDS = 1.0
"""CPU seconds one check's regex may spend on one patch (all its lines together), by default."""

_LIMIT: ContextVar[float] = ContextVar("check_regex_seconds", default=REGEX_SECONDS)


@contextmanager
def regex_time_limit(seconds: float) -> Iterator[None]:
    """Give check regexes evaluated inside this block ``seconds`` of CPU time per patch."""
    token = _LIMIT.set(seconds)
    try:
        yield
    finally:
        _LIMIT.reset(token)


class RegexTimeout(CheckError):
    """A check's regex ran past its time limit on this patch."""


def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid check regex, or ``None`` when it is."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # re's FutureWarning on "[[" is not an error
            re.compile(pattern)
    except (re.error, RecursionError, OverflowError, ValueError) as exc:
        return f"regex does not compile: {exc}"
    try:
        compile_regex(pattern)
    except CheckError as exc:
        return str(exc)
    return None


@lru_cache(maxsize=1024)
def compile_regex(pattern: str) -> regex.Pattern[str]:
    """The pattern compiled by the ``regex`` engine (the one searches run on)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return regex.compile(pattern)
    except (regex.error, RecursionError, OverflowError, ValueError) as exc:
        raise CheckError(f"regex {pattern!r} does not compile: {exc}") from exc


def any_line_matches(lines: Iterable[str], pattern: str, seconds: float | None = None) -> bool:
    """Whether ``pattern`` is found in some line, within ``seconds`` of CPU time for all lines
    (default: :data:`REGEX_SECONDS`, or what :func:`regex_time_limit` set).

    Raises:
        RegexTimeout: the time ran out before an answer.
        CheckError: the pattern does not compile.
    """
    compiled = compile_regex(pattern)
    seconds = _LIMIT.get() if seconds is None else seconds
    # the regex engine measures its timeout in process CPU time; so does this budget
    deadline = time.process_time() + seconds
    for line in lines:
        left = deadline - time.process_time()
        if left <= 0:
            raise RegexTimeout(f"regex {pattern!r} ran past {seconds:g} s of CPU time")
        try:
            if compiled.search(line, timeout=left) is not None:
                return True
        except TimeoutError as exc:
            raise RegexTimeout(f"regex {pattern!r} ran past {seconds:g} s of CPU time") from exc
    return False
