"""Glue between ``swebench_rerank.py`` and the content study: provisioning, the rows cache, the study
(every method on the full pools and the single-generator slices, paired differences), printing."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from content_features import post_rows, task_trees
from content_fit import content_weights, loro_weights, provenance
from content_rerank import (
    FIT_FAMILIES,
    Inst,
    ablation,
    apply_model,
    build,
    by_subset,
    loro_models,
    predictability,
    rankings,
    slice_families,
    slice_pools,
)
from default_ranking import default_provenance, default_ranking, library_ranking

from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.content import CONTENT_FEATURES
from agentic_rubrics.rank.offline import OFFLINE_FEATURES, offline_ranking

Ranking = Callable[[Inst], dict[str, float | None]]

MAIN = (
    "default",
    "random",
    "self_consistency",
    "behaviour_consensus",
    "static_rubric",
    "best_system_prior",
    "offline",
    "offline_shipped",
    "offline_content",
    "offline_content_shipped",
    "offline_content_full_pools",
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
    trees = task_trees(args.data, args.repo_url, args.repo_cache, args.approximate_trees)
    kept = {t.instance_id for t in issue_only}
    tasks = [t for t in pool.tasks if t.instance_id in kept]
    rows, missing, approximate, timings = post_rows(tasks, trees, work / "content_rows.jsonl")
    insts = build(
        tasks,
        {t.instance_id: t for t in issue_only},
        {t.instance_id: t for t in grounded},
        rows,
        {t.instance_id for t in tasks} - set(missing) - approximate,
        frozenset(approximate),
    )
    problems = {t.instance_id: t.problem_statement for t in tasks}
    command = "python benchmarks/swebench_rerank.py " + " ".join(sys.argv[1:])
    out = study(insts, problems, offline_cv, args.resamples,
                lambda slices: provenance(args.data, slices, command))  # fmt: skip
    shipped = out.pop("shipped_weights")
    if args.write_weights:
        args.write_weights.write_text(json.dumps(shipped.to_json(), indent=2) + "\n")
    out["shipped_weights"] = {
        k: v for k, v in shipped.to_json().items() if k != "fit_instance_sha256"
    }
    out["repositories"] = {
        "with": sum(1 for i in insts if i.has_repo),
        "without": sum(1 for i in insts if not i.has_repo),
        "approximate_tree": sum(1 for i in insts if i.approximate_tree),
        "approximate_rule": args.approximate_trees,
        "without_by_reason": dict(sorted(_count(missing.values()).items())),
    }
    out["default_provenance"] = default_provenance()
    out["timings"] = {**timings, "study_s": round(time.monotonic() - started, 1)}
    return out


def study(
    insts: list[Inst],
    problems: dict[str, str],
    offline_cv: dict[str, dict[str, float | None]],
    resamples: int,
    fitted_on: Callable[[dict[str, list[Inst]]], dict[str, Any]],
) -> dict[str, Any]:
    """Every method on the full pools and on the single-generator slices, and the content weights
    fitted on the slices (``shipped_weights``: on all of them; the figures: leaving the repository
    out). ``fitted_on``: the provenance of a fit on these pools by family."""
    # every family with enough pools in this file is measured; the content weights are fitted as
    # shipped, on the families they were fitted on
    slices = {fam: slice_pools(insts, fam, problems) for fam in slice_families(insts)}
    fit_slices = {f: slices.get(f) or slice_pools(insts, f, problems) for f in FIT_FAMILIES}
    every = [p for ps in fit_slices.values() for p in ps]
    single = loro_weights(every, [i.repo for i in insts])
    shipped = content_weights(every, fitted_on(fit_slices))
    offline_refit = loro_models(insts, OFFLINE_FEATURES)
    extra = {"offline": lambda i: {c: offline_cv[i.instance_id].get(c) for c in i.labels}}
    # ``default``: the library's no-model default as shipped (its selector, its shipped weights)
    methods = {
        "default": default_ranking,
        "behaviour_consensus": lambda i: library_ranking("behaviour_consensus", i),
        **rankings(insts, extra, single, shipped),
    }
    out: dict[str, Any] = {
        "features": list(CONTENT_FEATURES),
        "shipped_weights": shipped,
        "full_pools": by_subset(insts, methods, resamples),
        "ablation_offline_content": ablation(insts),
        "source_predictability": predictability(insts),
        "single_generator": {},
        "slice_families": slice_families(insts),
        "full_pools_paired": {
            "behaviour_consensus - self_consistency": paired(
                insts, methods["behaviour_consensus"], methods["self_consistency"], resamples
            )
        },
    }
    # on a slice, ``offline`` is the shipped ranking's features refitted on the other repositories'
    # full pools (its weights are fitted on mixed pools), computed on the slice's pool;
    # ``offline_shipped`` the library's weights as they are (fitted on all of this file: in-sample)
    sliced_methods = {
        **methods,
        "offline": lambda i: apply_model(
            offline_refit[i.repo], i.rows, OFFLINE_FEATURES, list(i.labels)
        ),
        "offline_shipped": lambda i: offline_ranking(i.features, i.s),
    }
    for fam, pools in slices.items():
        if pools:
            out["single_generator"][fam] = {
                "pool_size_mean": round(sum(len(p.labels) for p in pools) / len(pools), 2),
                **by_subset(pools, sliced_methods, resamples),
                "paired": {
                    f"{one} - {other}": paired(
                        pools, sliced_methods[one], sliced_methods[other], resamples
                    )
                    for one, other in (
                        ("default", "self_consistency"),
                        ("behaviour_consensus", "self_consistency"),
                        ("offline_content", "self_consistency"),
                        ("offline_content", "offline"),
                        ("offline_content", "offline_shipped"),
                    )
                },
            }
    return out


def paired(pools: list[Inst], a: Ranking, b: Ranking, resamples: int) -> dict[str, Any]:
    """Best@pool of ``a`` minus ``b`` on the same pools: the mean and its paired bootstrap interval,
    and in how many pools each picks better."""
    diffs = []
    for p in pools:
        ids = list(p.labels)
        ys = [int(p.labels[c]) for c in ids]
        ra, rb = a(p), b(p)
        best = [metrics.best_at_k([r.get(c) for c in ids], ys, len(ids)) or 0.0 for r in (ra, rb)]
        diffs.append(best[0] - best[1])
    found = metrics.bootstrap_ci(diffs, metrics.mean, n_resamples=resamples) if resamples else None
    return {
        "mean": metrics.mean(diffs),
        "ci": [round(found[0], 4), round(found[1], 4)] if found else None,
        "a_better": sum(1 for d in diffs if d > 0),
        "b_better": sum(1 for d in diffs if d < 0),
    }


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
        for name, d in entry.get("paired", {}).items():
            ci = d["ci"]
            interval = f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else ""
            print(f"  paired {name:<34} {100 * d['mean']:+5.1f} {interval}"
                  f" (better in {d['a_better']}, worse in {d['b_better']})")  # fmt: skip
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
