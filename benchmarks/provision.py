"""Provisioning time of real repositories at SWE-bench base commits: first fetch against the cache.

    python benchmarks/provision.py --out benchmarks/results

The shallow mirrors in ``../shared/data/repos`` (``--data``) are unpacked to a temp folder and served as
``file:///…/{owner}__{name}.git``, the same code path as GitHub's ``https://github.com/{repo}.git``
(without the network). For each repository, in a fresh cache:

- ``cold``: the first commit — bare repository created, ``git fetch --depth 1`` by hash, tree exported;
- ``warm_repo``: the next commits — the bare repository exists, each commit fetched and exported (median);
- ``export_only``: the first commit again after deleting its export — no fetch, only the export
  (with and without ``durable``, the flush to disk before publishing);
- ``cached``: the first commit once more — the export exists, no git call, no lock (median of repeats).

Timings are wall-clock seconds on the machine that ran it; compare the ratios within one run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.repos import RepoCache
from agentic_rubrics.datasets.repos_store import remove_tree

HERE = Path(__file__).resolve().parent
REPOS = ("sympy/sympy", "astropy/astropy", "sphinx-doc/sphinx")


def base_commits(mirror: Path) -> list[str]:
    out = subprocess.run(
        ["git", "--git-dir", str(mirror), "for-each-ref", "--format=%(objectname)", "refs/base/"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return sorted(out.split())


def tree_size(root: Path) -> tuple[int, int]:
    files = size = 0
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            p = Path(dirpath) / name
            if not p.is_symlink():
                files += 1
                size += p.stat().st_size
    return files, size


def du(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def timed(cache: RepoCache, repo: str, sha: str) -> tuple[float, dict[str, Any]]:
    start = time.perf_counter()
    tree = cache.checkout(repo, sha)
    return time.perf_counter() - start, tree.record()


def measure(repo: str, mirrors: Path, work: Path, commits: int, repeats: int) -> dict[str, Any]:
    owner, name = repo.split("/")
    shas = base_commits(mirrors / f"{owner}__{name}.git")[: max(commits, 1)]
    template = f"file://{mirrors}/{{owner}}__{{name}}.git"
    root = work / f"cache-{owner}__{name}"
    cache = RepoCache(root, template)
    cold, cold_record = timed(cache, repo, shas[0])
    assert cold_record["fetch"] == "by_hash" and not cold_record["cached"], cold_record
    files, size = tree_size(cache.provision(repo, shas[0]))
    warm, warm_fetch = [], []
    for sha in shas[1:]:
        seconds, record = timed(cache, repo, sha)
        assert record["fetch"] == "by_hash", record
        warm.append(seconds)
        warm_fetch.append(record["fetch_seconds"])
    export_only = {}
    for durable in (True, False):
        remove_tree(root / "trees" / f"{owner}__{name}" / shas[0])
        seconds, record = timed(RepoCache(root, template, durable=durable), repo, shas[0])
        assert record["fetch"] == "none" and not record["cached"], record
        export_only["durable" if durable else "not_durable"] = round(seconds, 3)
    cached = []
    for _ in range(repeats):
        seconds, record = timed(cache, repo, shas[0])
        assert record["cached"], record
        cached.append(seconds)
    return {
        "commits_measured": len(shas),
        "tree_files": files,
        "tree_mib": round(size / 2**20, 1),
        "bare_repo_mib": round(du(root / "git") / 2**20, 1),
        "seconds": {
            "cold": round(cold, 3),
            "cold_fetch": cold_record["fetch_seconds"],
            "cold_export": cold_record["export_seconds"],
            "warm_repo_median": round(statistics.median(warm), 3) if warm else None,
            "warm_repo_fetch_median": round(statistics.median(warm_fetch), 3) if warm else None,
            "export_only": export_only,
            "cached_median": round(statistics.median(cached), 6),
        },
        "cached_over_cold": round(statistics.median(cached) / cold, 6),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared/data/repos")
    parser.add_argument("--out", type=Path, default=HERE / "results")
    parser.add_argument("--repos", nargs="*", default=list(REPOS))
    parser.add_argument("--commits", type=int, default=4, help="base commits per repository")
    parser.add_argument("--repeats", type=int, default=20, help="cached checkouts to time")
    args = parser.parse_args()
    missing = [
        r for r in args.repos if not (args.data / f"{r.replace('/', '__')}.git.tar").is_file()
    ]
    if missing:
        raise SystemExit(f"{args.data}: no tar for {', '.join(missing)} (see its README.md)")
    load_at_start = os.getloadavg()
    work = Path(tempfile.mkdtemp(prefix="provision-bench-"))
    try:
        mirrors = work / "mirrors"
        mirrors.mkdir()
        results = {}
        for repo in args.repos:
            with tarfile.open(args.data / f"{repo.replace('/', '__')}.git.tar") as tar:
                tar.extractall(mirrors, filter="data")
            results[repo] = measure(repo, mirrors, work, args.commits, args.repeats)
            print(repo, json.dumps(results[repo]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    git_version = subprocess.run(["git", "--version"], capture_output=True, text=True).stdout
    doc = {
        "command": "python benchmarks/provision.py --out benchmarks/results"
        + (f" --commits {args.commits}" if args.commits != 4 else ""),
        "url_template": "file:///<tmp>/mirrors/{owner}__{name}.git",
        "git": git_version.strip(),
        "cpu_count": os.cpu_count(),
        "load_average_1_5_15_min": {
            "start": [round(x, 2) for x in load_at_start],
            "end": [round(x, 2) for x in os.getloadavg()],
        },
        "repos": results,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "provision.json").write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
