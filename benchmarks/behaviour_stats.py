"""Which real SWE-bench candidates change no behaviour of the program, and does a resolved one ever?

    python benchmarks/behaviour_stats.py --data ../shared/data/swebench/lite_candidates.jsonl.gz \\
        --repos ../shared/data/repos --out benchmarks/results/behaviour_stats_lite.json

Every full-run candidate of the file is read as a run reads it (``rubric/behaviour.py``): on its
instance's tree at the base commit where the repository tar holds it (``git archive`` into a work
folder, ``analyze_patch``), else from its diff alone. Recorded: per basis, how many candidates are
``changed``, ``unchanged`` or undecided, resolved and not; every resolved candidate that is flagged
``unchanged`` with what it changed (the defence must cost real fixes nothing: each one needs a reason
in benchmarks/README.md); the post-image's milliseconds spent on the normal forms (``behaviour_ms``).
Labels serve only these counts.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from postimage_stats import export

from agentic_rubrics.datasets.swebench import read_records
from agentic_rubrics.patch import is_doc_path, is_empty_patch, is_test_path, parse_patch
from agentic_rubrics.rubric.behaviour import diff_behaviour, tree_behaviour
from agentic_rubrics.rubric.postimage import analyze_patch


def _word(found: bool | None) -> str:
    return "undecided" if found is None else "changed" if found else "unchanged"


def _what(patch: str) -> dict[str, int]:
    """What a flagged candidate touches, by kind of file (tests, docs, Python, other)."""
    kinds: Counter[str] = Counter()
    try:
        files = parse_patch(patch).files
    except Exception:
        return {"not_a_diff": 1}
    for f in files:
        p = f.path
        kind = (
            "tests"
            if is_test_path(p)
            else "docs"
            if is_doc_path(p)
            else "python"
            if p.endswith(".py")
            else "other"
        )
        kinds[kind] += 1
    return dict(kinds)


def _mirror(repo: str, repos: Path, work: Path, cache: dict[str, Path | None]) -> Path | None:
    if repo not in cache:
        tar = repos / f"{repo.replace('/', '__')}.git.tar"
        cache[repo] = None
        if tar.exists():
            subprocess.run(["tar", "-xf", str(tar), "-C", str(work)], check=True)
            cache[repo] = work / f"{repo.replace('/', '__')}.git"
    return cache[repo]


def rows_of(data: Path, repos: Path, work: Path, limit: int | None) -> list[dict[str, Any]]:
    """One row per full-run candidate: its behaviour, on the tree where there is one."""
    mirrors: dict[str, Path | None] = {}
    out: list[dict[str, Any]] = []
    for n, (_, record) in enumerate(read_records(data)):
        if limit is not None and n >= limit:
            break
        candidates = [c for c in record["candidates"] if c.get("source_kind") in (None, "full_run")]
        mirror = _mirror(str(record["repo"]), repos, work, mirrors)
        tree = work / "tree"
        shutil.rmtree(tree, ignore_errors=True)
        has_tree = mirror is not None and export(mirror, str(record["base_commit"]), tree)
        for c in candidates:
            patch = c["patch"] or ""
            row: dict[str, Any] = {
                "instance_id": record["instance_id"],
                "source": c["source"],
                "resolved": bool(c["resolved"]),
                "empty": is_empty_patch(patch),
            }
            found, basis, ms = None, "diff", None
            if has_tree and not row["empty"]:
                result = analyze_patch(tree, patch)
                found, ms = tree_behaviour(result), result.timings.behaviour_ms
                basis = "tree" if found is not None else "diff"
            if found is None and not row["empty"]:
                found = diff_behaviour(patch)
            row.update(behaviour=_word(found), basis=basis, behaviour_ms=ms)
            if found is False:
                row["touches"] = _what(patch)
            out.append(row)
        print(
            f"{n + 1:4d} {record['instance_id']}: {len(candidates)} ({'tree' if has_tree else 'diff'})",
            file=sys.stderr,
        )
    shutil.rmtree(work / "tree", ignore_errors=True)
    return out


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    real = [r for r in rows if not r["empty"]]
    table = Counter((r["basis"], r["behaviour"], r["resolved"]) for r in real)
    ms = [r["behaviour_ms"] for r in real if r["behaviour_ms"] is not None]
    flagged = [r for r in real if r["behaviour"] == "unchanged"]
    return {
        "candidates": len(rows),
        "empty": len(rows) - len(real),
        "instances": len({r["instance_id"] for r in rows}),
        "by_basis": {
            basis: {
                word: {
                    "resolved": table[(basis, word, True)],
                    "unresolved": table[(basis, word, False)],
                }
                for word in ("changed", "unchanged", "undecided")
            }
            for basis in ("tree", "diff")
        },
        "unchanged": {
            "candidates": len(flagged),
            "resolved": sum(1 for r in flagged if r["resolved"]),
            "touches": dict(sum((Counter(r["touches"]) for r in flagged), Counter())),
        },
        "resolved_flagged_unchanged": [
            {k: r[k] for k in ("instance_id", "source", "basis", "touches")}
            for r in flagged
            if r["resolved"]
        ],
        "behaviour_ms_per_candidate": {
            "median": round(statistics.median(ms), 3) if ms else None,
            "p90": round(sorted(ms)[int(0.9 * (len(ms) - 1))], 3) if ms else None,
            "max": round(max(ms), 3) if ms else None,
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True, help="candidates .jsonl(.gz)")
    parser.add_argument(
        "--repos", type=Path, required=True, help="folder of <owner>__<name>.git.tar"
    )
    parser.add_argument("--out", type=Path, required=True, help="results JSON to write")
    parser.add_argument("--limit", type=int, help="at most this many instances (a quick look)")
    args = parser.parse_args(argv)
    for path in (args.data, args.repos):
        if not path.exists():
            print(f"error: {path} does not exist", file=sys.stderr)
            return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="behaviour-stats-") as tmp:
        rows = rows_of(args.data, args.repos, Path(tmp), args.limit)
    summary = {
        "data": args.data.name,
        "command": "python benchmarks/behaviour_stats.py " + " ".join(argv or sys.argv[1:]),
        "wall_s": round(time.perf_counter() - started, 1),
        **summarise(rows),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    print(json.dumps({k: summary[k] for k in ("candidates", "unchanged", "by_basis")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
