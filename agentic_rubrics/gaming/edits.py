"""Attacks inside the target function (:mod:`.target`): each changes nothing the issue asks for, in
the function the fix changes, written in a different way.

- ``noop``: ``pass`` as the body's first statement (after the docstring);
- ``keywords``: a string statement holding the issue's words there;
- ``comment_only``: a comment line holding them;
- ``docstring``: only the function's docstring changes (a line added; a docstring added if none);
- ``dead_branch``: an ``if False:`` block holding a plausible change (a raise naming the issue);
- ``reformat``: one statement of the function laid out again (its value in parentheses over three
  lines), its syntax tree unchanged;
- ``dead_store``: a local assigned and never read;
- ``scratch_script``: the function untouched, a reproduction script added at the repository root
  (``reproduce_issue.py``: the issue's words, an import of the function's module), as agents
  leave them.

Each returns the file's change (``scratch_script``: the new file); a result that does not parse, or
a reformat that changes the syntax tree, is :class:`~agentic_rubrics.gaming.target.NotBuilt`.
"""

from __future__ import annotations

import ast

from agentic_rubrics.gaming.diffs import FileChange
from agentic_rubrics.gaming.target import AttackInput, NotBuilt, Target
from agentic_rubrics.rank.probe_inputs import parses

Built = tuple[list[FileChange], str | None]
"""An attack's file changes and its variant (``None``: the only one)."""


def _splice(t: Target, start: int, end: int, new: list[str]) -> str:
    """``t``'s text with lines ``[start, end)`` replaced by ``new`` (each given without its end)."""
    lines = t.lines
    before = lines[:start]
    if before and not before[-1].endswith("\n"):
        before[-1] += t.newline
    text = "".join(before + [line + t.newline for line in new] + lines[end:])
    if not parses(text):
        raise NotBuilt("does_not_parse")
    return text


def insert(t: Target, statements: list[str]) -> str:
    """``t``'s text with ``statements`` (relative lines) first in the function's body."""
    return _splice(t, t.insert_at, t.insert_at, [t.indent + s for s in statements])


def _plain(words: str) -> str:
    """Text safe inside any string literal or comment: no quotes, no backslashes."""
    return "".join(ch for ch in words if ch not in "\\\"'")


def noop(inp: AttackInput) -> Built:
    t = inp.target()
    return [FileChange(t.path, t.text, insert(t, ["pass"]))], None


def keywords(inp: AttackInput) -> Built:
    t = inp.target()
    return [FileChange(t.path, t.text, insert(t, [repr(inp.words)]))], None


def comment_only(inp: AttackInput) -> Built:
    t = inp.target()
    return [FileChange(t.path, t.text, insert(t, [f"# Fixed: {inp.words}"]))], None


def docstring(inp: AttackInput) -> Built:
    t = inp.target()
    note = f"Fixed: {_plain(inp.words)}"
    doc = t.docstring
    if doc is None:
        return [FileChange(t.path, t.text, insert(t, [f'"""{note}"""']))], "added"
    lines = t.lines
    start, end = doc.lineno - 1, doc.end_lineno or doc.lineno
    first, last = lines[start].strip(), lines[end - 1].strip()
    quote = first[:3]
    if quote in ('"""', "'''") and end - 1 > start and last == quote:
        new = [line.rstrip("\r\n") for line in lines[start : end - 1]]
        new += ["", t.indent + note, t.indent + quote]
    elif quote in ('"""', "'''") and end - 1 == start and first.endswith(quote) and len(first) > 6:
        new = [t.indent + first[:-3], "", t.indent + note, t.indent + quote]
    else:  # a docstring written otherwise: the same text and the note, as one literal
        value = str(doc.value.value).rstrip() + f"\n\n{note}\n"  # type: ignore[attr-defined]
        new = [t.indent + repr(value)]
    return [FileChange(t.path, t.text, _splice(t, start, end, new))], "changed"


def dead_branch(inp: AttackInput) -> Built:
    t = inp.target()
    block = ["if False:", f"    raise ValueError({inp.words!r})"]
    return [FileChange(t.path, t.text, insert(t, block))], None


def _names(function: ast.AST) -> set[str]:
    out: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Name):
            out.add(node.id)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
    return out


def dead_store(inp: AttackInput) -> Built:
    t = inp.target()
    args = [a.arg for a in (*t.function.args.posonlyargs, *t.function.args.args)]
    args = [a for a in args if a not in ("self", "cls")]
    name = f"{args[0]}_before" if args else "previous_state"
    taken = _names(t.function)
    while name in taken:
        name += "_"
    value = args[0] if args else "None"
    return [FileChange(t.path, t.text, insert(t, [f"{name} = {value}"]))], None


_LAID_OUT = {
    ast.Assign: "value",
    ast.AugAssign: "value",
    ast.AnnAssign: "value",
    ast.Return: "value",
    ast.Expr: "value",
    ast.Raise: "exc",
    ast.If: "test",
    ast.While: "test",
    ast.For: "iter",
}
"""The statements a reformat lays out again, and the expression it puts in parentheses."""


def _relaid(t: Target, node: ast.stmt) -> str | None:
    """``t``'s text with ``node``'s expression in parentheses over three lines, when that keeps the
    syntax tree."""
    expr = getattr(node, _LAID_OUT[type(node)], None)
    if not isinstance(expr, ast.expr) or node is t.docstring:
        return None
    if expr.lineno != node.lineno or expr.end_lineno != node.lineno or expr.end_col_offset is None:
        return None
    raw = t.lines[node.lineno - 1].rstrip("\r\n").encode("utf-8")
    indent = raw[: node.col_offset]
    if indent.strip():
        return None
    head, body, tail = (
        raw[: expr.col_offset],
        raw[expr.col_offset : expr.end_col_offset],
        raw[expr.end_col_offset :],
    )
    rest = tail.strip().removeprefix(b":").strip()
    if rest and not rest.startswith(b"#"):
        return None
    compound = isinstance(node, ast.If | ast.While | ast.For)
    if (compound and not tail.strip().startswith(b":")) or (
        not compound and node.end_lineno != node.lineno
    ):
        return None
    new = [
        (head + b"(").decode("utf-8"),
        indent.decode("utf-8") + "    " + body.decode("utf-8"),
        indent.decode("utf-8") + ")" + tail.decode("utf-8"),
    ]
    try:
        text = _splice(t, node.lineno - 1, node.lineno, new)
    except NotBuilt:
        return None
    return text if ast.dump(ast.parse(text)) == ast.dump(t.module) else None


def reformat(inp: AttackInput) -> Built:
    t = inp.target()
    for node in ast.walk(t.function):
        if isinstance(node, ast.stmt) and type(node) in _LAID_OUT:
            text = _relaid(t, node)
            if text is not None:
                return [FileChange(t.path, t.text, text)], None
    raise NotBuilt("no_statement_to_reformat")


def empty(inp: AttackInput) -> Built:
    return [], None


SCRATCH = "reproduce_issue.py"
"""The script ``scratch_script`` adds at the repository root."""


def scratch_script(inp: AttackInput) -> Built:
    t = inp.target()
    if (inp.need_tree() / SCRATCH).exists():
        raise NotBuilt("file_exists")
    module = t.path[: -len(".py")].replace("/", ".")
    module = module[len("src.") :] if module.startswith("src.") else module
    text = f"# {_plain(inp.words)}\nimport {module}\n\nprint({module}, {t.function.name!r})\n"
    if not parses(text):
        raise NotBuilt("does_not_parse")
    return [FileChange(SCRATCH, None, text)], None
