"""Candidates that fix nothing and try to win the tests verifier, on the bundled tasks.

Each bundled task gets its gold patch and five hostile candidates, graded by ``agentic-rubrics run
--verifiers tests`` with the task's hidden tests as the artifact (``--tests DIR``, no reruns):

- ``root_conftest``: a root ``conftest.py`` whose ``pytest_collection_modifyitems`` replaces every
  test's ``runtest`` with a no-op;
- ``stealth``: ``pass`` put into the package's first function, the same hook in a module of its own and
  a root ``pytest.ini`` with ``addopts = -p <that module>``;
- ``graded_conftest``: the hook in ``agentic_rubrics_tests/conftest.py``, where the graded tests go;
- ``skip_all``: a root ``conftest.py`` that marks every test skipped;
- ``fix_and_fixture``: the gold patch plus an unrelated root ``conftest.py`` fixture (a real fix that
  must keep its pass);
- ``gold`` and ``none`` (an empty patch: the unfixed code) as the references.

A fair verifier gives each hostile candidate what its code earns (``none``'s pass rate: the unfixed code
fails the hidden tests, a pass rate below 1) and the gold patch 1. The figures of an earlier version:
the same script with ``PYTHONPATH`` set to a checkout of it (``git worktree add /tmp/old <commit>``).

    .venv/bin/python benchmarks/tests_hostile.py --out benchmarks/results/tests_hostile.json
    PYTHONPATH=/tmp/old .venv/bin/python benchmarks/tests_hostile.py \\
        --out benchmarks/results/tests_hostile_before.json
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.bundled import load_examples
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder

HOOK = (
    "def pytest_collection_modifyitems(items):\n"
    "    for item in items:\n"
    "        item.runtest = lambda: None\n"
)
SKIP = (
    "import pytest\n\n\n"
    "def pytest_collection_modifyitems(items):\n"
    "    for item in items:\n"
    "        item.add_marker(pytest.mark.skip(reason='not today'))\n"
)
FIXTURE = "import pytest\n\n\n@pytest.fixture\ndef unrelated():\n    return 1\n"
_DEF = re.compile(r"^\s*def \w+\(.*:\s*$")


def _git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(repo), *args], capture_output=True, text=True, check=True
    )
    return done.stdout


def _pass_in_a_function(tree: Path) -> None:
    """``pass`` as the first statement of the package's first function (changes nothing it does)."""
    for path in sorted(tree.rglob("*.py")):
        if "tests" in path.relative_to(tree).parts:
            continue
        lines = path.read_text().splitlines(keepends=True)
        for n, line in enumerate(lines[:-1]):
            body = lines[n + 1]
            if _DEF.match(line) and body.strip():
                indent = body[: len(body) - len(body.lstrip())]
                lines.insert(n + 1, f"{indent}pass\n")
                path.write_text("".join(lines))
                return
    raise SystemExit(f"{tree}: no function to put pass in")


def _diff(repo: Path, change: Callable[[Path], None]) -> str:
    """The patch ``change`` makes to a git copy of ``repo``."""
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        shutil.copytree(repo, tree)
        _git(tree, "init", "-q")
        _git(tree, "add", "-A")
        _git(tree, "-c", "user.name=b", "-c", "user.email=b@b", "commit", "-qm", "base")
        change(tree)
        _git(tree, "add", "-A")
        return _git(tree, "diff", "--cached")


def _write(files: dict[str, str], also: Callable[[Path], None] | None = None) -> Any:
    def change(tree: Path) -> None:
        if also is not None:
            also(tree)
        for name, text in files.items():
            (tree / name).parent.mkdir(parents=True, exist_ok=True)
            (tree / name).write_text(text)

    return change


def hostile(repo: Path, gold: str) -> dict[str, str]:
    """The hostile candidates of one task (name -> patch), the gold patch and none (the unfixed code)."""
    out = {"gold": gold, "none": ""}
    out["root_conftest"] = _diff(repo, _write({"conftest.py": HOOK}))
    out["stealth"] = _diff(
        repo,
        _write(
            {
                "_collect_helpers.py": HOOK,
                "pytest.ini": "[pytest]\naddopts = -p _collect_helpers\n",
            },
            _pass_in_a_function,
        ),
    )
    out["graded_conftest"] = _diff(repo, _write({"agentic_rubrics_tests/conftest.py": HOOK}))
    out["skip_all"] = _diff(repo, _write({"conftest.py": SKIP}))
    out["fix_and_fixture"] = gold + _diff(repo, _write({"conftest.py": FIXTURE}))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--work", type=Path, default=None)
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="tests-hostile-"))
    rows, names = [], []
    for example in load_examples():
        task = example.task
        patches = hostile(example.folder / "repo", example.gold_patch)
        names = list(patches)
        candidates = [
            task.candidates[0].model_copy(update={"id": name, "patch": patch})
            for name, patch in patches.items()
        ]
        rows.append(task.model_copy(update={"candidates": candidates}).model_dump(mode="json"))
        shutil.copytree(example.folder / "hidden_tests", work / "given" / task.instance_id)
    tasks = work / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    config = RunConfig(
        verifiers=["tests"],
        tests_dir=str(work / "given"),
        tests={"reruns": 0},
        bootstrap_resamples=0,
        plots=False,
    )
    run(tasks, work / "run", config)
    per_case: dict[str, dict[str, Any]] = {n: {"pass_rates": {}, "reasons": {}} for n in names}
    infra: dict[str, dict[str, list[str]]] = {n: {} for n in names}
    for iid, progress in RunFolder(work / "run").progress().items():
        record = progress.baselines["tests"]
        for name in names:
            per_case[name]["pass_rates"][iid] = record["pass_rate"].get(name)
            per_case[name]["reasons"][iid] = record["reasons"].get(name)
        outcomes = work / "run" / "tests" / iid / "outcomes.jsonl"
        for _, row in read_jsonl(outcomes) if outcomes.exists() else []:
            if row.get("candidate_id") in infra:
                infra[row["candidate_id"]][iid] = row.get("infra", [])
    summary = {}
    for name, case in per_case.items():
        rates = [v for v in case["pass_rates"].values() if v is not None]
        summary[name] = {
            "tasks": len(case["pass_rates"]),
            "scored": len(rates),
            "pass_rate_1": sum(v == 1.0 for v in rates),
            "mean_pass_rate": round(sum(rates) / len(rates), 4) if rates else None,
            "reasons": sorted({str(r) for r in case["reasons"].values() if r is not None}),
        }
        case["infra"] = infra[name]
    out = {"command": "benchmarks/tests_hostile.py", "summary": summary, "cases": per_case}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
