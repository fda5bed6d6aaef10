"""Lint: warnings on a valid rubric (it still loads). What each one flags is in docs/spec.md.

Axis sizes outside the paper's ranges, compound items (:mod:`agentic_rubrics.rubric.compound`), items
referring to other items, descriptions not starting with a third-person verb, duplicate descriptions.
Time is linear in the rubric's text.
"""

from __future__ import annotations

import re
from collections import Counter

from agentic_rubrics.exceptions import Problem
from agentic_rubrics.rubric.compound import compound_reason
from agentic_rubrics.rubric.safe_yaml import Loc, Located, dotted_path
from agentic_rubrics.types import AXES, AXIS_RANGES, Rubric

COMPOUND_WARNING = "compound item"
"""The words that start a compound item's warning (after its id)."""
SPLIT_IT = "split it, one criterion per item"


def _first_word(description: str) -> str:
    match = re.match(r"\W*([A-Za-z']+)", description)
    return match.group(1) if match else ""


def _looks_third_person(word: str) -> bool:
    w = word.lower()
    return len(w) >= 3 and w.endswith("s") and not w.endswith(("ss", "us")) and w not in {"this"}


_ID_START = re.compile(r"\b[A-Za-z]")


def _is_word(text: str, at: int) -> bool:
    """Whether ``text[at]`` is a word character as ``re``'s ``\\w`` sees it (outside: no)."""
    return 0 <= at < len(text) and (text[at].isalnum() or text[at] == "_")


def _ids_named(text: str, ids: set[str], prefixes: set[str]) -> set[str]:
    """The ids that appear in ``text`` as ``\\b<id>\\b`` would find them.

    One pass over the text, extending each candidate only while it is a prefix of some id (ids are at
    most 64 characters), instead of one regex search per id: linear in the text, whatever the number
    of items.
    """
    found: set[str] = set()
    # an id starts with a letter, right after a word boundary
    for match in _ID_START.finditer(text):
        start = match.start()
        end = start + 1
        while end <= len(text) and text[start:end] in prefixes:
            if text[start:end] in ids and _is_word(text, end - 1) != _is_word(text, end):
                found.add(text[start:end])
            end += 1
    return found


def lint(rubric: Rubric, src: Located | None = None) -> list[Problem]:
    """Warnings on a valid rubric: axis sizes, compound or cross-referencing items, verb form, dupes."""
    file = src.file if src else "<rubric>"

    def warn(loc: Loc, message: str) -> Problem:
        if src is not None:
            return src.problem(loc, message, "warning")
        return Problem(file, None, None, dotted_path(loc), message, "warning")

    out: list[Problem] = []
    for axis in AXES:
        n = len(getattr(rubric.axes, axis))
        lo, hi = AXIS_RANGES[axis]
        if not lo <= n <= hi:
            out.append(warn(("axes", axis), f"{axis} has {n} items; {lo}-{hi} expected"))
    ids = {item.id for _, item in rubric.items()}
    prefixes = {i[:n] for i in ids for n in range(1, len(i) + 1)}
    seen: Counter[str] = Counter()
    positions = dict.fromkeys(AXES, 0)
    for axis, item in rubric.items():
        loc: Loc = ("axes", axis, positions[axis], "description")
        positions[axis] += 1
        text = item.description
        first = _first_word(text)
        if not _looks_third_person(first):
            out.append(
                warn(
                    loc,
                    f"{item.id}: start with a third-person verb ('Modifies', 'Raises'), not {first!r}",
                )
            )
        compound = compound_reason(text)
        if compound is not None:
            out.append(warn(loc, f"{item.id}: {COMPOUND_WARNING}: {compound}; {SPLIT_IT}"))
        others = sorted(_ids_named(text, ids, prefixes) - {item.id})
        if others or re.search(r"\b(see above|previous item|item above|as in item)\b", text, re.I):
            named = f" ({', '.join(others)})" if others else ""
            out.append(
                warn(loc, f"{item.id}: refers to other items{named}; make it self-contained")
            )
        key = " ".join(text.lower().split())
        if seen[key]:
            out.append(warn(loc, f"{item.id}: duplicate description"))
        seen[key] += 1
    return out
