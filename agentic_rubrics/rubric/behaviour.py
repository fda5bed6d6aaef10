"""Whether a candidate changes what the program does — from its post-image on the task's tree, or, with
no tree, from its diff alone — and whether it changes how its tests run (:class:`Guard`).

Tests and documentation are not the program: a candidate that changes only them, or whose changes to
the program's Python files leave every normal form as it was (:mod:`.postimage.behaviour`: ``pass``,
docstrings, string statements, comments, re-layout, dead branches and stores …), changes no behaviour.
The answer is ``True`` (some program file behaves differently), ``False`` (proven: nothing does) or
``None`` (not decided: a file that does not parse or was not read, a data or configuration file whose
readers are unknown, a patch that did not apply). Only a proven ``False`` is ever acted on.

Without a tree, the diff is read hunk by hunk as ``git apply`` reads it: a Python file whose removed and
added lines hold the same tokens once comments, blank lines and bare ``pass`` lines are dropped is
unchanged; anything else in a program file is a change (a string token may be a docstring or an
argument: the diff alone cannot tell, so it counts).
"""

from __future__ import annotations

import io
import tokenize
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.patch import is_doc_path, is_empty_patch, is_test_path, parse_patch
from agentic_rubrics.test_infra import infra_changes, kinds_of

if TYPE_CHECKING:
    from agentic_rubrics.rubric.checks_repo import RepoAnalyses
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
        if _tokens(list(f.removed)) != _tokens(list(f.added)):
            return True
    return None if undecided else False


@dataclass(frozen=True)
class Guard:
    """What one candidate does to the program's behaviour and to how its tests run, and what the
    behaviour rests on."""

    changed: bool | None
    """``True`` changed, ``False`` proven unchanged, ``None`` not decided."""
    basis: Literal["tree", "diff"]
    """The post-image on the task's tree, or the diff alone."""
    infra: tuple[str, ...] = ()
    """The kinds of test infrastructure it changes (:mod:`agentic_rubrics.test_infra`)."""

    @property
    def unchanged(self) -> bool:
        """Proven to change nothing (the only answer acted on)."""
        return self.changed is False

    @property
    def tampers(self) -> bool:
        """It changes how tests run: what its tests say is not its code's alone."""
        return bool(self.infra)

    def row(self) -> dict[str, Any]:
        """As a task's record keeps it (``guard`` in its baselines)."""
        word = None if self.changed is None else "changed" if self.changed else "unchanged"
        return {"behaviour": word, "basis": self.basis, "infra": list(self.infra)}


async def guard_of(patch: str, repository: RepoAnalyses | None) -> Guard:
    """A candidate's guard: its behaviour on the task's tree when there is one and it decides, else
    from the diff (an empty patch is left to its own rule: never acted on here); its test
    infrastructure from the diff, a config file's sections placed by the base tree's file."""
    root = repository.root if repository is not None else None
    infra = tuple(kinds_of(infra_changes(patch, _reader(root))))
    if is_empty_patch(patch):
        return Guard(None, "diff", infra)
    result = await repository.analysis(patch) if repository is not None else None
    if result is not None:
        found = tree_behaviour(result)
        if found is not None:
            return Guard(found, "tree", infra)
    return Guard(diff_behaviour(patch), "diff", infra)


_MAX_CONFIG_BYTES = 1 << 20
"""A base-tree config file larger than this is not read (its hunks count as pytest's)."""


def _reader(root: Path | None) -> Callable[[str], str | None] | None:
    """Reads a base-tree file by its repository path, bounded; ``None`` without a tree."""
    if root is None:
        return None

    def read(path: str) -> str | None:
        target = (root / path).resolve()
        try:
            if (
                not target.is_relative_to(root.resolve())
                or target.stat().st_size > _MAX_CONFIG_BYTES
            ):
                return None
            return target.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    return read
