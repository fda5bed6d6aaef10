"""Where an attack goes: the function a resolved candidate changes, located on the task's base tree.

The target is found from the resolved candidates' diffs and the base files alone (never the gold patch
or hidden tests): each hunk of a non-test ``.py`` file a diff edits changes the innermost function of
the base file (parsed with ``ast``) holding its changed lines (its removed lines; for a pure addition,
the lines on both sides); the function the most diffs change is the target, the one the earliest diff
changes first on a tie. Files of the tree are read bounded: a path through a
symbolic link, a file over :data:`MAX_FILE_BYTES` or one that is not UTF-8 is not read.
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from agentic_rubrics.patch import is_test_path

MAX_FILE_BYTES = 1_000_000
"""The largest base file an attack reads or edits."""

Function = ast.FunctionDef | ast.AsyncFunctionDef


class NotBuilt(Exception):
    """An attack that cannot be built for a task; ``reason`` is its code."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def read_tree_file(root: Path, rel: str) -> str:
    """A repository file's text, bounded (:class:`NotBuilt` ``unsafe_path``, ``file_too_large``,
    ``not_text``, ``not_a_file``)."""
    parts = Path(rel).parts
    if not parts or Path(rel).is_absolute() or ".." in parts:
        raise NotBuilt("unsafe_path")
    at = root
    for part in parts:
        at = at / part
        if at.is_symlink():
            raise NotBuilt("unsafe_path")
    if not at.is_file():
        raise NotBuilt("not_a_file")
    if at.stat().st_size > MAX_FILE_BYTES:
        raise NotBuilt("file_too_large")
    try:
        return at.read_bytes().decode("utf-8")
    except UnicodeDecodeError:
        raise NotBuilt("not_text") from None


@dataclass(frozen=True)
class Target:
    """A function of a base file and where a statement can go first in its body."""

    path: str
    """The file, repository-relative."""
    text: str
    """The base file's text."""
    module: ast.Module
    function: Function
    insert_at: int
    """0-based line index: a statement inserted before this line is the body's first after the
    docstring."""
    indent: str
    """The body's indentation."""

    @property
    def lines(self) -> list[str]:
        """The base file's lines, line ends kept."""
        return self.text.splitlines(keepends=True)

    @property
    def newline(self) -> str:
        """The file's line end."""
        lines = self.lines
        return "\r\n" if lines and lines[0].endswith("\r\n") else "\n"

    @property
    def docstring(self) -> ast.Expr | None:
        """The function's docstring statement, if it has one."""
        first = self.function.body[0]
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            return first
        return None


def _hunk_lines(hunk: object) -> list[int]:
    """The base lines one hunk changes: its removed lines, or the two lines around a pure addition
    (it lies in a function only when both do)."""
    lines = list(hunk)  # type: ignore[call-overload]
    removed = [ln.source_line_no for ln in lines if ln.is_removed]
    if removed:
        return removed
    before = int(getattr(hunk, "source_start", 1)) - 1
    for ln in lines:
        if ln.is_added:
            return [before, before + 1]
        if ln.is_context and ln.source_line_no is not None:
            before = ln.source_line_no
    return []


def _start(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])
    return min([node.lineno, *(d.lineno for d in decorators)])


def _innermost(module: ast.Module, line: int) -> Function | None:
    found: Function | None = None
    for node in ast.walk(module):
        if not isinstance(node, Function) or not _start(node) <= line <= (node.end_lineno or 0):
            continue
        if found is None or node.lineno > found.lineno:
            found = node
    return found


def _starts_line(lines: list[str], node: ast.stmt) -> str | None:
    """The indentation of the line ``node`` starts on, when nothing else comes before it there."""
    n = _start(node)
    if n - 1 >= len(lines):
        return None
    line = lines[n - 1]
    indent = line[: len(line) - len(line.lstrip(" \t"))]
    if n == node.lineno and len(indent.encode("utf-8")) != node.col_offset:
        return None
    if n != node.lineno and not line.lstrip().startswith("@"):
        return None
    return indent


def locate(path: str, text: str, line: int) -> Target:
    """The innermost function of ``text`` holding base line ``line``, and where its body starts."""
    try:
        module = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        raise NotBuilt("base_does_not_parse") from None
    function = _innermost(module, line)
    if function is None:
        raise NotBuilt("no_function_changed")
    lines = text.splitlines(keepends=True)
    body = function.body
    first = body[0]
    has_doc = (
        isinstance(first, ast.Expr)
        and isinstance(first.value, ast.Constant)
        and isinstance(first.value.value, str)
    )
    anchor = body[1] if has_doc and len(body) > 1 else None if has_doc else first
    indent = _starts_line(lines, anchor if anchor is not None else first)
    if indent is None or first.lineno <= function.lineno or not indent:
        raise NotBuilt("unusual_layout")
    insert_at = _start(anchor) - 1 if anchor is not None else first.end_lineno or first.lineno
    return Target(path, text, module, function, insert_at, indent)


def _in_function(path: str, text: str, lines: list[int], pure_addition: bool) -> Target | None:
    """The target for one hunk's changed lines: the function holding them (both lines around a pure
    addition)."""
    for line in lines:
        try:
            found = locate(path, text, line)
        except NotBuilt as exc:
            if exc.reason != "no_function_changed" or pure_addition:
                raise
            continue
        if pure_addition:
            other = locate(path, text, lines[-1])
            if other.function.lineno != found.function.lineno:
                return None
        return found
    return None


def _patch_targets(patch: str, tree: Path, texts: dict[str, str]) -> list[Target] | str:
    """The functions one diff changes, in order (or the last reason it changes none)."""
    reason = "no_python_function_changed"
    try:
        files = list(PatchSet(patch.replace("\r\n", "\n")))
    except (UnidiffParseError, ValueError, IndexError, AssertionError):
        return "resolved_patch_unreadable"
    found: dict[tuple[str, int], Target] = {}
    for pf in files:
        path = pf.source_file.removeprefix("a/")
        if pf.is_added_file or not path.endswith(".py") or is_test_path(path):
            continue
        try:
            if path not in texts:
                texts[path] = read_tree_file(tree, path)
        except NotBuilt as exc:
            reason = exc.reason
            continue
        for hunk in pf:
            lines = _hunk_lines(hunk)
            pure = not any(ln.is_removed for ln in hunk)
            try:
                target = _in_function(path, texts[path], lines, pure) if lines else None
            except NotBuilt as exc:
                reason = exc.reason
                continue
            if target is not None:
                found.setdefault((path, target.function.lineno), target)
    return list(found.values()) or reason


def find_target(patches: list[str], tree: Path) -> Target:
    """The function most of the resolved candidates' diffs (``patches``) change (each diff counted
    once per function; on a tie, the one the earliest diff changes first). :class:`NotBuilt` with
    the last reason when none changes a function."""
    found: list[Target] = []
    reason = "no_python_function_changed"
    texts: dict[str, str] = {}
    for patch in patches:
        got = _patch_targets(patch, tree, texts)
        if isinstance(got, str):
            reason = got
        else:
            found.extend(got)
    if not found:
        raise NotBuilt(reason)
    votes = Counter((t.path, t.function.lineno) for t in found)
    return max(found, key=lambda t: votes[(t.path, t.function.lineno)])


def changed_module(patches: list[str]) -> str | None:
    """The first non-test Python file a resolved candidate edits (what test deletion aims near)."""
    for patch in patches:
        try:
            files = list(PatchSet(patch.replace("\r\n", "\n")))
        except (UnidiffParseError, ValueError, IndexError, AssertionError):
            continue
        for pf in files:
            path = pf.source_file.removeprefix("a/")
            if not pf.is_added_file and path.endswith(".py") and not is_test_path(path):
                return path
    return None


WORDS_MAX = 160
"""The most characters of the issue an attack quotes."""


def issue_words(problem_statement: str) -> str:
    """The issue's first line (its title), or its first sentence when that line is long: what a
    keyword-stuffing patch quotes. Markdown heading marks and control characters are left out."""
    for raw in problem_statement.splitlines():
        line = "".join(ch for ch in raw.strip().lstrip("#").strip() if ch.isprintable())
        if line:
            if len(line) > WORDS_MAX and ". " in line[:WORDS_MAX]:
                line = line[: line.index(". ", 0, WORDS_MAX) + 1]
            return line[:WORDS_MAX]
    return "the reported problem"


@dataclass
class AttackInput:
    """What a task's attacks are built from: its issue, its base tree (``None`` with the reason) and
    its resolved candidates' diffs (only to find where to aim), the target found once."""

    problem_statement: str
    tree: Path | None
    tree_reason: str
    resolved: list[str]
    _target: Target | NotBuilt | None = None

    def need_tree(self) -> Path:
        """The base tree (:class:`NotBuilt` ``no_tree:<why>`` without one)."""
        if self.tree is None:
            raise NotBuilt(f"no_tree:{self.tree_reason}")
        return self.tree

    def target(self) -> Target:
        """The function a resolved candidate changes (found once; :class:`NotBuilt` when none)."""
        if self._target is None:
            try:
                self._target = find_target(self.resolved, self.need_tree())
            except NotBuilt as exc:
                self._target = exc
        if isinstance(self._target, NotBuilt):
            raise NotBuilt(self._target.reason)
        return self._target

    @property
    def words(self) -> str:
        """:func:`issue_words` of the issue."""
        return issue_words(self.problem_statement)
