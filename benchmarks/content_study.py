"""Glue between ``swebench_rerank.py`` and the content study: provisioning, the rows cache, printing."""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

from content_features import post_rows
from content_rerank import build, study

from agentic_rubrics.datasets.repos import RepoCache, RepoConfig

MAIN = (
    "random",
    "self_consistency",
    "static_rubric",
    "best_system_prior",
    "offline",
    "offline_content",
    "offline_all_features",
)


def content_results(
    args: argparse.Namespace,
    pool: Any,
    issue_only: list[Any],
    grounded: list[Any],
    offline_cv: dict[str, dict[str, float | None]],
    work: Path,
) -> dict[str, Any]:
    """The content study on the fully labelled instances of the issue-only run."""
    started = time.monotonic()
    cache = RepoCache.from_config(RepoConfig(url_template=args.repo_url, cache_dir=args.repo_cache))
    kept = {t.instance_id for t in issue_only}
    tasks = [t for t in pool.tasks if t.instance_id in kept]
    rows, missing, timings = post_rows(tasks, cache, work / "content_rows.jsonl")
    insts = build(
        tasks,
        {t.instance_id: t for t in issue_only},
        {t.instance_id: t for t in grounded},
        rows,
        {t.instance_id for t in tasks} - set(missing),
    )
    problems = {t.instance_id: t.problem_statement for t in tasks}
    out = study(insts, problems, offline_cv, args.resamples)
    out["repositories"] = {
        "with": sum(1 for i in insts if i.has_repo),
        "without": sum(1 for i in insts if not i.has_repo),
        "without_by_reason": dict(sorted(_count(missing.values()).items())),
    }
    out["timings"] = {**timings, "study_s": round(time.monotonic() - started, 1)}
    return out


def _count(values: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for v in values:
        out[v] = out.get(v, 0) + 1
    return out


def _line(name: str, m: dict[str, Any]) -> str:
    ci = m.get("best_at_16_ci") or m.get("best_at_pool_ci")
    auc = "n/a" if m["roc_auc"] is None else f"{m['roc_auc']:.3f}"
    interval = f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""
    return (
        f"  {name:<22} Best@16 {100 * m['best_at_k']['16']:5.1f} {interval:<14}"
        f" Best@pool {100 * m['best_at_pool']:5.1f}  AUC {auc}"
    )


def print_content(c: dict[str, Any]) -> None:
    print(f"content study: {c['repositories']}")
    for subset, methods in c["full_pools"].items():
        if methods:
            print(f" full pools, {subset} ({next(iter(methods.values()))['instances']} instances)")
            for name in MAIN:
                if name in methods:
                    print(_line(name, methods[name]))
    for fam, entry in c["single_generator"].items():
        print(f" single generator {fam} (mean pool {entry['pool_size_mean']})")
        for subset in ("all", "with_repository"):
            methods = entry.get(subset) or {}
            if methods:
                print(f"  {subset} ({next(iter(methods.values()))['instances']} instances)")
                for name in MAIN:
                    if name in methods:
                        m = methods[name]
                        ci = m["best_at_pool_ci"]
                        interval = f"[{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]" if ci else ""
                        auc = "n/a" if m["roc_auc"] is None else f"{m['roc_auc']:.3f}"
                        print(
                            f"  {name:<22} Best@pool {100 * m['best_at_pool']:5.1f} {interval:<14} AUC {auc}"
                        )
    p = c["source_predictability"]
    print(f" source family from one feature (majority baseline {p['majority_baseline']:.3f}):")
    for name, f in sorted(p["features"].items(), key=lambda kv: -kv[1]["accuracy"]):
        mark = "*" if f["in_offline_content"] else " "
        print(f"  {mark} {name:<32} {f['accuracy']:.3f}")
    print(" ablation (offline_content, LORO):")
    for group, a in c["ablation_offline_content"].items():
        w, al = a["without"]["all"], a["alone"]["all"]
        print(f"  {group:<20} without: Best@16 {100 * w['best_at_16']:.1f} AUC {w['roc_auc']:.3f}"
              f"   alone: Best@16 {100 * al['best_at_16']:.1f} AUC {al['roc_auc']:.3f}")  # fmt: skip
