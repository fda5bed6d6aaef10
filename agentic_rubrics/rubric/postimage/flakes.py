"""Parse a pre- and a post-image and keep the pyflakes messages the patch introduces.

Messages are matched as a multiset of (message class, name), never by line: lines shift under a patch,
and an unused import that was there before must not count because the patch moved it. A pre-image
that does not parse cannot be compared: the file gets the reason ``pre_syntax_error`` and no message.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
import warnings
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

from pyflakes import checker, messages

from agentic_rubrics.rubric.postimage.model import Category, IntroducedMessage
from agentic_rubrics.rubric.postimage.symbols import Image

# a name or an import's name as pyflakes prints it (``os.path``, ``.sibling``, ``numpy as np``)
_IDENT = re.compile(r"^\.*[A-Za-z_][\w.]*(?: as [A-Za-z_]\w*)?$", re.ASCII)
_CATEGORIES: dict[type[messages.Message], Category] = {
    messages.UndefinedName: "undefined_name",
    messages.UndefinedLocal: "undefined_name",
    messages.UndefinedExport: "undefined_name",
    messages.RedefinedWhileUnused: "redefinition",
    messages.ImportShadowedByLoopVar: "redefinition",
    messages.UnusedImport: "unused_import",
}


def decode_source(data: bytes) -> str | None:
    """The text of a Python file in its declared encoding (PEP 263, UTF-8 by default); ``None`` if not."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        return data.decode(encoding)
    except (SyntaxError, UnicodeDecodeError, LookupError):
        return None


@dataclass(frozen=True)
class Parsed:
    """A checked image: its definitions (``None`` on a syntax error) and pyflakes messages as keys."""

    image: Image | None
    syntax_error_line: int | None
    messages: tuple[tuple[str, str | None, int], ...]  # (class name, name, line)


def _name(message: messages.Message) -> str | None:
    args: object = message.message_args  # a tuple, except UndefinedLocal's builtin case: a str
    first = (args[0] if args else None) if isinstance(args, tuple) else args
    return first if isinstance(first, str) and _IDENT.match(first) else None


def parse_and_check(text: str) -> Parsed:
    """Parse ``text`` and run pyflakes on the tree (doctests off). Exceptions are the caller's."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SyntaxWarning for invalid escapes etc.: not our concern
        try:
            tree = ast.parse(text)
        except SyntaxError as exc:
            return Parsed(None, exc.lineno or 0, ())
        flakes = checker.Checker(tree, withDoctest=False)
    keys = tuple((type(m).__name__, _name(m), int(m.lineno)) for m in flakes.messages)
    return Parsed(Image.of(tree), None, keys)


@lru_cache(maxsize=64)
def check_source(data: bytes) -> Parsed | None:
    """``parse_and_check`` of a file's bytes; ``None`` if they do not decode. Cached: the K candidates
    of one task mostly change the same files, whose pre-image is then checked once."""
    text = decode_source(data)
    return None if text is None else parse_and_check(text)


def _category(kind: str) -> Category:
    cls = getattr(messages, kind, None)
    return _CATEGORIES.get(cls, "other") if isinstance(cls, type) else "other"


def introduced_messages(
    pre: Parsed | None, post: Parsed, changed_post_lines: set[int]
) -> tuple[IntroducedMessage, ...]:
    """Messages of ``post`` beyond those of ``pre`` (``None``: a new file) by (class, name) multiset.

    When a key occurs more often after than before, the surplus is attributed to the occurrences on
    lines the patch changed first, then to the last ones.
    """
    if post.image is None:
        if pre is not None and pre.image is None:
            return ()
        return (
            IntroducedMessage(
                kind="SyntaxError", category="syntax_error", name=None, line=post.syntax_error_line
            ),
        )
    before = Counter((k, n) for k, n, _ in pre.messages) if pre is not None else Counter()
    by_key: dict[tuple[str, str | None], list[int]] = {}
    for kind, name, line in post.messages:
        by_key.setdefault((kind, name), []).append(line)
    out: list[IntroducedMessage] = []
    for (kind, name), lines in by_key.items():
        surplus = len(lines) - before[(kind, name)]
        if surplus <= 0:
            continue
        ranked = sorted(lines, key=lambda ln: (ln not in changed_post_lines, -ln))
        out += [
            IntroducedMessage(kind=kind, category=_category(kind), name=name, line=ln)
            for ln in sorted(ranked[:surplus])
        ]
    return tuple(sorted(out, key=lambda m: (m.line or 0, m.kind, m.name or "")))
