"""The bundled tasks: well formed, labelled only by their hidden tests, explored with grounded rubrics."""

from __future__ import annotations

import ast
import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from agentic_rubrics.bundled import EXAMPLES_DIR, load_examples, tree_hash
from agentic_rubrics.checks import CHECKS
from agentic_rubrics.explore.static import StaticExplorer
from agentic_rubrics.sandbox import LocalCopySandbox

ROOT = Path(__file__).resolve().parents[1]
KINDS = {
    "correct", "correct_with_test", "correct_scope_creep", "bandaid", "wrong_layer", "wrong_file",
    "partial", "weakened_tests", "noop", "syntax_error", "empty",
}  # fmt: skip


def test_bundled_tasks_are_well_formed() -> None:
    examples = load_examples()
    assert len(examples) >= 3
    for ex in examples:
        t = ex.task
        assert t.base_commit == tree_hash(ex.repo_dir)
        assert len(t.candidates) >= 8, t.instance_id
        assert all(c.resolved is not None for c in t.candidates), "every candidate is labelled"
        assert any(c.resolved for c in t.candidates) and not all(c.resolved for c in t.candidates)
        assert set(ex.kinds) == {c.id for c in t.candidates} and set(ex.kinds.values()) <= KINDS
        assert any(not c.patch.strip() for c in t.candidates), "an empty patch"
        assert ex.gold_patch.strip() and ex.hidden_tests_dir.is_dir()
        # the hidden tests are a sibling of the repository, never inside it
        assert not any(p.name == "hidden_tests" for p in ex.repo_dir.rglob("*"))


def test_labels_are_rederived_by_running_the_hidden_tests() -> None:
    """Runs benchmarks/label_examples.py --check: every label from a fresh run of the hidden tests."""
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks" / "label_examples.py"),
            "--check",
            "--root",
            str(EXAMPLES_DIR),
        ],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.count("resolved;") == len(load_examples())


def _paths_and_symbols(check: dict[str, object]) -> tuple[list[str], list[str]]:
    paths: list[str] = []
    symbols: list[str] = []
    for key, value in check.items():
        globs = value if isinstance(value, list) else [value]
        if key in ("touches", "in") and all(
            isinstance(g, str) and not any(ch in g for ch in "*?[") and not g.endswith("/")
            for g in globs
        ):
            paths += [str(g) for g in globs]
        if key == "touches_symbol":
            symbols += [str(v) for v in (value if isinstance(value, list) else [value])]
    return paths, symbols


@pytest.mark.parametrize("example", load_examples(), ids=lambda ex: ex.task.instance_id)
def test_static_explorer_writes_only_what_exists(example: object) -> None:
    from agentic_rubrics.bundled import ExampleTask

    assert isinstance(example, ExampleTask)

    async def go() -> object:
        async with LocalCopySandbox(example.repo_dir) as sb:
            rubric, steps = await StaticExplorer().explore(example.task.public(), sb)
            assert steps and all(s["tool"] in ("bash", "read_file") for s in steps)
            return rubric

    rubric = asyncio.run(go())
    items = list(rubric.items())  # type: ignore[attr-defined]
    assert items and all(item.check is not None and item.check.name in CHECKS for _, item in items)
    axes_with_items = {axis for axis, _ in items}
    assert {"file_change_rubrics", "integrity_rubrics", "runtime_rubrics"} <= axes_with_items
    for _, item in items:
        paths, symbols = _paths_and_symbols(item.check.model_dump())
        for p in paths:
            assert (example.repo_dir / p).is_file(), (item.id, p)
        for sym in symbols:
            files = item.check.path if isinstance(item.check.path, list) else [item.check.path]
            names: set[str] = set()
            for file in files:
                tree = ast.parse((example.repo_dir / file).read_text())
                names |= {
                    n.name
                    for n in ast.walk(tree)
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                }
            assert set(sym.split(".")) <= names, (item.id, sym)
