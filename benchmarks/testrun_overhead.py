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


def swebench_instance(instance: Any, tree: Path, interpreter: Any, repeats: int) -> dict[str, Any]:
    """One SWE-bench instance's FAIL_TO_PASS files, with the gold patch and with none as the two
    candidates, in the spec's environment: the verifier against the same command run directly."""
    from agentic_rubrics.sandbox.testlogs import command, directives, outcome_filter, runner_for

    runner = runner_for(instance.repo)
    text = command(runner, interpreter.python, directives(instance.test_patch))
    run_command = RunCommand(text, lines=outcome_filter(runner))
    before = cpu()
    prepared = PreparedTree(tree)
    prepare = cpu() - before
    verifier, floor = [], []
    try:
        for patch in (instance.gold_patch, ""):
            kw = {"test_patch": instance.test_patch, "command": run_command}
            kw["read_only"] = interpreter.read_only
            runs = [asyncio.run(_cpu_of(prepared.path, patch, {}, **kw)) for _ in range(repeats)]
            verifier.append(statistics.median(runs))
            floor.append(
                statistics.median(
                    _floor_command(tree, [patch, instance.test_patch], text) for _ in range(repeats)
                )
            )
    finally:
        prepared.close()
    per = statistics.mean(verifier) + prepare / 2
    base = statistics.mean(floor)
    return {
        "task": instance.instance_id,
        "candidates": 2,
        "prepare_cpu_s": round(prepare, 4),
        "verifier_cpu_s": round(per, 4),
        "floor_cpu_s": round(base, 4),
        "overhead": round(per / base - 1, 4),
    }


def _floor_command(tree: Path, patches: list[str], text: str) -> float:
    """CPU-seconds of ``text`` run directly by bash in a copy of the tree with ``patches`` applied."""
    from agentic_rubrics.sandbox.bwrap import POOL_THREADS

    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp) / "tree"
        copy_tree(tree, work)
        for patch in patches:
            if patch:
                subprocess.run(
                    ["git", "apply", "--whitespace=nowarn", "-"],
                    input=patch.encode(),
                    cwd=work,
                    check=True,
                    capture_output=True,
                )
        env = {**os.environ, **POOL_THREADS}
        before = cpu()
        subprocess.run(["bash", "-c", text], cwd=work, env=env, capture_output=True, check=False)
        return cpu() - before


def _swebench_rows(args: argparse.Namespace) -> list[dict[str, Any]]:
    from agentic_rubrics.datasets.repos import RepoCache
    from agentic_rubrics.datasets.swebench_tests import load_tested_instances
    from agentic_rubrics.sandbox.testenv import EnvSpec, build_env, named_interpreter

    wanted = args.instances.split(",")
    instances = [i for i in load_tested_instances(args.swebench) if i.instance_id in wanted]
    specs = json.loads(args.env_spec.read_text()) if args.env_spec else {}
    repos = RepoCache(args.repo_cache, args.repo_url)
    rows = []
    for instance in instances:
        tree = repos.checkout(instance.repo, instance.base_commit).path
        raw = specs.get(instance.repo)
        interpreter = named_interpreter(args.python)
        if raw is not None:
            interpreter = build_env(
                EnvSpec.model_validate(raw),
                tree,
                cache_dir=args.env_cache,
                repo=instance.repo,
                repo_version=instance.version,
            )
        row = swebench_instance(instance, tree, interpreter, args.repeats)
        rows.append(row)
        print(json.dumps(row))
    return rows


def _collect(rows: list[dict[str, float]]) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for row in rows:
        for key, value in row.items():
            out.setdefault(key, []).append(value)
    return out


def _bundled_summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    k = sum(r["candidates"] for r in rows)
    total_v = sum(r["verifier_cpu_s"] * r["candidates"] for r in rows)
    total_f = sum(r["floor_cpu_s"] * r["candidates"] for r in rows)
    return {
        "tasks": len(rows),
        "candidates": k,
        "verifier_cpu_s_per_candidate": round(total_v / k, 4),
        "floor_cpu_s_per_candidate": round(total_f / k, 4),
        "overhead": round(total_v / total_f - 1, 4),
        "median_task_overhead": round(statistics.median(r["overhead"] for r in rows), 4),
        "parts_cpu_s_median": {
            n: round(statistics.median(v), 4)
            for n, v in _collect([r["parts_cpu_s"] for r in rows]).items()
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tasks", type=int, default=10, help="bundled tasks measured (0: none)")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--swebench", type=Path, help="SWE-bench rows: measure --instances too")
    parser.add_argument("--instances", default="", help="comma-separated runnable instance ids")
    parser.add_argument("--repo-url", default="https://github.com/{repo}.git")
    parser.add_argument("--repo-cache", type=Path)
    parser.add_argument("--env-spec", type=Path, help="env-check's spec file (by owner/name)")
    parser.add_argument("--env-cache", type=Path)
    args = parser.parse_args()
    if shutil.which("bwrap") is None:
        raise SystemExit("bubblewrap is not installed")
    tasks = sorted(p for p in EXAMPLES_DIR.iterdir() if (p / "hidden_tests").is_dir())
    tasks = tasks[: args.tasks]
    rows = []
    for task in tasks:
        row = bundled_task(task, args.python, args.repeats)
        rows.append(row)
        print(json.dumps(row))
    summary: dict[str, Any] = {"python": args.python}
    if rows:
        summary["bundled"] = _bundled_summary(rows)
    real = _swebench_rows(args) if args.swebench else []
    if real:
        real_v = statistics.mean(r["verifier_cpu_s"] for r in real)
        real_f = statistics.mean(r["floor_cpu_s"] for r in real)
        summary["swebench"] = {
            "instances": len(real),
            "verifier_cpu_s_per_candidate": round(real_v, 4),
            "floor_cpu_s_per_candidate": round(real_f, 4),
            "overhead": round(real_v / real_f - 1, 4),
        }
    print(json.dumps(summary, indent=2))
    if args.out:
        out = {"summary": summary, "tasks": rows, "swebench": real}
        args.out.write_text(json.dumps(out, indent=2) + "\n")


if __name__ == "__main__":
    main()
