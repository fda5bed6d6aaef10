"""The package's imports point one way: every module sits in one stage (LAYERS, bottom first) and imports
only from its own stage or the ones below; no import cycle; importing a module does nothing (the process
environment is the same after importing every module). The walk reads every import with ``ast``,
imports inside functions and under ``if TYPE_CHECKING:`` too (the stage order holds for both; a cycle
is one among the imports that run). The protocols (protocols.py) are at the bottom; the package root is
the public face: its lazy re-exports under ``if TYPE_CHECKING:`` are not followed, and no module imports it."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "agentic_rubrics"
ROOT = "agentic_rubrics"

LAYERS: list[tuple[str, list[str]]] = [
    # the ground floor: the vocabulary (protocols, types), errors, untrusted text, the run folder's on-disk
    # contract (runfolder/), the diff model, prompts, the run's limits
    (
        "base",
        [
            "protocols",
            "types",
            "reasons",
            "exceptions",
            "setting_effects",
            "config_sections",
            "surrogates",
            "redaction",
            "runfolder",
            "runfolder.*",
            "patch",
            "test_infra",
            "prompts",
            "limits",
            "worker_processes",
            "confine",
        ],
    ),
    ("datasets", ["datasets", "datasets.*"]),
    ("llm", ["llm", "llm.*"]),
    # the contract between explorer and judge
    ("rubric", ["rubric", "rubric.*"]),
    ("sandbox", ["sandbox", "sandbox.*"]),
    # side by side (SIDE_BY_SIDE): none of the three imports another
    ("explore", ["explore", "explore.*"]),
    ("judge", ["judge", "judge.*"]),
    ("rank", ["rank", "rank.*"]),
    ("report", ["report", "report.*"]),
    # run folders as training data (export-sft): reads what the report reads
    ("export", ["export", "export.*"]),
    ("pipeline", ["pipeline", "pipeline.*"]),
    # rewards: the run's judging and scoring driven per (instance, patch), for RL frameworks
    ("reward", ["reward", "reward.*"]),
    # the gaming suite: attacks added to the user's tasks, measured with the run and the reward
    ("gaming", ["gaming", "gaming.*"]),
    # the package root is the public face only: it hands names on lazily, and no module imports it
    ("face", [ROOT, "cli", "cli.*", "testing", "testing.*"]),
]
"""The stages, bottom first: a module imports from its own stage or a lower one."""
SIDE_BY_SIDE = {"explore", "judge", "rank"}
"""Stages on one level: each uses the stages below, none of them another (the run composes them)."""


@dataclass(frozen=True)
class Import:
    source: str
    target: str
    line: int
    typing_only: bool
    names: tuple[str, ...] = ()


def _module_name(path: Path, package: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _typing_blocks(tree: ast.AST) -> set[int]:
    """ids of the import nodes under ``if TYPE_CHECKING:``."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for inner in node.body:
                found |= {id(n) for n in ast.walk(inner)}
    return found


def package_imports(package: Path) -> tuple[list[str], list[Import]]:
    """Every module of ``package`` and every import between two of them."""
    files = [p for p in package.rglob("*.py") if "example_data" not in p.parts]
    modules = {_module_name(p, package): p for p in files}
    out: list[Import] = []
    for name, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = _typing_blocks(tree)
        here = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = here.split(".")[: len(here.split(".")) - node.level + 1]
                    base = ".".join(up + ([base] if base else []))
                targets = [
                    f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                    for a in node.names
                ]
            for target in targets:
                while target and target not in modules:
                    target = target.rpartition(".")[0]
                if not target or target == name:
                    continue
                lazy_face = name == package.name and id(node) in typing_only
                taken = (
                    tuple(a.name for a in node.names) if isinstance(node, ast.ImportFrom) else ()
                )
                if not lazy_face:
                    out.append(Import(name, target, node.lineno, id(node) in typing_only, taken))
    return sorted(modules), out


def _layer_of(module: str, package: str) -> int | None:
    short = module[len(package) + 1 :] if module != package else package
    for index, (_, members) in enumerate(LAYERS):
        for member in members:
            if member == short or (member.endswith("*") and short.startswith(member[:-1])):
                return index
    return None


def _level(layer: int) -> int:
    """Where a stage sits: the side-by-side stages share the level of the first of them."""
    names = [name for name, _ in LAYERS]
    if names[layer] in SIDE_BY_SIDE:
        return min(names.index(n) for n in SIDE_BY_SIDE)
    return layer


def violations(package: Path) -> list[str]:
    """What breaks the rule: a module in no stage, an import from a later stage, an import cycle."""
    modules, imports = package_imports(package)
    problems = [
        f"{m}: in no stage of LAYERS" for m in modules if _layer_of(m, package.name) is None
    ]
    for imp in imports:
        src, dst = _layer_of(imp.source, package.name), _layer_of(imp.target, package.name)
        if src is None or dst is None or src == dst:
            continue
        if _level(dst) >= _level(src):
            relation = "beside" if _level(dst) == _level(src) else "above"
            problems.append(
                f"{imp.source}:{imp.line} imports {imp.target}: stage {LAYERS[dst][0]!r} is"
                f" {relation} {LAYERS[src][0]!r}"
            )
    for imp in imports:
        private = [n for n in imp.names if n.startswith("_") and not n.startswith("__")]
        if private:
            problems.append(f"{imp.source}:{imp.line} takes {', '.join(private)} from {imp.target}")
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for imp in imports:
        if not imp.typing_only:
            graph[imp.source].add(imp.target)
    problems += [f"import cycle: {' -> '.join(c)}" for c in _cycles(graph)]
    return list(dict.fromkeys(problems))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_imports_follow_the_stage_order_without_cycles() -> None:
    assert violations(PACKAGE) == []


def test_the_walk_finds_a_cycle_a_back_edge_and_a_module_in_no_stage(tmp_path: Path) -> None:
    pkg = tmp_path / ROOT
    (pkg / "explore").mkdir(parents=True)
    (pkg / "__init__.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
        "    from agentic_rubrics.cli import app\n"
    )
    (pkg / "types.py").write_text("def f():\n    from agentic_rubrics.explore import leads\n")
    (pkg / "explore" / "__init__.py").write_text("")
    (pkg / "explore" / "leads.py").write_text("from agentic_rubrics import types\n")
    (pkg / "llm").mkdir()
    (pkg / "llm" / "__init__.py").write_text("")
    (pkg / "llm" / "door.py").write_text("from . import pool\n")
    (pkg / "llm" / "pool.py").write_text("import agentic_rubrics.llm.door\n")
    (pkg / "newcomer.py").write_text("")
    (pkg / "cli.py").write_text("from agentic_rubrics.llm.door import _door\n")
    found = violations(pkg)
    assert "agentic_rubrics.newcomer: in no stage of LAYERS" in found
    assert any(
        p.startswith("agentic_rubrics.types:2 imports agentic_rubrics.explore.leads") for p in found
    )
    assert "import cycle: agentic_rubrics.llm.door -> agentic_rubrics.llm.pool" in found
    cycle = "import cycle: agentic_rubrics.explore.leads -> agentic_rubrics.types"
    assert cycle in found
    assert "agentic_rubrics.cli:1 takes _door from agentic_rubrics.llm.door" in found
    assert not any("imports agentic_rubrics.cli" in p for p in found)  # the root's lazy face
    assert len(found) == 5, found


def test_importing_every_module_changes_no_environment_variable() -> None:
    modules, _ = package_imports(PACKAGE)
    code = (
        "import importlib, json, os, sys\n"
        "before = dict(os.environ)\n"
        "for name in json.loads(sys.argv[1]):\n"
        "    importlib.import_module(name)\n"
        "after = dict(os.environ)\n"
        "print(json.dumps(sorted(k for k in before.keys() | after.keys()"
        " if before.get(k) != after.get(k))))\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LITELLM", "SWE_REX"))}
    done = subprocess.run(
        [sys.executable, "-c", code, json.dumps(modules)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=True,
    )
    assert json.loads(done.stdout.strip().splitlines()[-1]) == []
