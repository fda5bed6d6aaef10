"""What a change of the library does to every selector's Best@K on the same tasks: two run folders.

    # the version before (a worktree at its commit, with its own venv) and this one, same settings
    git worktree add /tmp/before 91392be && make -C /tmp/before dev
    .venv/bin/agentic-rubrics import-swebench --candidates ../shared/data/swebench/lite_candidates.jsonl.gz \\
        --out /tmp/ge/lite.jsonl
    for v in before after; do BIN=$([ $v = before ] && echo /tmp/before/.venv/bin || echo .venv/bin)
      $BIN/agentic-rubrics run --tasks /tmp/ge/lite.jsonl --out /tmp/ge/${v}_lite -q \\
        --repo-url 'file:///tmp/mirrors/{owner}__{name}.git' --repo-cache /tmp/ge/cache_$v \\
        --selectors self_consistency,offline_content,offline,rubric,random; done
    .venv/bin/python benchmarks/guard_effect.py /tmp/ge/before_lite /tmp/ge/after_lite \\
        --out benchmarks/results/guard_effect_lite.json

Per selector: Best@K of each run as its report.json states it, and the paired difference (after minus
before) per task with a 95% percentile interval over tasks (10,000 resamples, seeded), from each
candidate's ranking value in scores.jsonl (the picks of each version, exact Best@K); the tasks whose pick
changed. Both folders must hold the same tasks and candidates (checked).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path
from typing import Any

from agentic_rubrics.rank.metrics import best_at_k
from agentic_rubrics.runfolder.files import read_jsonl


def _pools(folder: Path) -> dict[str, dict[str, tuple[dict[str, float | None], bool]]]:
    """instance -> candidate -> (each selector's ranking value, resolved)."""
    out: dict[str, dict[str, tuple[dict[str, float | None], bool]]] = {}
    for _, row in read_jsonl(folder / "scores.jsonl"):
        out.setdefault(row["instance_id"], {})[row["candidate_id"]] = (
            row["ranking"],
            bool(row["resolved"]),
        )
    return out


def _task_best(pool: dict[str, tuple[dict[str, float | None], bool]], name: str, k: int) -> float:
    ids = sorted(pool)
    found = best_at_k([pool[c][0].get(name) for c in ids], [pool[c][1] for c in ids], k)
    assert found is not None
    return found


def _interval(diffs: list[float], seed: int = 0, resamples: int = 10_000) -> list[float]:
    rng = random.Random(seed)
    n = len(diffs)
    means = sorted(sum(rng.choice(diffs) for _ in range(n)) / n for _ in range(resamples))
    return [round(means[int(0.025 * resamples)], 4), round(means[int(0.975 * resamples) - 1], 4)]


def compare(before: Path, after: Path, k: int) -> dict[str, Any]:
    b, a = _pools(before), _pools(after)
    if {i: sorted(p) for i, p in b.items()} != {i: sorted(p) for i, p in a.items()}:
        raise SystemExit("error: the two run folders hold different tasks or candidates")
    reports = [json.loads((f / "report.json").read_text()) for f in (before, after)]
    out: dict[str, Any] = {"tasks": len(a), "k": k, "selectors": {}}
    for name in reports[1]["selectors"]:
        diffs = [_task_best(a[i], name, k) - _task_best(b[i], name, k) for i in sorted(a)]
        key = str(k)
        out["selectors"][name] = {
            "before": reports[0]["selectors"].get(name, {}).get("best_at_k", {}).get(key),
            "after": reports[1]["selectors"][name]["best_at_k"].get(key),
            "difference": round(sum(diffs) / len(diffs), 4),
            "difference_ci95": _interval(diffs),
            "tasks_changed": sum(1 for d in diffs if abs(d) > 1e-12),
            "tasks_better": sum(1 for d in diffs if d > 1e-12),
            "tasks_worse": sum(1 for d in diffs if d < -1e-12),
        }
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--k", type=int, default=16)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    found = {
        "command": "python benchmarks/guard_effect.py " + " ".join(argv or sys.argv[1:]),
        **compare(args.before, args.after, args.k),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(found, indent=2) + "\n")
    for name, row in found["selectors"].items():
        print(
            f"{name:18} Best@{args.k} {row['before']:.4f} -> {row['after']:.4f}  "
            f"diff {100 * row['difference']:+.2f} {[round(100 * x, 2) for x in row['difference_ci95']]}"
            f"  tasks better {row['tasks_better']}, worse {row['tasks_worse']}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
