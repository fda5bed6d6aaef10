"""Sandboxes on the three biggest SWE-bench repositories: start time and the agent's tools' times.

    python benchmarks/sandbox_repos.py --out benchmarks/results

For sympy, astropy and sphinx (the tars in ``../shared/data/repos``, ``--data``), one base commit is
fetched into a fresh cache through ``file://`` (as from GitHub) and exported. Then, in the same run:

- ``bubblewrap_shared``: the isolated sandbox laying its writable overlay over the cached tree (no copy:
  what a run with ``--repo-url`` does);
- ``bubblewrap_copy``: the same sandbox over a copy of the tree (what a ``repo_path`` checkout gets);
- ``local_copy``: the unisolated copy (the baseline: no namespaces).

For each: the start (median of ``--starts``), and the median of ``--repeats`` calls of each agent tool as
the agent calls it (:mod:`agentic_rubrics.explore.tools`): ``search`` for a common pattern over the whole
tree (thousands of matches, one page returned), ``view`` of the first and of a middle page of the
biggest Python file, ``bash`` running ``grep -rln`` over the tree, and the static explorer's index (one
``find``, one ``grep`` of every definition). Observation sizes show the cap holds. Wall-clock times on
the machine that ran it: compare within one run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import statistics
import tarfile
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.repos import RepoCache
from agentic_rubrics.explore import tools
from agentic_rubrics.explore.codeindex import CodeIndex
from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox, bwrap_problem
from agentic_rubrics.sandbox.local import LocalCopySandbox

HERE = Path(__file__).resolve().parent
REPOS = ("sympy/sympy", "astropy/astropy", "sphinx-doc/sphinx")
CAP = 10_000  # the agent's default max_observation
PROMPT = load_prompt("rubric_agent")


def biggest_python_file(root: Path) -> str:
    files = [p for p in root.rglob("*.py") if p.is_file() and not p.is_symlink()]
    return str(max(files, key=lambda p: p.stat().st_size).relative_to(root))


async def median_ms(fn: Callable[[], Awaitable[Any]], repeats: int) -> tuple[float, Any]:
    times, last = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        last = await fn()
        times.append((time.perf_counter() - t) * 1000)
    return round(statistics.median(times), 1), last


async def measure(make: Callable[[], Any], big: str, starts: int, repeats: int) -> dict[str, Any]:
    start_times = []
    for _ in range(starts):
        t = time.perf_counter()
        box = await asyncio.to_thread(make)
        start_times.append((time.perf_counter() - t) * 1000)
        await box.close()
    box = await asyncio.to_thread(make)
    try:
        lines = (await box.read_file(big, max_bytes=tools.MAX_VIEW_BYTES)).count("\n")
        middle = f"{big} {lines // 2} {lines // 2 + 199}"
        calls: dict[str, Callable[[], Awaitable[Any]]] = {
            "search": lambda: tools.search(
                box, "def __init__\\(", max_chars=CAP, timeout=120, prompt=PROMPT
            ),
            "view_first_page": lambda: tools.view(box, big, max_chars=CAP, prompt=PROMPT),
            "view_middle_page": lambda: tools.view(box, middle, max_chars=CAP, prompt=PROMPT),
            "bash_grep": lambda: tools.bash(
                box, "grep -rln 'import os' --include='*.py' . | wc -l", max_chars=CAP, timeout=120
            ),
            "static_index": lambda: CodeIndex(box).build(),
        }
        out: dict[str, Any] = {"start_ms": round(statistics.median(start_times), 1)}
        for name, fn in calls.items():
            ms, result = await median_ms(fn, repeats)
            out[f"{name}_ms"] = ms
            if isinstance(result, tools.ToolResult):
                out[f"{name}_chars"] = len(result.output)
                if name == "search":
                    out["search_note"] = result.note
        return out
    finally:
        await box.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared/data/repos")
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--repos", nargs="*", default=list(REPOS))
    parser.add_argument("--starts", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    problem = bwrap_problem()
    if problem is not None:
        raise SystemExit(f"bubblewrap cannot run here: {problem}")
    work = Path(tempfile.mkdtemp(prefix="sandbox-repos-"))
    work.chmod(0o755)  # the sandbox's unprivileged user walks down to the cached trees
    load_at_start = os.getloadavg()
    results: dict[str, Any] = {}
    try:
        (work / "mirrors").mkdir()
        for repo in args.repos:
            key = repo.replace("/", "__")
            with tarfile.open(args.data / f"{key}.git.tar") as tar:
                tar.extractall(work / "mirrors", filter="data")
            mirror = work / "mirrors" / f"{key}.git"
            sha = sorted(p.name for p in (mirror / "refs" / "base").iterdir())[0]
            cache = RepoCache(work / "cache", f"file://{work}/mirrors/{{owner}}__{{name}}.git")
            tree = cache.checkout(repo, sha).path
            big = biggest_python_file(tree)
            files = sum(1 for p in tree.rglob("*") if p.is_file())
            row: dict[str, Any] = {"commit": sha, "files": files, "biggest_python_file": big}
            for name, make in (
                ("local_copy", lambda t=tree: LocalCopySandbox(t)),
                ("bubblewrap_copy", lambda t=tree: BubblewrapSandbox(t)),
                ("bubblewrap_shared", lambda t=tree: BubblewrapSandbox(t, shared=True)),
            ):
                row[name] = asyncio.run(measure(make, big, args.starts, args.repeats))
            shared, copy = row["bubblewrap_shared"], row["bubblewrap_copy"]
            row["start_copy_over_shared"] = round(copy["start_ms"] / shared["start_ms"], 1)
            results[repo] = row
            print(repo, json.dumps(row), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    doc = {
        "command": "python benchmarks/sandbox_repos.py --out benchmarks/results",
        "observation_cap_chars": CAP,
        "cpus": os.cpu_count(),
        "as_root": os.geteuid() == 0,
        "load_average_1_5_15_min": {
            "start": [round(x, 2) for x in load_at_start],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        "repos": results,
    }
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "sandbox_repos.json").write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
