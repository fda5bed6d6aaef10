"""The regexes of checks: written in Python ``re`` syntax, run under a time limit.

A rubric's regex is untrusted (a model or a stranger wrote it) and so is every line it is searched in
(a candidate patch): ``'^(a+)+$'`` backtracks exponentially in Python's ``re``, which has no way to
stop a search. Checks therefore run on the ``regex`` package, whose searches take a ``timeout``. A
check's regex gets :data:`REGEX_SECONDS` of CPU time for all the lines of one patch; past it the check
says ``check_error`` with the detail ``timeout`` instead of deciding.

Validation accepts exactly what Python's ``re`` compiles (the syntax users write), and also requires
that ``regex`` compiles it. Where the two engines read the same pattern differently docs/formats.md says
so (in short: ``[[:alpha:]]`` is a POSIX class in ``regex`` and a plain set in ``re``).
"""

from __future__ import annotations

import itertools
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
RUBRIC_SECONDS = 5.0
"""CPU seconds all the checks of one rubric may spend on one patch together, by default: a rubric of
many slow regexes costs at most this per candidate; the items left undecided are ``missing:
check_error`` (``rubric_timeout``)."""
PROBE_SECONDS = 0.05
"""CPU seconds a regex may spend on all its validation probe lines before it is refused as
catastrophic (a legitimate pattern spends well under a millisecond on them)."""
PROBE_LENGTH = 1000
"""Characters of a probe line (a unit repeated, then a character no unit holds): patch lines are
often this long, and an exponential or high-degree polynomial backtracker runs for ever on them."""

_LIMIT: ContextVar[float] = ContextVar("check_regex_seconds", default=REGEX_SECONDS)
_RUBRIC_LIMIT: ContextVar[float] = ContextVar("check_rubric_seconds", default=RUBRIC_SECONDS)


@contextmanager
def rubric_time_limit(seconds: float) -> Iterator[None]:
    """Give all the checks of one rubric, evaluated inside this block, ``seconds`` of CPU per patch."""
    token = _RUBRIC_LIMIT.set(seconds)
    try:
        yield
    finally:
        _RUBRIC_LIMIT.reset(token)


def rubric_seconds() -> float:
    """The CPU seconds all the checks of one rubric may spend on one patch (here and now)."""
    return _RUBRIC_LIMIT.get()


def regex_seconds() -> float:
    """The CPU seconds one check's regex may spend on one patch (here and now)."""
    return _LIMIT.get()


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


@lru_cache(maxsize=4096)
def regex_problem(pattern: str) -> str | None:
    """Why ``pattern`` is not a valid check regex, or ``None`` when it is: it must compile in both
    engines, and must not backtrack catastrophically on the probe lines (:func:`catastrophic`)."""
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
    return catastrophic(pattern)


def _probe_units(pattern: str) -> list[str]:
    """What the probe lines repeat: a few generic units, and the pattern's own literal characters
    (alone and in adjacent pairs), which is what a nested quantifier over them backtracks on."""
    literal = [ch for ch in pattern if ch.isalnum() or ch in " _-.,:;/"]
    units = ["a", "0", " ", "a ", "a0", "\t"]
    units += list(dict.fromkeys(literal))[:12]
    units += list(dict.fromkeys(a + b for a, b in itertools.pairwise(literal)))[:12]
    return list(dict.fromkeys(units))


def catastrophic(pattern: str) -> str | None:
    """Why the ``regex`` engine flags ``pattern`` as catastrophic (``None``: it does not): searching
    the probe lines — each a unit repeated to :data:`PROBE_LENGTH` characters, then ``\\x01``, which
    ends no match — takes more than :data:`PROBE_SECONDS` of CPU in all. Such a pattern would spend its
    whole time limit on a similar line of a patch, for every candidate."""
    compiled = compile_regex(pattern)
    deadline = time.process_time() + PROBE_SECONDS
    for unit in _probe_units(pattern):
        line = unit * (PROBE_LENGTH // len(unit)) + "\x01"
        left = deadline - time.process_time()
        try:
            if left <= 0:
                raise TimeoutError
            compiled.search(line, timeout=left)
        except TimeoutError:
            return (
                f"regex backtracks catastrophically: its search of {len(line)}-character probe lines"
                f" (here {unit!r} repeated) ran past {PROBE_SECONDS * 1000:g} ms of CPU; rewrite it"
                " without nested or overlapping quantifiers (a possessive quantifier such as a++"
                " does not backtrack)"
            )
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
