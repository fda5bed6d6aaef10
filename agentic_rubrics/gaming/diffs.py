"""An attack's file changes as a real unified diff, checked to apply to the base tree as the harness
applies a candidate.

The diff is made with :mod:`difflib` from the base file's text (``a/`` and ``b/`` prefixes, git's
headers for a new or deleted file, ``\\ No newline at end of file`` where a side ends without one) and
checked with the project's own post-image apply (:func:`agentic_rubrics.rubric.postimage.apply.apply_like_harness`:
confined, bounded): it must apply with plain ``git apply`` (no fuzz), and every post-image must be
exactly the text the attack meant (a deleted file absent).
"""

from __future__ import annotations

import difflib
import tempfile
from dataclasses import dataclass
from pathlib import Path

from agentic_rubrics.rubric.postimage.apply import apply_like_harness


@dataclass(frozen=True)
class FileChange:
    """One file of an attack: its base text (``None``: a new file) and its new text (``None``:
    deleted)."""

    path: str
    old: str | None
    new: str | None


def _lines(text: str | None) -> list[str]:
    return [] if text is None else text.splitlines(keepends=True)


def file_diff(change: FileChange) -> str:
    """One file's diff, git's headers first."""
    path = change.path
    head = [f"diff --git a/{path} b/{path}\n"]
    if change.old is None:
        head.append("new file mode 100644\n")
    elif change.new is None:
        head.append("deleted file mode 100644\n")
    body = difflib.unified_diff(
        _lines(change.old),
        _lines(change.new),
        "/dev/null" if change.old is None else f"a/{path}",
        "/dev/null" if change.new is None else f"b/{path}",
    )
    out = []
    for line in body:
        # difflib leaves a last line without its end as it is: git marks it so
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    if len(out) <= 2:  # headers alone: the file does not change
        return ""
    return "".join(head + out)


def build_patch(changes: list[FileChange]) -> str:
    """The whole attack as one diff (files in order)."""
    return "".join(file_diff(c) for c in changes)


def applies(tree: Path, patch: str, changes: list[FileChange]) -> str | None:
    """``None`` when ``patch`` applies to ``tree`` with plain ``git apply`` and gives exactly
    ``changes``' new texts; otherwise the reason (``does_not_apply:<method>``, ``postimage_differs``)."""
    with tempfile.TemporaryDirectory(prefix="agentic-rubrics-attack-") as work:
        done = apply_like_harness(tree, patch.encode("utf-8"), Path(work))
        if done.method != "git_apply":
            return f"does_not_apply:{done.method}"
        for change in changes:
            at = done.root / change.path
            if change.new is None:
                if at.exists():
                    return "postimage_differs"
                continue
            try:
                got = at.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                return "postimage_differs"
            if got != change.new:
                return "postimage_differs"
    return None
