"""Self-consistency on the SWE-bench development files: the library's measure against difflib's.

    python benchmarks/similarity_speed.py --out benchmarks/results

For every instance of the Lite and Verified development files (full-run candidates, at least two, as
``swebench_rerank.py`` reads them), each candidate's self-consistency is computed twice in this process:
by :func:`agentic_rubrics.rank.rerank.self_consistency_ranking` (rapidfuzz's normalized Indel similarity,
2 LCS / total, once per distinct patch, the first 10,000 changed lines), and by the earlier definition,
reproduced here (``difflib.SequenceMatcher(None, a, b, autojunk=False).ratio()`` for every pair of
candidates). Reported: CPU seconds of each, how many candidates' values differ and by how much at most,
and the instance with the largest patches (timed on its own).
"""

from __future__ import annotations

import argparse
import difflib
import json
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.swebench import PoolOptions, load_candidates_file
from agentic_rubrics.patch import changed_lines
from agentic_rubrics.rank.agreement import line_agreement, self_consistency_ranking

FILES = {"lite": "lite_candidates.jsonl.gz", "verified": "verified_candidates.jsonl.gz"}


def difflib_consistency(patches: Mapping[str, str]) -> dict[str, float | None]:
    """Self-consistency as it was: difflib's ratio of changed lines, every pair of candidates."""
    lines = {cid: changed_lines(p) for cid, p in patches.items()}
    ids = list(lines)
    sims: dict[tuple[str, str], float] = {}
    for i, a in enumerate(ids):
        for b in ids[i + 1 :]:
            r = difflib.SequenceMatcher(None, lines[a], lines[b], autojunk=False).ratio()
            sims[(a, b)] = sims[(b, a)] = r
    out: dict[str, float | None] = {}
    for a in ids:
        others = [sims[(a, b)] for b in ids if b != a]
        out[a] = sum(others) / len(others) if others else None
    return out


def compare(path: Path) -> dict[str, Any]:
    pool = load_candidates_file(path, PoolOptions())
    cpu = {"difflib": 0.0, "indel": 0.0}
    changed = total = capped = 0
    largest: tuple[int, str] = (0, "")
    worst: dict[str, Any] = {"difference": 0.0}
    for task in pool.tasks:
        patches = {c.id: c.patch for c in task.candidates}
        t0 = time.process_time()
        before = difflib_consistency(patches)
        t1 = time.process_time()
        now = self_consistency_ranking(patches)
        t2 = time.process_time()
        cpu["difflib"] += t1 - t0
        cpu["indel"] += t2 - t1
        capped += len(line_agreement(patches)[1])
        largest = max(largest, (max(len(p) for p in patches.values()), task.instance_id))
        for cid, old in before.items():
            total += 1
            new = now[cid]
            if old is None or new is None:
                continue
            diff = abs(old - new)
            changed += diff > 1e-12
            if diff > worst["difference"]:
                worst = {"difference": diff, "instance_id": task.instance_id, "difflib": old,
                         "indel": new}  # fmt: skip
    task = next(t for t in pool.tasks if t.instance_id == largest[1])
    patches = {c.id: c.patch for c in task.candidates}
    t0 = time.process_time()
    difflib_consistency(patches)
    t1 = time.process_time()
    self_consistency_ranking(patches)
    t2 = time.process_time()
    return {
        "tasks": len(pool.tasks),
        "candidates": total,
        "cpu_s": {k: round(v, 3) for k, v in cpu.items()},
        "values_changed": changed,
        "largest_change": worst,
        "capped_candidates": capped,
        "largest_patch": {
            "instance_id": task.instance_id,
            "bytes": largest[0],
            "changed_lines": max(len(changed_lines(p)) for p in patches.values()),
            "cpu_s": {"difflib": round(t1 - t0, 3), "indel": round(t2 - t1, 3)},
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data/swebench"))
    parser.add_argument("--out", type=Path, help="write similarity_speed.json here")
    args = parser.parse_args(argv)
    results: dict[str, Any] = {
        "command": "python benchmarks/similarity_speed.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "files": {},
    }
    for name, file in FILES.items():
        if not (args.data_dir / file).exists():
            print(f"{args.data_dir / file}: not found, skipped")
            continue
        r = results["files"][name] = compare(args.data_dir / file)
        big = r["largest_patch"]
        print(
            f"{name}: {r['candidates']} candidates; CPU difflib {r['cpu_s']['difflib']:.2f} s,"
            f" Indel {r['cpu_s']['indel']:.3f} s; {r['values_changed']} values differ, at most by"
            f" {r['largest_change']['difference']:.4f}; {r['capped_candidates']} capped;"
            f" {big['instance_id']} ({big['bytes']} bytes, {big['changed_lines']} changed lines):"
            f" {big['cpu_s']['difflib']:.2f} s -> {big['cpu_s']['indel']:.3f} s"
        )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "similarity_speed.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
