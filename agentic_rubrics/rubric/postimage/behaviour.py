"""Whether a change can alter what the program does: the code as Python reads it, without what has no
effect, compared before and after.

A patch that only adds ``pass``, a docstring, a string statement of the issue's words, a comment, a
branch that cannot run, an assignment nobody reads, or that only re-lays out its lines, changes nothing
a test or a user can observe. Rather than a list of such patterns, each image is brought to a normal
form by one principle — **a statement that cannot have an effect is removed, and names that only the
function itself can see are numbered** — and the two normal forms are compared:

- parsing already drops comments, blank lines, line breaks and parentheses (the layout);
- an expression statement whose value is pure (constants, names, containers, comparisons and operators
  over pure values, lambdas, f-strings of constants) is removed: docstrings, string statements, ``...``;
- ``pass`` is removed (an emptied body becomes one canonical ``pass``);
- a branch whose test is a constant (``if False:``, ``if 0:``, ``if TYPE_CHECKING:`` — false at run
  time) keeps only the side that runs; so does a conditional expression; ``assert`` of a true constant
  goes; a ``try`` with an empty body keeps its ``else`` and ``finally``; a loop over an empty literal
  keeps its ``else``;
- statements after ``return``, ``raise``, ``break`` or ``continue`` in the same block are unreachable;
- an ``if`` whose test is pure and whose branches are empty is removed;
- in a function, an assignment of a pure value to a local name that is never read, and the definition
  of a nested function that is never used, are dead stores;
- in a function, local names (not parameters, not ``global``/``nonlocal``, not seen by a nested scope,
  and only where the function does not call ``locals``/``vars``/``eval``/``exec``/``dir``) are renamed by
  order of first appearance: a renamed local is the same code.

Each definition (function or class) and the module's own statements get a fingerprint of their normal
form with nested definitions stood in for by their names; a file changes behaviour when any fingerprint
differs (or a definition appears or goes). Module-level names are never dead stores: they can be
imported. Attribute access and calls are never pure (a property, a method can do anything). What cannot
be parsed is not decided (``None``), never guessed.
"""

from __future__ import annotations

import ast
import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from agentic_rubrics.rubric.postimage.delta import normal_delta
from agentic_rubrics.rubric.postimage.purity import constant_truth, empty_literal, pure

MODULE = "<module>"
_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_FUNCS = (ast.FunctionDef, ast.AsyncFunctionDef)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)
_INTROSPECTION = frozenset({"locals", "vars", "eval", "exec", "dir"})


_ENDS = (ast.Return, ast.Raise, ast.Break, ast.Continue)


def _block(stmts: Iterable[ast.stmt]) -> list[ast.stmt]:
    """A statement list with every statement normalised and what cannot run or has no effect gone."""
    out: list[ast.stmt] = []
    for stmt in stmts:
        out += _statement(stmt)
        if out and isinstance(out[-1], _ENDS):
            break  # the rest of the block is unreachable
    return out


def _body(stmts: Iterable[ast.stmt]) -> list[ast.stmt]:
    """A block that must not be empty: an emptied one holds one canonical ``pass``."""
    return _block(stmts) or [ast.Pass()]


def _empty(stmts: list[ast.stmt]) -> bool:
    return all(isinstance(s, ast.Pass) for s in stmts)


def _statement(stmt: ast.stmt) -> list[ast.stmt]:
    """One statement's normal form: a list (a branch may become its body, a no-op nothing)."""
    if isinstance(stmt, ast.Pass) or (isinstance(stmt, ast.Expr) and pure(stmt.value)):
        return []
    if isinstance(stmt, ast.Assert) and constant_truth(stmt.test) is True:
        return []
    if isinstance(stmt, ast.If):
        truth = constant_truth(stmt.test)
        if truth is not None:
            return _block(stmt.body if truth else stmt.orelse)
        stmt.body, stmt.orelse = _body(stmt.body), _block(stmt.orelse)
        if _empty(stmt.body) and not stmt.orelse and pure(stmt.test):
            return []
        return [stmt]
    if isinstance(stmt, ast.While) and constant_truth(stmt.test) is False:
        return _block(stmt.orelse)
    if isinstance(stmt, ast.For | ast.AsyncFor) and empty_literal(stmt.iter):
        return _block(stmt.orelse)
    if isinstance(stmt, ast.Try | ast.TryStar):
        body = _block(stmt.body)
        if not body:  # nothing can raise: the handlers never run
            return _block(stmt.orelse) + _block(stmt.finalbody)
        stmt.body, stmt.orelse, stmt.finalbody = body, _block(stmt.orelse), _block(stmt.finalbody)
        for handler in stmt.handlers:
            handler.body = _body(handler.body)
        return [stmt]
    for attr in ("body", "orelse", "finalbody"):
        inner = getattr(stmt, attr, None)
        if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
            setattr(stmt, attr, _body(inner) if attr == "body" else _block(inner))
    for case in getattr(stmt, "cases", []):
        case.body = _body(case.body)
    for handler in getattr(stmt, "handlers", []):
        handler.body = _body(handler.body)
    return [stmt]


class _Expressions(ast.NodeTransformer):
    """Conditional expressions with a constant test become the side that is evaluated."""

    def visit_IfExp(self, node: ast.IfExp) -> ast.AST:
        self.generic_visit(node)
        truth = constant_truth(node.test)
        if truth is None:
            return node
        return node.body if truth else node.orelse


# --------------------------------------------------------------------------- functions


def _own_nodes(func: ast.AST) -> Iterable[ast.AST]:
    """The nodes of a function's own scope: its body, not nested functions, classes or lambdas
    (comprehensions are walked: renaming their names consistently keeps their meaning)."""
    stack = list(ast.iter_child_nodes(func))
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _SCOPES):
            stack.extend(ast.iter_child_nodes(node))


def _nested_names(own: list[ast.AST]) -> set[str]:
    """Every name mentioned inside the scopes nested in a function (they may read its locals)."""
    names: set[str] = set()
    for node in own:
        if isinstance(node, _SCOPES):
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
            names |= {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
    return names


def _params(func: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    a = func.args
    every = [*a.posonlyargs, *a.args, *a.kwonlyargs, a.vararg, a.kwarg]
    return {p.arg for p in every if p is not None}


def _locals(func: ast.FunctionDef | ast.AsyncFunctionDef, own: list[ast.AST]) -> set[str] | None:
    """Names only ``func`` can see (``own``: its own nodes), or ``None`` when it introspects its
    own frame."""
    mentioned = {n.id for n in own if isinstance(n, ast.Name)}
    if mentioned & _INTROSPECTION:
        return None
    declared = {n for s in own if isinstance(s, ast.Global | ast.Nonlocal) for n in s.names}
    bound = {n.id for n in own if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    for node in own:
        if isinstance(node, ast.alias):
            bound.add((node.asname or node.name).split(".")[0])
        elif isinstance(node, (ast.ExceptHandler, *_DEFS)) and node.name is not None:
            bound.add(node.name)
    return bound - declared - _params(func) - _nested_names(own)


def _dead_stores(func: ast.FunctionDef | ast.AsyncFunctionDef, local: set[str]) -> None:
    """Remove stores of pure values to locals never read, and nested functions never used."""
    read = {  # a ``del`` reads the name too: removing the store would make it raise
        n.id for n in ast.walk(func) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)
    }
    dead = local - read

    def keep(stmt: ast.stmt) -> bool:
        if isinstance(stmt, ast.Assign):
            names = [t.id for t in stmt.targets if isinstance(t, ast.Name)]
            return len(names) != len(stmt.targets) or not set(names) <= dead or not pure(stmt.value)
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            return stmt.target.id not in dead or not pure(stmt.value)
        if isinstance(stmt, _FUNCS) and stmt.name in dead:
            return bool(stmt.decorator_list) or not all(
                pure(d) for d in [*stmt.args.defaults, *stmt.args.kw_defaults]
            )
        return True

    def prune(body: list[ast.stmt]) -> list[ast.stmt]:
        kept = [s for s in body if keep(s)]
        for s in kept:
            if not isinstance(s, _SCOPES):
                for attr in ("body", "orelse", "finalbody"):
                    inner = getattr(s, attr, None)
                    if isinstance(inner, list) and inner and isinstance(inner[0], ast.stmt):
                        setattr(s, attr, prune(inner) or [ast.Pass()])
                for h in [*getattr(s, "handlers", []), *getattr(s, "cases", [])]:
                    h.body = prune(h.body) or [ast.Pass()]
        return kept

    func.body = prune(func.body) or [ast.Pass()]


def _rename(own: list[ast.AST], local: set[str]) -> None:
    """Number a function's own locals (``own``: its own nodes) by first appearance (``$0``, ``$1``
    …: no source name clashes)."""
    order: dict[str, str] = {}
    for node in sorted(
        (n for n in own if isinstance(n, ast.Name) and n.id in local),
        key=lambda n: (n.lineno, n.col_offset),
    ):
        order.setdefault(node.id, f"${len(order)}")
    for each in own:
        if isinstance(each, ast.Name) and each.id in order:
            each.id = order[each.id]
        elif isinstance(each, ast.ExceptHandler) and each.name in order:
            each.name = order[each.name]
        elif isinstance(each, ast.alias) and each.asname in order:
            each.asname = order[each.asname]


def _functions(tree: ast.AST) -> None:
    for node in ast.walk(tree):
        if isinstance(node, _FUNCS):
            own = list(_own_nodes(node))
            local = _locals(node, own)
            if local is None:
                continue
            _dead_stores(node, local)
            _rename(list(_own_nodes(node)), local)  # what the removed stores held is not numbered


# --------------------------------------------------------------------------- fingerprints


def _parse(source: str) -> ast.Module | None:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def normal_form(source: str | ast.Module) -> ast.Module | None:
    """The module's normal form (see the module's docstring; a parsed tree is changed in place), or
    ``None`` when it does not parse."""
    tree = _parse(source) if isinstance(source, str) else source
    if tree is None:
        return None
    try:
        tree = _Expressions().visit(tree)
        tree.body = _block(tree.body)
        _functions(tree)
        # a second pass: dead stores removed may leave branches empty
        tree.body = _block(tree.body)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    assert isinstance(tree, ast.Module)
    return tree


def _serial(node: object, prefix: str, out: dict[str, str], root: bool = False) -> str:
    """``node`` written out field by field (no positions); a definition nested in it stands in as
    its name and decorators (evaluated where it is defined), and gets its own entry in ``out``
    under its qualified name — a name defined twice: the later definition is the one that counts."""
    if isinstance(node, list):
        return "[" + ",".join(_serial(n, prefix, out) for n in node) + "]"
    if not isinstance(node, ast.AST):
        return repr(node)
    if isinstance(node, _DEFS) and not root:
        qual = prefix + node.name
        out[qual] = _hash(_serial(node, qual + ".", out, root=True))
        return f"<def {node.name} {_serial(node.decorator_list, prefix, out)}>"
    fields = ",".join(_serial(getattr(node, f, None), prefix, out) for f in node._fields)
    return f"{type(node).__name__}({fields})"


def fingerprints(source: str | ast.Module) -> dict[str, str] | None:
    """``qualname`` (``<module>`` for the module's own statements) -> a hash of its normal form
    (nested definitions apart); ``None`` when the source does not parse."""
    tree = normal_form(source)
    if tree is None:
        return None
    out: dict[str, str] = {}
    try:
        out[MODULE] = _hash(_serial(tree, "", out, root=True))
    except RecursionError:
        return None
    return out


def _hash(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).hexdigest()


@dataclass(frozen=True)
class FileBehaviour:
    """What a change does to one Python file's behaviour."""

    changed: bool | None
    """Whether any definition or the module's own code behaves differently; ``None``: an image does
    not parse (not decided)."""
    symbols: tuple[str, ...] = ()
    """The qualified names whose normal form differs (added and removed ones included)."""
    delta: tuple[str, ...] | None = None
    """The hashed normal-form lines the change removes and adds (:mod:`.delta`); ``None``: not
    decided, or not written out."""


def compare(pre: str | None, post: str | None) -> FileBehaviour:
    """Compare a file's images (``None``: the file does not exist on that side).

    A definition whose source text is the same on both sides has the same normal form (it depends on
    nothing outside it): each such pair stands in as one marker on both sides, in its place, and only
    the rest is normalised — a patch's few changed functions, not the whole of a large module."""
    trees = _parse(pre or ""), _parse(post or "")
    if trees[0] is None or trees[1] is None:
        return FileBehaviour(None)
    _share(trees[0].body, trees[1].body, (pre or "").splitlines(), (post or "").splitlines())
    before, after = fingerprints(trees[0]), fingerprints(trees[1])
    if before is None or after is None:
        return FileBehaviour(None)
    differ = tuple(sorted(q for q in before.keys() | after.keys() if before.get(q) != after.get(q)))
    # the trees are now the normal forms (normalised in place); a side without the file has none
    delta = normal_delta(
        trees[0] if pre is not None else None, trees[1] if post is not None else None
    )
    return FileBehaviour(bool(differ), differ, () if not differ else delta)


def _segment(stmt: ast.stmt, lines: list[str]) -> str:
    """A definition's source text, decorators included."""
    start = min([stmt.lineno] + [d.lineno for d in getattr(stmt, "decorator_list", [])])
    return "\n".join(lines[start - 1 : stmt.end_lineno or stmt.lineno])


def _share(
    pre: list[ast.stmt], post: list[ast.stmt], pre_lines: list[str], post_lines: list[str]
) -> None:
    """Replace, in two statement lists, each pair of definitions with the same source text by one
    marker (a call no normal form removes); a class that differs is looked into the same way."""
    texts = [
        {id(s): _segment(s, lines) for s in body if isinstance(s, _DEFS)}
        for body, lines in ((pre, pre_lines), (post, post_lines))
    ]
    left = list(texts[1].values())
    shared: list[str] = []
    for text in texts[0].values():
        if text in left:
            left.remove(text)
            shared.append(text)
    for body, seen in ((pre, texts[0]), (post, texts[1])):
        pool = list(shared)
        for n, stmt in enumerate(body):
            found = seen.get(id(stmt))
            if found is not None and found in pool:
                pool.remove(found)
                marker = ast.Call(ast.Name(f"<same {_hash(found)}>"), [], [])
                body[n] = ast.Expr(marker)
    pre_classes = [s for s in pre if isinstance(s, ast.ClassDef)]
    post_classes = {s.name: s for s in post if isinstance(s, ast.ClassDef)}
    for cls in pre_classes:
        other = post_classes.pop(cls.name, None)
        if other is not None:
            _share(cls.body, other.body, pre_lines, post_lines)
