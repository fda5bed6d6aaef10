"""The bundled tasks: well formed, labelled only by their hidden tests, explored with grounded rubrics."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib.util
import io
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.datasets.bundled import (
    EXAMPLES_DIR,
    LABEL_MANIFEST,
    example_folders,
    load_examples,
    tree_hash,
)
from agentic_rubrics.explore.static import StaticExplorer
from agentic_rubrics.rubric.checks import CHECKS
from agentic_rubrics.sandbox import LocalCopySandbox

ROOT = Path(__file__).resolve().parents[1]
LABEL_SCRIPT = ROOT / "benchmarks" / "label_examples.py"
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
        labels = json.loads((ex.folder / "labels.json").read_text())
        assert labels["gold"]["resolved"] and not labels["base"]["resolved"]
        # the hidden tests are a sibling of the repository, never inside it
        assert not any(p.name == "hidden_tests" for p in ex.repo_dir.rglob("*"))


def _script() -> Any:
    """The label script as a module (its functions are what the manifest is made of)."""
    spec = importlib.util.spec_from_file_location("label_examples", LABEL_SCRIPT)
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    return script


def _manifest_entry(folder: Path) -> dict[str, object]:
    entry: dict[str, object] = _script().manifest_entry(folder)
    return entry


ENVIRONMENT = {"python", "pytest"}
"""Manifest keys that name what ran the tests, not an input: where only they differ (a user's other
Python), the labels are derived again and must come out the same."""


def _stale_tasks(root: Path) -> dict[str, list[str]]:
    """Task folders whose inputs or labels differ from the manifest, with the keys that differ."""
    path = root / LABEL_MANIFEST
    recorded = json.loads(path.read_text())["tasks"] if path.exists() else {}
    stale = {}
    for folder in example_folders(root):
        entry, now = recorded.get(folder.name, {}), _manifest_entry(folder)
        if entry != now:
            stale[folder.name] = sorted(
                k for k in now.keys() | entry.keys() if entry.get(k) != now.get(k)
            )
    return stale


def _label_script(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(LABEL_SCRIPT), "--root", str(root), *args],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip


def _label_main(root: Path, *args: str, script: Any = None) -> subprocess.CompletedProcess[str]:
    """The label script's main() in this process (its start-up is most of a tiny task's cost)."""
    script = script or _script()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = script.main(["--root", str(root), *args])
    return subprocess.CompletedProcess(args, code, out.getvalue(), err.getvalue())


def test_labels_are_rederived_when_their_inputs_change() -> None:
    """The labels were derived by running the hidden tests on exactly the inputs that are here now.

    The manifest's hashes (written by benchmarks/label_examples.py after running the hidden tests) are
    compared with the files on disk; a task whose repository, candidates, gold patch, hidden tests,
    labels or labelling script changed gets its labels re-derived here, and the test fails until the
    script has rewritten them and the manifest.
    """
    stale = _stale_tasks(EXAMPLES_DIR)
    if not stale:
        return
    tasks = [f"--task={t}" for t in stale]
    if all(set(keys) <= ENVIRONMENT for keys in stale.values()):
        # the same inputs on another Python or pytest: derived again here, they must be the same
        done = _label_script(EXAMPLES_DIR, "--check", "--labels-only", *tasks)
        assert done.returncode == 0, f"{stale}: other labels here:\n{done.stdout}{done.stderr}"
        return
    done = _label_script(EXAMPLES_DIR, "--check", *tasks)
    pytest.fail(
        f"labels not derived from the current inputs: {stale}; re-derived now:\n"
        f"{done.stdout}{done.stderr}\nrewrite them with: python benchmarks/label_examples.py"
    )


MINI = {
    "repo/mini/__init__.py": "def add(a, b):\n    return a - b\n",
    "hidden_tests/test_add.py": (
        "import os\nimport sys\n\nfrom mini import add\n\n\n"
        "def test_add():\n    assert add(2, 3) == 5\n\n\n"
        "def test_a_plain_fast_pytest():\n"
        "    assert os.environ['PYTEST_DISABLE_PLUGIN_AUTOLOAD'] == '1' and sys.dont_write_bytecode\n\n\n"
        "def test_only_what_the_hashes_count_is_copied():\n"
        "    from pathlib import Path\n\n"
        "    assert not list(Path(__file__).resolve().parent.parent.rglob('*.pyc'))\n"
    ),
    "task.yaml": "instance_id: mini-1\nproblem_statement: add subtracts\n",
    "candidates/manifest.yaml": "c1: {kind: correct}\nc2: {kind: wrong_layer}\nc3: {kind: empty}\n",
    "candidates/c3.diff": "",
}
FIX = "diff --git a/mini/__init__.py b/mini/__init__.py\n--- a/mini/__init__.py\n+++ b/mini/__init__.py\n@@ -1,2 +1,2 @@\n def add(a, b):\n-    return a - b\n+    return {}\n"  # fmt: skip


def _mini_task(root: Path) -> Path:
    task = root / "mini-1"
    for rel, text in {**MINI, "gold.diff": FIX.format("a + b"), "candidates/c1.diff": FIX.format("b + a"),
                      "candidates/c2.diff": FIX.format("a * b")}.items():  # fmt: skip
        (task / rel).parent.mkdir(parents=True, exist_ok=True)
        (task / rel).write_text(text)
    return task


def test_the_manifest_notices_every_change_of_a_labels_input(tmp_path: Path) -> None:
    task = _mini_task(tmp_path)
    done = _label_main(tmp_path, "--jobs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    labels = json.loads((task / "labels.json").read_text())
    assert {c: v["resolved"] for c, v in labels["candidates"].items()} == {
        "c1": True, "c2": False, "c3": False,
    }  # fmt: skip
    assert _stale_tasks(tmp_path) == {}
    for rel, key in [
        ("repo/mini/__init__.py", "repo"), ("hidden_tests/test_add.py", "hidden_tests"),
        ("gold.diff", "gold"), ("candidates/c2.diff", "candidates"), ("labels.json", "labels"),
    ]:  # fmt: skip
        before = (task / rel).read_bytes()
        (task / rel).write_bytes(before.replace(b"a", b"b", 1) if before else b"\n")
        assert _stale_tasks(tmp_path) == {"mini-1": [key]}, rel
        (task / rel).write_bytes(before)
        assert _stale_tasks(tmp_path) == {}
    # a manifest forged by hand to match edited labels passes the hashes; the full re-derivation
    # (the benchmark command) still catches it
    labels["candidates"]["c2"]["resolved"] = True
    (task / "labels.json").write_text(json.dumps(labels))
    forged = {"schema": 1, "tasks": {"mini-1": _manifest_entry(task)}}
    (tmp_path / LABEL_MANIFEST).write_text(json.dumps(forged))
    assert _stale_tasks(tmp_path) == {}
    check = _label_main(tmp_path, "--check")
    assert check.returncode == 1 and "differs from the re-derived labels" in check.stderr
    (task / "candidates" / "c4.diff").write_text("")
    assert _stale_tasks(tmp_path) == {"mini-1": ["candidates"]}
    # only a run of the hidden tests writes the manifest, and only when the gold passes and the base fails
    (task / "gold.diff").write_text(FIX.format("a * b"))
    failed = _label_main(tmp_path)
    assert failed.returncode == 1 and "the gold patch must pass" in failed.stderr
    assert json.loads((tmp_path / LABEL_MANIFEST).read_text())["tasks"] == {}
    assert _stale_tasks(tmp_path) == {"mini-1": sorted(_manifest_entry(task))}


def test_labels_are_vouched_for_only_as_derived(tmp_path: Path) -> None:
    """The manifest names what the labels really came from: a candidate saved while the tests run is
    not vouched for; bytecode and caches are neither hashed nor copied into the test runs; the
    labelling code includes the module that reads the tasks, and the versions that run the tests."""
    task = _mini_task(tmp_path)
    script = _script()
    run_tests = script.run_hidden_tests

    def an_editor_saves_meanwhile(example: Any, patch: str) -> dict[str, object]:
        (task / "candidates" / "c2.diff").write_text(FIX.format("a + b"))
        result: dict[str, object] = run_tests(example, patch)
        return result

    script.run_hidden_tests = an_editor_saves_meanwhile
    edited = _label_main(tmp_path, "--jobs", "1", script=script)
    assert edited.returncode == 1 and "candidates changed while its tests ran" in edited.stderr
    assert json.loads((tmp_path / LABEL_MANIFEST).read_text())["tasks"] == {}
    assert not (task / "labels.json").exists()

    (task / "candidates" / "c2.diff").write_text(FIX.format("a * b"))
    (task / "repo" / "mini" / "_speedups.pyc").write_bytes(b"\x00 not the repository's code")
    (task / "hidden_tests" / "__pycache__").mkdir()
    (task / "hidden_tests" / "__pycache__" / "test_add.cpython-311.pyc").write_bytes(b"\x00")
    done = _label_main(tmp_path, "--jobs", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    assert _stale_tasks(tmp_path) == {}
    entry = _manifest_entry(task)
    assert entry["python"] == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert entry["pytest"] == pytest.__version__
    assert Path(script.bundled.__file__).resolve() in script.LABELLING_CODE


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
        if key in ("changes_function", "changes_behaviour") and value is not True:
            # path::Class.method: the path must exist too
            for v in value if isinstance(value, list) else [value]:
                path, _, qual = str(v).partition("::")
                paths.append(path)
                symbols.append(f"{path}::{qual}")
    return paths, symbols


@pytest.mark.parametrize("example", load_examples(), ids=lambda ex: ex.task.instance_id)
def test_static_explorer_writes_only_what_exists(example: object) -> None:
    from agentic_rubrics.datasets.bundled import ExampleTask

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
            if "::" in sym:
                file, _, sym = sym.partition("::")
                files = [file]
            names: set[str] = set()
            for file in files:
                tree = ast.parse((example.repo_dir / file).read_text())
                names |= {
                    n.name
                    for n in ast.walk(tree)
                    if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
                }
            assert set(sym.split(".")) <= names, (item.id, sym)
