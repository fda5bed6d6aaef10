"""Post-image analysis on real SWE-bench candidates: how they apply, and what their findings say.

    python benchmarks/postimage_stats.py --data ../shared/data/swebench/lite_candidates.jsonl.gz \\
        --repos ../shared/data/repos --out benchmarks/results/postimage_stats.json

For every instance whose repository tar (``<owner>__<name>.git.tar``) holds its base commit, the tree
at that commit is exported with ``git archive`` into a work folder, and ``analyze_patch`` runs on each
full-run candidate (instances with at least two, as in ``swebench_rerank.py``). Printed and recorded:
how candidates applied; the resolved rate of candidates that introduce a new pyflakes message (any, the
error-like kinds, each category) against the rest, over all candidates and within the instances that
have both kinds; the same for "removes a name the repository still uses"; CPU time per candidate
(this process plus its git/patch/grep children). Labels serve only these rates. Rates carry Wilson
95% intervals.
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.swebench import read_records
from agentic_rubrics.rubric.postimage import PostimageResult, analyze_patch

ERROR_LIKE = ("syntax_error", "undefined_name", "redefinition")


def wilson(k: int, n: int, z: float = 1.96) -> list[float] | None:
    """Wilson score interval of k successes in n trials; ``None`` for n = 0."""
    if n == 0:
        return None
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(max(0.0, centre - half), 4), round(min(1.0, centre + half), 4)]


def rate(rows: list[dict[str, Any]]) -> dict[str, Any]:
    k = sum(1 for r in rows if r["resolved"])
    n = len(rows)
    return {"n": n, "resolved": k, "rate": round(k / n, 4) if n else None, "ci95": wilson(k, n)}


def split(rows: list[dict[str, Any]], flag: str) -> dict[str, Any]:
    """Resolved rate with and without ``flag``, over all rows and within instances having both."""
    yes = [r for r in rows if r[flag]]
    no = [r for r in rows if not r[flag]]
    mixed = {r["instance_id"] for r in yes} & {r["instance_id"] for r in no}
    return {
        "with": rate(yes),
        "without": rate(no),
        "same_instances": {
            "instances": len(mixed),
            "with": rate([r for r in yes if r["instance_id"] in mixed]),
            "without": rate([r for r in no if r["instance_id"] in mixed]),
        },
    }


def row(
    iid: str, source: str, resolved: bool, res: PostimageResult, cpu_ms: float
) -> dict[str, Any]:
    cats = res.introduced_by_category()
    return {
        "instance_id": iid,
        "source": source,
        "resolved": resolved,
        "method": res.apply.method,
        "git_apply_error": res.apply.git_apply_error,
        "patch_error": res.apply.patch_error,
        "applied": res.applied,
        "fuzz": res.apply.hunks_fuzz,
        "offset": res.apply.hunks_offset,
        "categories": cats,
        "kinds": dict(Counter(m.kind for m in res.introduced)),
        "any_message": bool(cats),
        "error_like": any(c in cats for c in ERROR_LIKE),
        **{f"has_{c}": c in cats for c in (*ERROR_LIKE, "unused_import", "other")},
        "removed": len(res.removed_names),
        "removes_used": bool(res.removed_still_used),
        "removed_undecided": sum(1 for r in res.removed_names if r.still_used is None),
        "files": len(res.files),
        "symbols": len(res.changed_symbols),
        "reasons": list(res.reasons) + [x for f in res.files for x in f.reasons],
        "cpu_ms": round(cpu_ms, 2),
        "timings": res.timings.model_dump(),
    }


def export(mirror: Path, sha: str, dest: Path) -> bool:
    """The tree at ``sha`` into ``dest`` (``git archive | tar -x``); False if the commit is absent."""
    if subprocess.run(["git", "--git-dir", str(mirror), "cat-file", "-e", f"{sha}^{{commit}}"],
                      capture_output=True).returncode != 0:  # fmt: skip
        return False
    dest.mkdir(parents=True)
    archive = subprocess.Popen(
        ["git", "--git-dir", str(mirror), "archive", "--format=tar", sha], stdout=subprocess.PIPE
    )
    subprocess.run(["tar", "-x", "-C", str(dest)], stdin=archive.stdout, check=True)
    assert archive.stdout is not None
    archive.stdout.close()
    return archive.wait() == 0


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


def summarise(rows: list[dict[str, Any]], export_cpu: list[float]) -> dict[str, Any]:
    applied = [r for r in rows if r["applied"]]
    methods = Counter(r["method"] for r in rows)
    cpu = [r["cpu_ms"] for r in rows]
    phases = ("apply_ms", "python_ms", "symbols_ms", "usage_ms", "total_ms")
    scans = [r["timings"]["usage_ms"] for r in rows if r["removed"]]
    return {
        "candidates": len(rows),
        "instances": len({r["instance_id"] for r in rows}),
        "overall": rate(rows),
        "apply": {
            m: {**rate([r for r in rows if r["method"] == m]), "share": round(c / len(rows), 4)}
            for m, c in sorted(methods.items())
        },
        "apply_errors": {
            f"{m}: git apply {g}, patch {p}": c
            for (m, g, p), c in sorted(
                Counter(
                    (r["method"], r["git_apply_error"], r["patch_error"])
                    for r in rows
                    if r["git_apply_error"]
                ).items()
            )
        },
        "fuzz_hunks_candidates": sum(1 for r in applied if r["fuzz"]),
        "offset_hunks_candidates": sum(1 for r in applied if r["offset"]),
        "applied": {
            "overall": rate(applied),
            "introduces_any_message": split(applied, "any_message"),
            "introduces_error_like": split(applied, "error_like"),
            **{
                f"introduces_{c}": split(applied, f"has_{c}")
                for c in (*ERROR_LIKE, "unused_import", "other")
            },
            "removes_a_name_still_used": split(applied, "removes_used"),
            "removes_any_name": sum(1 for r in applied if r["removed"]),
            "removed_undecided_candidates": sum(1 for r in applied if r["removed_undecided"]),
            "kinds": dict(sum((Counter(r["kinds"]) for r in applied), Counter()).most_common()),
        },
        "reasons": dict(Counter(x for r in rows for x in r["reasons"]).most_common()),
        "cpu_ms_per_candidate": {
            "mean": round(statistics.fmean(cpu), 2) if cpu else None,
            "median": percentile(cpu, 0.5) if cpu else None,
            "p90": percentile(cpu, 0.9) if cpu else None,
            "max": round(max(cpu), 2) if cpu else None,
        },
        "wall_ms_median_by_phase": {
            p: percentile([r["timings"][p] for r in rows], 0.5) if rows else None for p in phases
        },
        "wall_ms_p90_by_phase": {
            p: percentile([r["timings"][p] for r in rows], 0.9) if rows else None for p in phases
        },
        "usage_scan_ms_when_names_removed": {
            "candidates": len(scans),
            "median": percentile(scans, 0.5) if scans else None,
            "p90": percentile(scans, 0.9) if scans else None,
            "max": round(max(scans), 2) if scans else None,
        },
        "export_cpu_ms_per_instance_median": percentile(export_cpu, 0.5) if export_cpu else None,
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
    parser.add_argument("--rows", type=Path, help="also write one JSON row per candidate here")
    parser.add_argument("--work", type=Path, help="work folder (default: a temporary one)")
    parser.add_argument("--limit", type=int, help="at most this many instances (a quick look)")
    parser.add_argument("--min-candidates", type=int, default=2)
    args = parser.parse_args(argv)
    for path in (args.data, args.repos):
        if not path.exists():
            print(f"error: {path} does not exist", file=sys.stderr)
            return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="postimage-stats-"))
    work.mkdir(parents=True, exist_ok=True)
    mirrors: dict[str, Path | None] = {}
    skipped: Counter[str] = Counter()
    rows: list[dict[str, Any]] = []
    export_cpu: list[float] = []
    started = time.perf_counter()
    done = 0
    for _, record in read_records(args.data):
        candidates = [c for c in record["candidates"] if c.get("source_kind") in (None, "full_run")]
        if len(candidates) < args.min_candidates:
            continue
        if args.limit is not None and done >= args.limit:
            break
        repo = str(record["repo"])
        if repo not in mirrors:
            tar = args.repos / f"{repo.replace('/', '__')}.git.tar"
            mirrors[repo] = None
            if tar.exists():
                subprocess.run(["tar", "-xf", str(tar), "-C", str(work)], check=True)
                mirrors[repo] = work / f"{repo.replace('/', '__')}.git"
        mirror = mirrors[repo]
        if mirror is None:
            skipped["no_repository"] += 1
            continue
        tree = work / "tree"
        shutil.rmtree(tree, ignore_errors=True)
        c0 = cpu_seconds()
        if not export(mirror, str(record["base_commit"]), tree):
            skipped["base_commit_missing"] += 1
            continue
        export_cpu.append((cpu_seconds() - c0) * 1000)
        done += 1
        for c in candidates:
            c0 = cpu_seconds()
            result = analyze_patch(tree, c["patch"])
            cpu_ms = (cpu_seconds() - c0) * 1000
            rows.append(
                row(record["instance_id"], c["source"], bool(c["resolved"]), result, cpu_ms)
            )
        print(f"{done:4d} {record['instance_id']}: {len(candidates)} candidates", file=sys.stderr)
    shutil.rmtree(work / "tree", ignore_errors=True)
    if args.work is None:
        shutil.rmtree(work, ignore_errors=True)
    summary = {
        "data": args.data.name,
        "command": "python benchmarks/postimage_stats.py " + " ".join(argv or sys.argv[1:]),
        "instances_skipped": dict(skipped),
        "wall_s": round(time.perf_counter() - started, 1),
        **summarise(rows, export_cpu),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(summary, indent=2) + "\n")
    if args.rows:
        args.rows.write_text("".join(json.dumps(r) + "\n" for r in rows))
    print(report(summary))
    return 0


def report(s: dict[str, Any]) -> str:
    def fmt(r: dict[str, Any]) -> str:
        if not r["n"]:
            return "n=0"
        lo, hi = r["ci95"]
        return f"{r['resolved']}/{r['n']} = {100 * r['rate']:.1f}% [{100 * lo:.1f}, {100 * hi:.1f}]"

    lines = [
        f"{s['candidates']} candidates, {s['instances']} instances "
        f"(skipped: {s['instances_skipped'] or 'none'}); resolved overall {fmt(s['overall'])}",
        "applied: " + ", ".join(f"{m} {v['n']} ({fmt(v)})" for m, v in s["apply"].items()),
    ]
    a = s["applied"]
    for key, value in a.items():
        if isinstance(value, dict) and "with" in value:
            same = value["same_instances"]
            lines.append(
                f"{key}: with {fmt(value['with'])} | without {fmt(value['without'])} | "
                f"same {same['instances']} instances: {fmt(same['with'])} vs {fmt(same['without'])}"
            )
    cpu = s["cpu_ms_per_candidate"]
    lines.append(
        f"CPU ms per candidate: median {cpu['median']}, p90 {cpu['p90']}, max {cpu['max']}"
    )
    lines.append(f"reasons: {s['reasons']}")
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
