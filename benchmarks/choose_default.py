"""Choose the no-model default selector out of sample: nested cross-validation on both development files.

    python benchmarks/choose_default.py \\
        --lite ../shared/data/swebench/lite_candidates.jsonl.gz --lite-work /tmp/work_lite \\
        --verified ../shared/data/swebench/verified_candidates.jsonl.gz --verified-work /tmp/work_ver \\
        --repo-url 'file:///tmp/mirrors/{owner}__{name}.git' --repo-cache /tmp/cache \\
        --out benchmarks/results/choose_default

Each ``--*-work`` folder is one ``swebench_rerank.py --content --work WORK`` made (the issue-only and the
grounded static run folders and the post-image rows cache); nothing is rerun here.

**Procedure.** The instances of both files are pooled (an instance in both counts once in a fit) and
split into outer folds by repository (leave one repository out). For each outer fold every candidate
method is fitted on the other repositories alone — every fit, feature choice and hyper-parameter choice
inside inner folds by repository of those training instances — and ranks the held-out repository's
pools: each file's full pools, and its single-generator slices (an instance's candidates of one source
family, at least two; features recomputed on the slice; families with at least ``MIN_SLICE_POOLS``
pools in the file are reported). Every figure is on held-out pools; Best@16 per pool, paired with
self-consistency on the same pools, with percentile bootstrap intervals over pools.

**Rule.** A method replaces self-consistency as the default only if its paired interval lies above zero
on the full pools of **both** files — at a family-wise 95% level (Bonferroni over the methods that
compete) — and its mean is not below self-consistency on **any** single-generator slice. Among several
that pass, the one with the highest smaller lower bound. Otherwise self-consistency is the default.
Methods whose shipped weights were fitted on these files (``*_shipped``, and ``default`` when it has
weights) are shown for reference only: their figures here are in-sample.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from choose_methods import METHODS
from content_features import post_rows, task_trees
from content_rerank import MIN_SLICE_POOLS, build, slice_families, slice_pools
from default_ranking import DEFAULT

from agentic_rubrics.datasets.sdist_trees import RULES
from agentic_rubrics.datasets.swebench import PoolOptions, load_candidates_file
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.intervals import Intervals
from agentic_rubrics.report.build import load_results
from agentic_rubrics.runfolder.folder import RunFolder

K = 16
BASELINE = "self_consistency"
SELECTOR_OF = {
    "self_consistency": "self_consistency",
    "static_rubric": "rubric",
    "random": "random",
    "offline_content_refit": "offline_content",
    "offline_refit": "offline",
    "fusion_sc_rubric": "fusion:self_consistency+rubric",
    "rrf_sc_rubric": "rrf:self_consistency+rubric",
    "fusion_fitted": "fit",
    "behaviour_consensus": "behaviour_consensus",
}
"""The library's name for what each method measures (``fit``: the procedure of ``agentic-rubrics fit``)."""


def load_file(
    data: Path, work: Path, repo_url: str, repo_cache: Path | None, approximate: str = "none"
) -> tuple[list, dict]:
    """A development file's pools as ``swebench_rerank.py --content --work WORK`` left them."""
    static, grounded_dir = work / "static", work / "static_grounded"
    for folder in (static, grounded_dir):
        if not (folder / "progress.jsonl").exists():
            raise SystemExit(
                f"{folder}: no run here; make it first: python benchmarks/swebench_rerank.py --data"
                f" {data} --work {work} --repo-url '{repo_url}' --content"
            )
    pool = load_candidates_file(data, PoolOptions(full_run_only=True, min_candidates=2))
    names = ["offline", "rubric", "self_consistency", "random"]
    config = load_config(None, {"bootstrap_resamples": 0, "plots": False, "selectors": names})
    issue = load_results(RunFolder(static), policy=config.policy, selectors=names, seed=0)
    issue = [t for t in issue if t.fully_labelled]
    grounded = load_results(RunFolder(grounded_dir), policy=config.policy, selectors=names, seed=0)
    kept = {t.instance_id for t in issue}
    tasks = [t for t in pool.tasks if t.instance_id in kept]
    trees = task_trees(data, repo_url, repo_cache, approximate)
    rows, missing, approx, _ = post_rows(tasks, trees, work / "content_rows.jsonl")
    insts = build(
        tasks,
        {t.instance_id: t for t in issue},
        {t.instance_id: t for t in grounded if t.labelled},
        rows,
        {t.instance_id for t in tasks} - set(missing) - approx,
        frozenset(approx),
    )
    return insts, {t.instance_id: t.problem_statement for t in tasks}


def slices(insts: list, problems: dict[str, str], least: int) -> dict[str, list]:
    """Per source family with at least ``least`` pools of two or more candidates, its slice."""
    return {
        f: slice_pools(insts, f, problems) for f in sorted(slice_families(insts, max(least, 1)))
    }


def best(pool: Any, ranking: dict[str, float | None]) -> float:
    ids = list(pool.labels)
    return (
        metrics.best_at_k([ranking.get(c) for c in ids], [int(pool.labels[c]) for c in ids], K)
        or 0.0
    )


def outer_folds(
    files: dict[str, tuple[list, dict]], train_slices: dict[str, list]
) -> tuple[dict[str, dict[str, dict[str, float]]], dict[str, list[str]]]:
    """Per method, per evaluation subset, per pool: Best@16 on held-out pools only; and what each
    method chose in the inner folds of each outer fold."""
    every: dict[str, Any] = {}
    for name in files:
        for i in files[name][0]:
            every.setdefault(i.instance_id, i)
    subsets = {f"{name}/full": insts for name, (insts, _) in files.items()}
    for name, (insts, problems) in files.items():
        for fam, pools in slices(insts, problems, MIN_SLICE_POOLS).items():
            subsets[f"{name}/{fam}"] = pools
    out: dict[str, dict[str, dict[str, float]]] = {
        m.name: {s: {} for s in subsets} for m in METHODS
    }
    chosen: dict[str, list[str]] = {m.name: [] for m in METHODS}
    for repo in sorted({i.repo for i in every.values()}):
        started = time.monotonic()
        train = [i for i in every.values() if i.repo != repo]
        train_sl = [p for ps in train_slices.values() for p in ps if p.repo != repo]
        for method in METHODS:
            ranker, note = method.fit(train, train_sl)
            if note:
                chosen[method.name].append(f"{repo}: {note}")
            for subset, pools in subsets.items():
                for p in pools:
                    if p.repo == repo:
                        out[method.name][subset][p.instance_id] = best(p, ranker(p))
        print(
            f"  fold {repo}: {len(train)} training instances ({time.monotonic() - started:.0f} s)"
        )
    return out, chosen


def paired(a: list[float], b: list[float], levels: dict[str, float]) -> dict[str, Any]:
    diff = [x - y for x, y in zip(a, b, strict=True)]
    out: dict[str, Any] = {
        "mean": round(sum(diff) / len(diff), 6),
        "better_in": sum(1 for d in diff if d > 1e-12),
        "worse_in": sum(1 for d in diff if d < -1e-12),
    }
    for key, level in levels.items():
        ci = Intervals(2000, level=level, seed=0).mean(diff)
        out[key] = [round(ci[0], 6), round(ci[1], 6)] if ci else None
    return out


def summarise(
    scores: dict[str, dict[str, dict[str, float]]], eligible: list[str]
) -> dict[str, Any]:
    """Each method's mean per subset and its paired difference with self-consistency."""
    levels = {"ci95": 0.95, "ci_familywise": 1 - 0.05 / max(1, len(eligible))}
    table: dict[str, Any] = {}
    for name, by_subset in scores.items():
        table[name] = {}
        for subset, per_pool in by_subset.items():
            keys = sorted(per_pool)
            a = [per_pool[k] for k in keys]
            b = [scores[BASELINE][subset][k] for k in keys]
            ci = Intervals(2000, seed=0).mean(a)
            table[name][subset] = {
                "pools": len(keys),
                "best_at_16": round(sum(a) / len(a), 6),
                "best_at_16_ci": [round(ci[0], 6), round(ci[1], 6)] if ci else None,
                f"minus_{BASELINE}": paired(a, b, levels) if name != BASELINE else None,
            }
    return table


def decide(table: dict[str, Any], eligible: list[str], files: list[str]) -> dict[str, Any]:
    """The rule of the module's docstring, applied."""
    verdicts: dict[str, Any] = {}
    for name in eligible:
        rows = table[name]
        full = {f: rows[f"{f}/full"][f"minus_{BASELINE}"] for f in files}
        above = all(d["ci_familywise"] and d["ci_familywise"][0] > 0 for d in full.values())
        below = sorted(  # a mean below zero by more than float rounding
            s
            for s, r in rows.items()
            if not s.endswith("/full") and r[f"minus_{BASELINE}"]["mean"] < -1e-9
        )
        verdicts[name] = {
            "interval_above_zero_on_both_files": above,
            "below_self_consistency_on_slices": below,
            "passes": above and not below,
            "smaller_lower_bound": min(d["ci_familywise"][0] for d in full.values()),
        }
    passing = [n for n, v in verdicts.items() if v["passes"]]
    chosen = max(passing, key=lambda n: verdicts[n]["smaller_lower_bound"]) if passing else BASELINE
    return {"default": chosen, "methods": verdicts}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for name in ("lite", "verified"):
        parser.add_argument(
            f"--{name}", type=Path, required=True, help=f"the {name} candidates file"
        )
        parser.add_argument(f"--{name}-work", type=Path, required=True, help="its WORK folder")
    parser.add_argument("--repo-url", required=True, help="the template the WORK folders used")
    parser.add_argument("--repo-cache", type=Path)
    parser.add_argument(
        "--approximate-trees",
        default="none",
        choices=("none", *RULES),
        help="as swebench_rerank.py's: post-image rows on a release sdist where Django cannot be had",
    )
    parser.add_argument("--out", type=Path, help="write results.json here")
    parser.add_argument(
        "--write-evidence",
        type=Path,
        help="write each selector's outer-fold figures, which reports state"
        " (agentic_rubrics/rank/selection_evidence.json)",
    )
    args = parser.parse_args(argv)
    started = time.monotonic()
    files = {
        name: load_file(
            getattr(args, name),
            getattr(args, f"{name}_work"),
            args.repo_url,
            args.repo_cache,
            args.approximate_trees,
        )
        for name in ("lite", "verified")
    }
    train_slices = _training_slices(files)
    print(
        f"outer folds by repository: {sum(len(f[0]) for f in files.values())} pools of both files"
    )
    scores, chosen = outer_folds(files, train_slices)
    eligible = [m.name for m in METHODS if m.eligible]
    table = summarise(scores, eligible)
    decision = decide(table, eligible, list(files))
    results = {
        "command": "python benchmarks/choose_default.py " + " ".join(argv or sys.argv[1:]),
        "data": {
            name: {
                "file": getattr(args, name).name,
                "sha256": hashlib.sha256(getattr(args, name).read_bytes()).hexdigest(),
                "instances": len(files[name][0]),
                "with_repository": sum(1 for i in files[name][0] if i.has_repo),
                "approximate_tree": sum(1 for i in files[name][0] if i.approximate_tree),
            }
            for name in files
        },
        "k": K,
        "library_default_now": DEFAULT,
        "methods": {m.name: {"eligible": m.eligible, "what": m.what} for m in METHODS},
        "eligible": eligible,
        "outer_folds": table,
        "choices_in_inner_folds": {k: v for k, v in chosen.items() if v},
        "decision": decision,
        "seconds": round(time.monotonic() - started, 1),
    }
    _print(results)
    if args.write_evidence:
        text = json.dumps(evidence(results), indent=2, sort_keys=True) + "\n"
        args.write_evidence.write_text(text)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return 0


def evidence(results: dict[str, Any]) -> dict[str, Any]:
    """What a report states of a selector's out-of-sample evidence: its method's outer-fold figures
    on each file's full pools, paired with self-consistency."""
    decision = results["decision"]
    passed = [n for n, v in decision["methods"].items() if v["passes"]]
    out: dict[str, Any] = {
        "procedure": "benchmarks/choose_default.py: nested cross-validation on the SWE-bench"
        " development files, outer folds by repository (every fit and choice inside inner folds);"
        f" Best@{K} on held-out pools, paired with self-consistency, 95% bootstrap intervals",
        "command": results["command"],
        "data": results["data"],
        "default": decision["default"],
        "written": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "why": f"{decision['default']} passed the rule: a paired interval above zero on both files"
        " (family-wise 95%) and no single-generator slice below self-consistency"
        if passed
        else "no other method passed the rule: a paired interval above zero on both files"
        " (family-wise 95%) and no single-generator slice below self-consistency",
        "selectors": {},
    }
    for method, selector in SELECTOR_OF.items():
        rows = results["outer_folds"][method]
        out["selectors"][selector] = {
            "method": method,
            "what": results["methods"][method]["what"],
            **{
                name: {
                    "pools": rows[f"{name}/full"]["pools"],
                    "best_at_16": rows[f"{name}/full"]["best_at_16"],
                    "ci": rows[f"{name}/full"]["best_at_16_ci"],
                    "minus_self_consistency": rows[f"{name}/full"][f"minus_{BASELINE}"],
                }
                for name in results["data"]
            },
        }
    return out


def _training_slices(files: dict[str, tuple[list, dict]]) -> dict[str, list]:
    """Every single-generator pool of the pooled instances (each instance and family once)."""
    out: dict[str, list] = {}
    seen: set[tuple[str, str]] = set()
    for insts, problems in files.values():
        for fam, pools in slices(insts, problems, 1).items():
            for p in pools:
                if (p.instance_id, fam) not in seen:
                    seen.add((p.instance_id, fam))
                    out.setdefault(fam, []).append(p)
    return out


def _print(results: dict[str, Any]) -> None:
    table = results["outer_folds"]
    subsets = list(table[BASELINE])
    fmt: Callable[[dict[str, Any]], str] = lambda r: (  # noqa: E731
        f"{100 * r['best_at_16']:5.1f}"
        + (
            f" {100 * r['minus_self_consistency']['mean']:+5.1f}"
            f" [{100 * r['minus_self_consistency']['ci95'][0]:+.1f}, {100 * r['minus_self_consistency']['ci95'][1]:+.1f}]"
            if r["minus_self_consistency"]
            else " " * 20
        )
    )
    for subset in subsets:
        print(f"{subset} ({table[BASELINE][subset]['pools']} pools)")
        for name, rows in table.items():
            mark = "" if results["methods"][name]["eligible"] else " (reference)"
            print(f"  {name + mark:<34} {fmt(rows[subset])}")
    d = results["decision"]
    for name, v in d["methods"].items():
        print(
            f"  {name}: above zero on both files {v['interval_above_zero_on_both_files']},"
            f" below on slices {v['below_self_consistency_on_slices'] or 'none'}"
        )
    print(f"default: {d['default']} ({results['seconds']} s)")


if __name__ == "__main__":
    raise SystemExit(main())
