"""What cannot have an effect: pure expressions and tests whose truth is known before they run.

Read by :mod:`.behaviour`'s normal form. Pure: constants, names, containers, comparisons and operators
over pure values, lambdas, f-strings of constants (evaluating them cannot change anything, beyond a
``NameError``). Never pure: attribute access and calls (a property, a method can do anything). A known
truth: a constant, ``TYPE_CHECKING`` (false at run time by definition), ``not`` of a known truth, and
arithmetic and comparisons over small numeric constants, folded within bounds without evaluating
anything else.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable
from typing import Any

_FALSE_NAMES = frozenset({"TYPE_CHECKING"})
"""Names that are false at run time by definition (``typing.TYPE_CHECKING``)."""


def pure(node: ast.expr | None) -> bool:
    """An expression whose evaluation cannot have an effect (beyond a NameError)."""
    if node is None or isinstance(node, ast.Constant | ast.Name | ast.Lambda):
        return True
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return all(pure(e) and not isinstance(e, ast.Starred) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None and pure(k) for k in node.keys) and all(
            pure(v) for v in node.values
        )
    if isinstance(node, ast.JoinedStr):
        return all(
            isinstance(v, ast.Constant)
            or (isinstance(v, ast.FormattedValue) and isinstance(v.value, ast.Constant))
            for v in node.values
        )
    if isinstance(node, ast.Compare):
        return pure(node.left) and all(pure(c) for c in node.comparators)
    if isinstance(node, ast.BoolOp):
        return all(pure(v) for v in node.values)
    if isinstance(node, ast.UnaryOp):
        return pure(node.operand)
    if isinstance(node, ast.BinOp):
        return pure(node.left) and pure(node.right)
    return False


def constant_truth(node: ast.expr) -> bool | None:
    """The truth of a test known before it runs, else ``None``."""
    if isinstance(node, ast.Constant):
        try:
            return bool(node.value)
        except Exception:  # a constant's truth cannot raise, but a hostile tree is not a constant
            return None
    if isinstance(node, ast.Name) and node.id in _FALSE_NAMES:
        return False
    if isinstance(node, ast.Attribute) and node.attr in _FALSE_NAMES:
        return False
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        inner = constant_truth(node.operand)
        return None if inner is None else not inner
    folded = _fold(node)
    return None if folded is _UNKNOWN else bool(folded)


_UNKNOWN = object()
_SMALL = (bool, int, float, type(None))
_CMP: dict[type[ast.cmpop], Callable[[Any, Any], bool]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
    ast.Is: operator.is_,
    ast.IsNot: operator.is_not,
}
_ARITH: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
}


def _fold(node: ast.expr, depth: int = 0) -> Any:
    """The value of a test made of small numeric constants only (``0 > 1``, ``1 - 1``, ``not 1 == 2``
    …), else :data:`_UNKNOWN`; bounded in depth and size, never evaluating anything else."""
    if depth > 20:
        return _UNKNOWN
    if isinstance(node, ast.Constant):
        ok = isinstance(node.value, _SMALL) and abs(node.value or 0) < 2**63
        return node.value if ok else _UNKNOWN
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub):
        v = _fold(node.operand, depth + 1)
        return _UNKNOWN if v is _UNKNOWN else (not v if isinstance(node.op, ast.Not) else -v)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        a, b = _fold(node.left, depth + 1), _fold(node.right, depth + 1)
        if a is _UNKNOWN or b is _UNKNOWN or a is None or b is None:
            return _UNKNOWN
        v = _ARITH[type(node.op)](a, b)
        return v if abs(v) < 2**63 else _UNKNOWN
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
        a, b = _fold(node.left, depth + 1), _fold(node.comparators[0], depth + 1)
        if a is _UNKNOWN or b is _UNKNOWN:
            return _UNKNOWN
        try:
            return _CMP[type(node.ops[0])](a, b)
        except TypeError:  # None < 1: the test would raise, so it is not a constant
            return _UNKNOWN
    if isinstance(node, ast.BoolOp):
        values = [_fold(v, depth + 1) for v in node.values]
        if any(v is _UNKNOWN for v in values):
            return _UNKNOWN
        return all(values) if isinstance(node.op, ast.And) else any(values)
    return _UNKNOWN


def empty_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return not node.elts
    if isinstance(node, ast.Dict):
        return not node.keys
    return isinstance(node, ast.Constant) and node.value in ("", b"", ())
