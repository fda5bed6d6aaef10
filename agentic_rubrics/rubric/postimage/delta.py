"""What a change does, written as the lines of its normal form that it removes and adds.

:mod:`.behaviour` decides *whether* two images of a file behave alike (their normal forms' fingerprints).
Two candidates that fix an issue the same way in different words — another name for a local, another
layout, a docstring, a ``pass`` more — have the same normal forms, so the same change between them. This
module writes that change down so that candidates can be compared with each other: both normal forms
(definitions whose text the patch leaves alone already stand in as one marker on both sides) are written
out by ``ast.unparse``, one canonical line per statement, and the lines the change removes and adds are
found by a longest-common-subsequence diff (rapidfuzz's Indel opcodes). Each such line becomes a short
hash of its sign (``-``/``+``), the definition it sits in (``Class.method``, by the unparsed ``def`` and
``class`` lines above it) and its text with its indentation (nesting is behaviour). Hashes only: records
hold no file contents.

Cost: one ``ast.unparse`` of each normal form (changed definitions and the module's own statements; the
untouched definitions are markers) and one diff of their lines, on top of the normal forms the behaviour
comparison already built.
"""

from __future__ import annotations

import ast
import hashlib
import re

MAX_DELTA_LINES = 4_000
"""Changed normal-form lines kept per file (the first ones): a larger change is capped."""
_DEF = re.compile(r"^(\s*)(?:async\s+def|def|class)\s+([A-Za-z_$][\w$]*)")


def _contexts(lines: list[str]) -> list[str]:
    """For each unparsed line, the qualified name of the definition it sits in (``""``: the module)."""
    stack: list[tuple[int, str]] = []
    out: list[str] = []
    for line in lines:
        indent = len(line) - len(line.lstrip())
        while stack and stack[-1][0] >= indent and line.strip():
            stack.pop()
        out.append(".".join(name for _, name in stack))
        found = _DEF.match(line)
        if found:
            stack.append((len(found.group(1)), found.group(2)))
    return out


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=6).hexdigest()


def normal_delta(pre: ast.Module | None, post: ast.Module | None) -> tuple[str, ...] | None:
    """The hashed normal-form lines a change removes (``-…``) and adds (``+…``), in order; ``()``: no
    difference; ``None``: an image could not be written out. ``pre``/``post``: normal forms
    (:func:`.behaviour.normal_form`; ``None`` for a side where the file does not exist)."""
    try:
        a = ast.unparse(pre).splitlines() if pre is not None else []
        b = ast.unparse(post).splitlines() if post is not None else []
    except (RecursionError, ValueError, AttributeError, TypeError):
        return None
    from rapidfuzz.distance import Indel

    where = _contexts(a), _contexts(b)
    out: list[str] = []
    for op in Indel.opcodes(a, b):
        if op.tag == "equal":
            continue
        out += [_hash(f"-{where[0][i]}\x00{a[i]}") for i in range(op.src_start, op.src_end)]
        out += [_hash(f"+{where[1][j]}\x00{b[j]}") for j in range(op.dest_start, op.dest_end)]
        if len(out) >= MAX_DELTA_LINES:
            break
    return tuple(out[:MAX_DELTA_LINES])
