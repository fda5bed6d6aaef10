"""Which definitions a patch changes, adds and removes, from the pre- and post-image trees (``ast``).

Changed lines come from a line diff of the two images (``difflib``), i.e. from what the patch really did
once applied (with offsets and fuzz), not from the hunk headers. Each changed line belongs to the
innermost function or class whose span (decorators included) holds it, else to ``<module>``.
"""

from __future__ import annotations

import ast
import difflib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentic_rubrics.rubric.postimage.model import ChangedSymbol

SymbolKind = Literal["function", "class", "module"]
Change = Literal["modified", "added", "removed"]

MODULE = "<module>"
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Definition:
    """A function or class: dotted qualified name, kind, span, and whether it is reachable by name
    from outside (module level, or in classes all the way up)."""

    qualname: str
    kind: Literal["function", "class"]
    start: int
    end: int
    public: bool
    in_class: bool


def _bodies(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists directly inside a compound statement (definitions only live there)."""
    out = [getattr(stmt, attr) for attr in ("body", "orelse", "finalbody") if hasattr(stmt, attr)]
    out += [h.body for h in getattr(stmt, "handlers", [])]
    out += [c.body for c in getattr(stmt, "cases", [])]
    return [b for b in out if isinstance(b, list)]


def definitions(tree: ast.Module) -> tuple[Definition, ...]:
    """Every function and class in ``tree``, outer before inner (statements only: fast)."""
    out: list[Definition] = []

    def visit(body: list[ast.stmt], prefix: str, public: bool, in_class: bool) -> None:
        for stmt in body:
            if isinstance(stmt, _DEFS):
                start = min([stmt.lineno] + [d.lineno for d in stmt.decorator_list])
                qual = f"{prefix}{stmt.name}"
                is_class = isinstance(stmt, ast.ClassDef)
                kind: Literal["function", "class"] = "class" if is_class else "function"
                end = stmt.end_lineno or stmt.lineno
                out.append(Definition(qual, kind, start, end, public, in_class))
                visit(stmt.body, qual + ".", public and is_class, is_class)
            else:
                for inner in _bodies(stmt):
                    visit(inner, prefix, public, in_class)

    visit(tree.body, "", True, False)
    return tuple(out)


@dataclass(frozen=True)
class Image:
    """What later steps need of a parsed image (the tree itself is not kept)."""

    defs: tuple[Definition, ...]
    variables: frozenset[str]
    imports: frozenset[str]

    @classmethod
    def of(cls, tree: ast.Module) -> Image:
        return cls(
            definitions(tree), frozenset(module_variables(tree)), frozenset(module_imports(tree))
        )


def _targets(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Tuple | ast.List):
        return [n for elt in node.elts for n in _targets(elt)]
    if isinstance(node, ast.Starred):
        return _targets(node.value)
    return []


def _module_statements(tree: ast.Module) -> list[ast.stmt]:
    """Module-level statements, in ``if``/``try``/``with``/loop blocks too, not in functions or classes."""
    out: list[ast.stmt] = []

    def visit(body: list[ast.stmt]) -> None:
        for stmt in body:
            out.append(stmt)
            if not isinstance(stmt, _DEFS):
                for inner in _bodies(stmt):
                    visit(inner)

    visit(tree.body)
    return out


def module_variables(tree: ast.Module) -> set[str]:
    """Names assigned at module level."""
    names: set[str] = set()
    for stmt in _module_statements(tree):
        if isinstance(stmt, ast.Assign):
            names.update(n for t in stmt.targets for n in _targets(t))
        elif isinstance(stmt, ast.AnnAssign | ast.AugAssign):
            names.update(_targets(stmt.target))
    return names


def module_imports(tree: ast.Module) -> set[str]:
    """Names bound by imports at module level (a definition moved away and re-imported stays bound)."""
    names: set[str] = set()
    for stmt in _module_statements(tree):
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in stmt.names if a.name != "*")
    return names


def changed_lines(pre: list[str], post: list[str]) -> tuple[set[int], set[int]]:
    """1-based lines of ``pre`` the patch removed and lines of ``post`` it added."""
    # patches are local: strip the common head and tail, then diff the middle (quadratic without
    # autojunk, so autojunk is kept for a large middle, where popular lines stop being anchors)
    head = 0
    while head < min(len(pre), len(post)) and pre[head] == post[head]:
        head += 1
    tail = 0
    while tail < min(len(pre), len(post)) - head and pre[-1 - tail] == post[-1 - tail]:
        tail += 1
    a, b = pre[head : len(pre) - tail], post[head : len(post) - tail]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=len(a) + len(b) > 4000)
    removed: set[int] = set()
    added: set[int] = set()
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            removed.update(range(head + i1 + 1, head + i2 + 1))
            added.update(range(head + j1 + 1, head + j2 + 1))
    return removed, added


def _innermost(defs: Sequence[Definition], line: int) -> Definition | None:
    best: Definition | None = None
    for d in defs:
        if d.start <= line <= d.end and (best is None or d.start >= best.start):
            best = d
    return best


def changed_symbols(
    pre_defs: Sequence[Definition] | None,
    post_defs: Sequence[Definition] | None,
    removed: set[int],
    added: set[int],
) -> tuple[ChangedSymbol, ...]:
    """The symbols that own the removed (pre-image) and added (post-image) lines, in source order.

    ``None`` for a side means that image does not exist (new or deleted file).
    """
    before = {d.qualname: d for d in pre_defs or []}
    after = {d.qualname: d for d in post_defs or []}
    counts: dict[str, list[int]] = {}
    order: dict[str, tuple[int, int]] = {}
    for side, defs, lines in ((1, pre_defs or [], removed), (0, post_defs or [], added)):
        for line in sorted(lines):
            d = _innermost(defs, line)
            name = d.qualname if d else MODULE
            counts.setdefault(name, [0, 0])[side] += 1
            order.setdefault(name, (d.start if d else line, 1 - side))
    out: list[ChangedSymbol] = []
    for name in sorted(counts, key=lambda n: (order[n], n)):
        d = after.get(name) or before.get(name)
        kind: SymbolKind = "module" if name == MODULE or d is None else d.kind
        exists_before = pre_defs is not None and (kind == "module" or name in before)
        exists_after = post_defs is not None and (kind == "module" or name in after)
        change: Change = (
            "added" if not exists_before else "removed" if not exists_after else "modified"
        )
        a, r = counts[name]
        out.append(
            ChangedSymbol(qualname=name, kind=kind, change=change, lines_added=a, lines_removed=r)
        )
    return tuple(out)
