"""Whether a candidate changes what the program does: from its post-image on the task's tree, or, with
no tree, from its diff alone.

Tests and documentation are not the program: a candidate that changes only them, or whose changes to
the program's Python files leave every normal form as it was (:mod:`.postimage.behaviour`: ``pass``,
docstrings, string statements, comments, re-layout, dead branches and stores …), changes no behaviour.
The answer is ``True`` (some program file behaves differently), ``False`` (proven: nothing does) or
``None`` (not decided: a file that does not parse or was not read, a data or configuration file whose
readers are unknown, a patch that did not apply). Only a proven ``False`` is ever acted on.

Without a tree, the diff is read hunk by hunk as ``git apply`` reads it: a Python file each of whose
hunks holds the same tokens on its old side as on its new side (context lines included, in order, each
line's indentation with it) once comments, blank lines and bare ``pass`` lines are dropped is
unchanged; anything else in a program file is a change: a statement moved before another, or a
string token (a docstring or an argument: the diff alone cannot tell, so it counts).
"""

from __future__ import annotations

import io
import tokenize
from typing import TYPE_CHECKING

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.patch import Hunk, is_doc_path, is_test_path, parse_patch

if TYPE_CHECKING:
    from agentic_rubrics.rubric.postimage import PostimageResult

_SKIP = frozenset(
    {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENDMARKER,
    }
)


def program_file(path: str) -> bool:
    """A file of the program: not a test and not documentation."""
    return not is_test_path(path) and not is_doc_path(path)


def tree_behaviour(result: PostimageResult) -> bool | None:
    """From the post-image analysis: ``None`` when the patch did not apply or a program file's
    behaviour is not decided."""
    if not result.applied:
        return None
    files = [f for f in result.files if any(program_file(p) for p in (f.path, f.old_path) if p)]
    if any(f.behaviour == "changed" for f in files):
        return True
    if any(not f.python or f.behaviour is None for f in files):
        return None
    return False


def _tokens(lines: list[str]) -> list[str] | None:
    """The tokens of changed lines, line by line, each line's indentation first (a line is read
    alone: the diff has no context for a line inside a bracket or a string, so one that does not
    tokenize is kept whole, and a continuation line re-indented counts as a change)."""
    out: list[str] = []
    for line in lines:
        try:
            found = [
                t.string
                for t in tokenize.generate_tokens(io.StringIO(line + "\n").readline)
                if t.type not in _SKIP
            ]
        except (tokenize.TokenError, IndentationError, SyntaxError):
            found = [line.strip()]
        if found and found != ["pass"]:
            # indentation is syntax: a line moved out of its block is another program
            out += [f"<indent {len(line) - len(line.lstrip())}>", *found]
    return out


def diff_behaviour(patch: str) -> bool | None:
    """From the diff alone (no tree): ``None`` when it is not a diff or a program file that is not
    Python changes (its readers are unknown)."""
    try:
        parsed = parse_patch(patch)
    except PatchParseError:
        return None
    undecided = False
    for f in parsed.files:
        paths = [p for p in f.paths if p]
        if not any(program_file(p) for p in paths):
            continue
        if not all(p.endswith(".py") for p in paths):
            undecided = True
            continue
        if f.is_rename or f.is_new or f.is_deleted:
            if f.is_rename or _tokens(list(f.added) + list(f.removed)):
                return True
            continue
        if any(_tokens(_side(h, "-")) != _tokens(_side(h, "+")) for h in f.hunks):
            return True
    return None if undecided else False


def _side(hunk: Hunk, kind: str) -> list[str]:
    """One side of a hunk in its order, context included: the same lines in another order (a
    statement moved before another) are another program, which added and removed lines alone hide."""
    return [ln.text for ln in hunk.lines if ln.kind in (" ", kind)]
