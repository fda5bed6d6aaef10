"""Metrics and printing of ``swebench_rerank.py``: Best@K with intervals, the sanity check, the summary."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.scoring import DecisionPolicy, score_candidate
from agentic_rubrics.report.results import TaskResult
from agentic_rubrics.rubric.check_verdicts import check_verdicts

KS = list(range(1, 17))


def method_metrics(
    tasks: list[TaskResult],
    ranking: Callable[[TaskResult], dict[str, float | None]],
    resamples: int,
    auc_values: Callable[[TaskResult], dict[str, float | None]] | None = None,
) -> dict[str, Any]:
    """Best@K with intervals, Oracle@K, Random@K, ROC-AUC, PR-AUC and coverage of one method."""
    per_k: dict[str, list[float]] = {str(k): [] for k in KS}
    oracle: dict[str, list[float]] = {str(k): [] for k in KS}
    randoms, pairs = [], []
    with_value = total = 0
    for t in tasks:
        r = ranking(t)
        ids = list(t.labels)
        ys = [int(bool(t.labels[c])) for c in ids]
        values = [r.get(c) for c in ids]
        # every K from one sort of the pool's score levels
        for k, best in zip(KS, metrics.best_at_ks(values, ys, KS), strict=True):
            per_k[str(k)].append(best or 0.0)
            oracle[str(k)].append(metrics.pass_at_k(ys, k) or 0.0)
        randoms.append(metrics.random_at_k(ys) or 0.0)
        auc_map = auc_values(t) if auc_values else r
        for c, y in zip(ids, ys, strict=True):
            total += 1
            if auc_map.get(c) is not None:
                with_value += 1
                pairs.append((float(auc_map[c]), y))  # type: ignore[arg-type]

    def ci(values: list[float]) -> list[float] | None:
        found = metrics.bootstrap_ci(values, metrics.mean, n_resamples=resamples)
        return [round(found[0], 4), round(found[1], 4)] if found else None

    roc = metrics.roc_auc([p for p, _ in pairs], [y for _, y in pairs]) if pairs else None
    ap = metrics.pr_auc([p for p, _ in pairs], [y for _, y in pairs]) if pairs else None
    return {
        "best_at_k": {k: metrics.mean(v) for k, v in per_k.items()},
        "best_at_k_ci": {k: ci(v) for k, v in per_k.items()} if resamples else {},
        "oracle_at_k": {k: metrics.mean(v) for k, v in oracle.items()},
        "random_at_k": metrics.mean(randoms),
        "roc_auc": roc,
        "pr_auc": ap,
        "coverage": with_value / total if total else None,
    }


def sanity(tasks: list[TaskResult], gold: dict[str, str], policy: DecisionPolicy) -> dict[str, Any]:
    """Mean S of the gold patch and of the empty patch under each task's rubric."""
    gold_s, empty_s = [], []
    for t in tasks:
        if t.rubric is None:
            continue
        for patch, into in ((gold.get(t.instance_id), gold_s), ("", empty_s)):
            if patch is None:
                continue
            v = check_verdicts(t.rubric, patch, instance_id=t.instance_id, candidate_id="x")
            s = score_candidate(t.rubric, v.values(), instance_id=t.instance_id, candidate_id="x",
                                empty_patch=not patch.strip(), policy=policy).score  # fmt: skip
            if s is not None:
                into.append(s)
    return {
        "gold_patch_mean_s": metrics.mean(gold_s),
        "empty_patch_mean_s": metrics.mean(empty_s),
        "tasks": len(gold_s),
    }


def print_summary(results: dict[str, Any]) -> None:
    print(
        f"{results['instances']} instances, {results['candidates']} candidates ({results['data']})"
    )
    print(f"{'method':<18} {'Best@1':>7} {'Best@4':>7} {'Best@16':>8} {'ROC-AUC':>8} {'PR-AUC':>7}")
    for name, m in results["methods"].items():
        b = m["best_at_k"]
        auc = "n/a" if m["roc_auc"] is None else f"{m['roc_auc']:.3f}"
        ap = "n/a" if m["pr_auc"] is None else f"{m['pr_auc']:.3f}"
        print(
            f"{name:<18} {100 * b['1']:7.1f} {100 * b['4']:7.1f} {100 * b['16']:8.1f} {auc:>8} {ap:>7}"
        )
    oracle = next(iter(results["methods"].values()))["oracle_at_k"]["16"]
    print(f"{'oracle':<18} {'':7} {'':7} {100 * oracle:8.1f}")
    print("ablation (offline, leave-one-repository-out):")
    for group, a in results["ablation_offline"].items():
        print(
            f"  {group:<16} without: Best@16 {100 * a['without']['best_at_16']:.1f} AUC {a['without']['roc_auc']:.3f}"
            f"   alone: Best@16 {100 * a['alone']['best_at_16']:.1f} AUC {a['alone']['roc_auc']:.3f}"
        )
    s = results["sanity"]
    print(
        f"sanity: mean S of gold patches {s['gold_patch_mean_s']:.3f}, of empty patches {s['empty_patch_mean_s']:.3f}"
    )
    if results["grounded_vs_issue_only"] is not None:
        from grounded_compare import print_comparison

        print_comparison(results["grounded_vs_issue_only"])
    if results["content"] is not None:
        from content_study import print_content

        print_content(results["content"])
    print(f"({results['seconds']} s)")
