"""The package's habits, each kept here (next to the import order in test_imports.py): small modules
and functions, the formatter's layout, every module on DESIGN.md's map, every exception in the
package's tree, sorted ``__all__``."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "agentic_rubrics"
MODULES = sorted(p for p in PACKAGE.rglob("*.py") if "example_data" not in p.parts)

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
LONG_FUNCTIONS: dict[str, str] = {
    "explore/common.py::common_items": "one declarative list of the items every static rubric shares",
    "llm/pool_child.py::worker_main": "a worker process's whole loop; its closures share one pipe",
}
"""Functions allowed over MAX_FUNCTION_LINES, each with its reason (at most three)."""
INTERNAL_SIGNALS = {
    "Unsendable": "llm/pool.py: a request a worker cannot receive; caught where it is raised",
    "CopyTooLarge": "rubric/postimage/apply.py: caught in apply_like_harness, becomes a reason",
    "Unconfined": "rubric/postimage/apply.py: caught in apply_like_harness, becomes a reason",
    "InvalidAtLastTurn": "explore/agent_tools.py: caught by the agent loop",
    "NeedsRepository": "rubric/checks_repo.py: caught by run_check, becomes no_repository",
    "_Refused": "reward/server.py: caught by the request handler, becomes a 4xx or 5xx answer",
    "NotBuilt": "gaming/target.py: caught by gaming/attacks.py, becomes an attack's reason code",
}
"""Exceptions outside the AgenticRubricsError tree: internal signals that never leave the package."""


def _rel(path: Path) -> str:
    return path.relative_to(PACKAGE).as_posix()


def test_no_module_is_over_its_ceiling() -> None:
    long = {
        _rel(p): n for p in MODULES if (n := len(p.read_text().splitlines())) > MAX_MODULE_LINES
    }
    assert not long, long


def test_few_functions_are_long_and_each_says_why() -> None:
    assert len(LONG_FUNCTIONS) <= 3
    found: dict[str, int] = {}
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found[f"{_rel(path)}::{node.name}"] = lines
    unexplained = {k: v for k, v in found.items() if k not in LONG_FUNCTIONS}
    assert not unexplained, unexplained
    stale = set(LONG_FUNCTIONS) - set(found)
    assert not stale, f"no longer long, take them off the list: {stale}"


def test_the_formatter_lays_out_the_code() -> None:
    trailing = re.compile(r"^[ \t]*\)[^#\n]*[ \t]+#", re.M)  # a comment that forced a call to wrap
    for path in MODULES:
        text = path.read_text()
        assert "fmt: skip" not in text and "fmt: off" not in text, _rel(path)
        assert not trailing.search(text), (_rel(path), trailing.search(text))


def test_every_module_is_on_the_map() -> None:
    design = (ROOT / "DESIGN.md").read_text()
    missing = [
        _rel(p)
        for p in MODULES
        if p.name != "__init__.py" and not re.search(rf"\b{re.escape(p.name)}\b", design)
    ]
    assert not missing, missing


def test_every_exception_is_in_the_package_tree() -> None:
    classes: dict[str, list[str]] = {}
    for path in MODULES:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                classes[node.name] = [ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases]

    def rooted(name: str, seen: frozenset[str] = frozenset()) -> bool | None:
        if name == "AgenticRubricsError":
            return True
        if name in seen or name not in classes:
            return None  # not the package's: a builtin or another library's
        verdicts = [rooted(b, seen | {name}) for b in classes[name]]
        return any(v for v in verdicts) if any(v is not None for v in verdicts) else None

    exceptions = [
        n
        for n, bases in classes.items()
        if any(b.endswith(("Error", "Exception")) for b in bases) or n.endswith("Error")
    ]
    stray = [n for n in exceptions if not rooted(n) and n not in INTERNAL_SIGNALS]
    assert not stray, stray


def _isort(name: str) -> tuple[int, str]:
    """ruff's order for ``__all__`` (RUF022): CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[:1].isupper() else 2, name)


def test_every_all_is_sorted() -> None:
    for path in MODULES:
        for node in ast.parse(path.read_text()).body:
            named = isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
            )
            if named and isinstance(node.value, ast.List | ast.Tuple):  # type: ignore[union-attr]
                names = [e.value for e in node.value.elts if isinstance(e, ast.Constant)]  # type: ignore[union-attr]
                assert names == sorted(names, key=_isort), _rel(path)
