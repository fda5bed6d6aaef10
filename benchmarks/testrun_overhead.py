"""The tests verifier's CPU-seconds per candidate, where they go, and its overhead over the floor.

For every candidate of every bundled task (its hidden tests as the test script), and optionally for
SWE-bench instances on the shared repositories (their FAIL_TO_PASS files, the gold patch and none as
the candidates), measured in this process with ``getrusage`` (this process and every reaped child:
bubblewrap, the holder, git, pytest):

- ``verifier``: one :func:`run_tests` call (staging, sandbox start, apply, pytest, close), plus the
  task's tree preparation (:class:`PreparedTree`, once per task) divided by its candidates;
- ``floor``: the same pytest command run directly with the same interpreter, in a copy of the tree
  already patched and holding the tests (what a test costs with no sandbox at all);
- where the verifier's time goes, from runs of the same sandbox with other commands: ``sandbox``
  (``true``: staging, holder, bubblewrap, bash, apply, close), ``interpreter`` (``python -c pass``
  minus that), ``collection`` (``pytest --collect-only`` minus the interpreter) and ``tests`` (the
  full run minus collection).

Overhead = verifier / floor - 1, per candidate; the target is at most 25 %.

    python benchmarks/testrun_overhead.py --repeats 3 --out benchmarks/results/testrun_overhead.json
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR
from agentic_rubrics.sandbox.local import copy_tree
from agentic_rubrics.sandbox.testrun import TEST_DIR, PreparedTree, RunCommand, run_tests

PYTEST = [
    "-m",
    "pytest",
    "-q",
    "-rA",
    "--tb=short",
    "--show-capture=no",
    "-p",
    "no:cacheprovider",
]
ENV = {"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def cpu() -> float:
    """CPU-seconds of this process and its reaped children so far."""
    me, kids = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return me.ru_utime + me.ru_stime + kids.ru_utime + kids.ru_stime


def _floor(tree: Path, patch: str, tests: dict[str, bytes], python: str) -> float:
    """CPU-seconds of the same pytest, run directly in an already-patched copy of the tree."""
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "tree"
        copy_tree(tree, work)
        if patch:
            subprocess.run(
                ["git", "apply", "--whitespace=nowarn", "-"],
                input=patch.encode(),
                cwd=work,
                check=False,
                capture_output=True,
            )
        (work / TEST_DIR).mkdir()
        for name, data in tests.items():
            (work / TEST_DIR / name).write_bytes(data)
        env = {**os.environ, **ENV}
        argv = [python, *PYTEST, f"--rootdir={work}", TEST_DIR]
        before = cpu()
        subprocess.run(argv, cwd=work, env=env, capture_output=True, check=False)
        return cpu() - before


async def _cpu_of(tree: Path, patch: str, tests: dict[str, bytes], **kw: Any) -> float:
    """CPU-seconds of one run: this process and the children it reaped (staging, holder, bubblewrap)
    plus what the sandbox's shell reports for itself and its children (apply, interpreter, tests),
    which the kernel charges to no process of ours: they are reaped inside the pid namespace."""
    before = cpu()
    run = await run_tests(tree, patch, tests, **kw)
    if run.cpu_s is None:
        raise SystemExit(f"the run reported no CPU time: {run.reason} {run.excerpt[-300:]}")
    return cpu() - before + run.cpu_s


async def _parts(tree: Path, tests: dict[str, bytes], python: str) -> dict[str, float]:
    """Where one run's CPU goes (the base tree, no patch)."""
    collect = f"{python} -m pytest -q --collect-only -p no:cacheprovider {TEST_DIR} >/dev/null"
    sandbox = await _cpu_of(tree, "", tests, command=RunCommand("true"))
    interp = await _cpu_of(tree, "", tests, command=RunCommand(f"{python} -c pass"))
    collected = await _cpu_of(tree, "", tests, command=RunCommand(collect))
    full = await _cpu_of(tree, "", tests, python=python)
    return {
        "sandbox": sandbox,
        "interpreter": max(0.0, interp - sandbox),
        "collection": max(0.0, collected - interp),
        "tests": max(0.0, full - collected),
    }


def bundled_task(task: Path, python: str, repeats: int) -> dict[str, Any]:
    tests = {p.name: p.read_bytes() for p in (task / "hidden_tests").iterdir() if p.is_file()}
    patches = [p.read_text() for p in sorted((task / "candidates").glob("*.diff"))]
    before = cpu()
    prepared = PreparedTree(task / "repo")
    prepare = cpu() - before
    try:
        verifier, floor = [], []
        for patch in patches:
            runs = [
                asyncio.run(_cpu_of(prepared.path, patch, tests, python=python))
                for _ in range(repeats)
            ]
            verifier.append(statistics.median(runs))
            floor.append(
                statistics.median(
                    _floor(task / "repo", patch, tests, python) for _ in range(repeats)
                )
            )
        parts = {
            k: statistics.median(v)
            for k, v in _collect([asyncio.run(_parts(prepared.path, tests, python))]).items()
        }
    finally:
        prepared.close()
    k = len(patches)
    per = statistics.mean(verifier) + prepare / k
    base = statistics.mean(floor)
    return {
        "task": task.name,
        "candidates": k,
        "prepare_cpu_s": round(prepare, 4),
        "prepare_per_candidate_s": round(prepare / k, 4),
        "verifier_cpu_s": round(per, 4),
        "floor_cpu_s": round(base, 4),
        "overhead": round(per / base - 1, 4),
        "parts_cpu_s": {n: round(v, 4) for n, v in parts.items()},
    }


def _collect(rows: list[dict[str, float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            out.setdefault(key, []).append(value)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        raise SystemExit("bubblewrap is not installed")
    tasks = sorted(p for p in EXAMPLES_DIR.iterdir() if (p / "hidden_tests").is_dir())
    rows = []
    for task in tasks:
        row = bundled_task(task, args.python, args.repeats)
        rows.append(row)
        print(json.dumps(row))
    total_v = sum(r["verifier_cpu_s"] * r["candidates"] for r in rows)
    total_f = sum(r["floor_cpu_s"] * r["candidates"] for r in rows)
    summary = {
        "python": args.python,
        "tasks": len(rows),
        "candidates": sum(r["candidates"] for r in rows),
        "verifier_cpu_s_per_candidate": round(total_v / sum(r["candidates"] for r in rows), 4),
        "floor_cpu_s_per_candidate": round(total_f / sum(r["candidates"] for r in rows), 4),
        "overhead": round(total_v / total_f - 1, 4),
        "median_task_overhead": round(statistics.median(r["overhead"] for r in rows), 4),
        "parts_cpu_s_median": {
            k: round(statistics.median(v), 4)
            for k, v in _collect([r["parts_cpu_s"] for r in rows]).items()
        },
    }
    print(json.dumps(summary, indent=2))
    if args.out:
        args.out.write_text(json.dumps({"summary": summary, "tasks": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
