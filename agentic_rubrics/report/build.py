"""report.json and report.md, computed from the run folder alone (rubrics, verdicts, progress rows).

Every rate is a fraction in [0, 1] with the counts it rests on beside it. Best@K is the exact
expectation over K-subsets (ties uniform); the realised Best@1 of the actual selections is reported
beside it, so the effect of the tie-break rule is visible. Intervals are 95% percentile bootstraps
over tasks (:mod:`agentic_rubrics.rank.bootstrap`), remembered in the run folder for reruns.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Any

from agentic_rubrics.datasets.labels import Labels, default_labels
from agentic_rubrics.exceptions import ConfigError, DataError, RubricError
from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.agreement import similarity_summary
from agentic_rubrics.rank.consensus import probes_summary
from agentic_rubrics.rank.intervals import Intervals
from agentic_rubrics.rank.scoring import DecisionPolicy, score_candidate
from agentic_rubrics.rank.selectors import check_names, fitted_weights, get_selector
from agentic_rubrics.report.compare import compare
from agentic_rubrics.report.item_stats import non_discriminating, task_non_discriminating
from agentic_rubrics.report.repeats import repeat_stability
from agentic_rubrics.report.results import TaskResult, rank_tasks, run_cost, verifier_summary
from agentic_rubrics.report.selection import choose, primary_reason, primary_weights
from agentic_rubrics.rubric.file import load_rubric
from agentic_rubrics.rubric.grounding import grounding_report
from agentic_rubrics.runfolder.digests import verdicts_changed
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.report import Report
from agentic_rubrics.types import SCHEMA, Rubric

INTERVALS_FILE = "intervals.json"
"""The run folder's remembered bootstrap intervals (see :mod:`agentic_rubrics.rank.bootstrap`)."""


def load_results(
    folder: RunFolder,
    *,
    policy: DecisionPolicy,
    selectors: Sequence[str],
    seed: int,
    labels: Labels | None = None,
) -> list[TaskResult]:
    """Rebuild scores, rankings and picks of every finished task (labels: see :mod:`.labels`)."""
    labels = labels if labels is not None else default_labels(folder)
    by_task, digests = folder.verdicts()
    results = []
    for instance_id, progress in sorted(folder.progress().items()):
        rubric: Rubric | None = None
        if progress.rubric.status == "ok":
            try:
                rubric, _ = load_rubric(folder.rubric_path(instance_id))
            except RubricError as exc:
                raise DataError(f"{instance_id}: its rubric no longer loads: {exc}") from exc
            if rubric.content_hash() != progress.rubric.hash:
                raise DataError(f"{instance_id}: rubrics.yaml changed after it was judged")
        verdicts = by_task.get(instance_id, [])
        scores = {}
        for cand in progress.candidates:
            cid = cand.id
            scores[cid] = score_candidate(
                rubric,
                [v for v in verdicts if v.candidate_id == cid],
                instance_id=instance_id,
                candidate_id=cid,
                empty_patch=cand.empty,
                policy=policy,
            )
        result = TaskResult(
            instance_id=instance_id,
            progress=progress,
            rubric=rubric,
            scores=scores,
            labels=labels.for_task(instance_id, [c.id for c in progress.candidates]),
            verdicts=verdicts,
            verdicts_changed=verdicts_changed(progress, digests),
        )
        results.append(result)
    from agentic_rubrics.report.results import listed_no_lines  # a run stored before the list

    listed_no_lines(results, folder)
    rank_tasks(results, selectors, seed)
    return results


def _rate(num: int, den: int) -> dict[str, Any]:
    return {"value": num / den if den else None, "n": num, "of": den}


def _pool(t: TaskResult, name: str) -> tuple[list[float | None], list[int]]:
    """A selector's ranking values and the labels of a task's labelled candidates."""
    ids = t.labelled_ids
    ranking = t.rankings[name]
    return [ranking[c] for c in ids], [int(bool(t.labels[c])) for c in ids]


def _scored(t: TaskResult, name: str) -> list[tuple[float, int]]:
    """The values ROC/PR rest on (the selector's ``values``: S for the rubric selector)."""
    out = []
    for cid, label in t.labels.items():
        if label is None:
            continue
        value = t.values[name][cid]
        if value is not None:
            out.append((float(value), int(bool(label))))
    return out


def _selector_metrics(
    name: str, tasks: list[TaskResult], ks: list[int], cis: Intervals
) -> dict[str, Any]:
    """Best@K, realised Best@1, ROC-AUC and PR-AUC of one selector on the labelled tasks."""

    def pool(t: TaskResult) -> tuple[list[float | None], list[int]]:
        return _pool(t, name)

    def scored(t: TaskResult) -> list[tuple[float, int]]:
        return _scored(t, name)

    best: dict[str, float | None] = {}
    best_ci: dict[str, list[float] | None] = {}
    by_task = [metrics.best_at_ks(*pool(t), ks) for t in tasks]
    for i, k in enumerate(ks):
        per_task = [row[i] for row in by_task]  # resample these, not the pools
        best[str(k)] = metrics.mean(per_task)
        ci = cis.mean(per_task)
        best_ci[str(k)] = list(ci) if ci else None

    # the realised pick counts where it has a label (a pick without one is counted apart)
    pick_labels = [t.labels.get(t.picks[name].candidate_id or "") for t in tasks]
    picked = [float(label) for label in pick_labels if label is not None]

    def auc(ts: Sequence[TaskResult], fn: Any) -> float | None:
        pairs = [p for t in ts for p in scored(t)]
        if not pairs:
            return None
        result: float | None = fn([s for s, _ in pairs], [y for _, y in pairs])
        return result

    labelled_candidates = sum(len(t.labelled_ids) for t in tasks)
    with_value = sum(len(scored(t)) for t in tasks)
    ci_real = cis.mean(picked)
    ci_roc = cis.auc([scored(t) for t in tasks], "roc_auc")
    ci_pr = cis.auc([scored(t) for t in tasks], "pr_auc")
    return {
        "best_at_k": best,
        "best_at_k_ci": best_ci,
        "realised_best_at_1": metrics.mean(picked),
        "realised_best_at_1_ci": list(ci_real) if ci_real else None,
        "unlabelled_picks": len(pick_labels) - len(picked),
        "roc_auc": auc(tasks, metrics.roc_auc),
        "roc_auc_ci": list(ci_roc) if ci_roc else None,
        "pr_auc": auc(tasks, metrics.pr_auc),
        "pr_auc_ci": list(ci_pr) if ci_pr else None,
        "pr_auc_is": "average precision",
        "scored_candidates": _rate(with_value, labelled_candidates),
        "tie_rate": metrics.tie_rate(list(t.rankings[name].values()) for t in tasks),
        "tasks": len(tasks),
    }


def build_report_and_results(
    folder: RunFolder,
    *,
    n_resamples: int | None = None,
    labels: Labels | None = None,
    seed: int | None = None,
    selectors: Sequence[str] | None = None,
) -> tuple[Report, list[TaskResult]]:
    """The report, and the per-task results it was computed from (for plots and audits).

    ``labels``, ``seed`` and ``selectors`` are report-time settings: by default the run's tasks file's
    labels, and the seed and selectors in config.json.
    """
    recorded = folder.recorded()
    cfg = recorded.config
    policy = DecisionPolicy.model_validate(cfg.policy)
    given_now = selectors is not None
    chosen = _report_selectors(list(selectors or cfg.selectors), folder, given=given_now)
    seed = _report_seed(cfg.seed if seed is None else seed, given=seed is not None)
    labels = labels if labels is not None else default_labels(folder)
    resamples = n_resamples if n_resamples is not None else cfg.bootstrap_resamples
    results = load_results(folder, policy=policy, selectors=chosen, seed=seed, labels=labels)
    cis = Intervals(resamples, seed=seed, cache_path=folder.root / INTERVALS_FILE)
    labelled = [t for t in results if t.labelled]
    max_pool = max((len(t.labelled_ids) for t in labelled), default=0)
    ks = list(range(1, min(cfg.max_k, max_pool) + 1))
    fitted = fitted_weights(chosen, [t.instance_id for t in results])
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "config_hash": recorded.config_hash,
        "explorer": cfg.explorer.kind,
        "judge": sorted({t.progress.judge for t in results}),
        "policy": policy.model_dump(),
        "primary_selector": chosen[0],
        "selection": _selection(results, chosen, fitted, cfg.judge.kind == "llm", given_now),
        "seed": seed,
        **_counts_and_labels(results, labelled, labels.source, max_pool, ks, cfg.max_k),
        "rubrics": _rubrics_section(results, cfg.repos),
        **_verdicts_and_coverage(results),
        "selectors": {name: _selector_metrics(name, labelled, ks, cis) for name in chosen},
        "fitted_weights": fitted,
        "oracle_pass_at_k": {
            str(k): metrics.mean(metrics.pass_at_k(_ys(t), k) for t in labelled) for k in ks
        },
        "random_at_k": metrics.mean(metrics.random_at_k(_ys(t)) for t in labelled),
        **repeat_stability(results, policy, seed),
        "cost": run_cost(folder.spend_path, results, cfg.max_cost_usd),
        "verifiers": verifier_summary(results, recorded.verifier_entries()),
        "similarity": similarity_summary(t.progress.baselines for t in results),
        "probes": probes_summary(t.progress.baselines for t in results),
        "comparisons": compare(labelled, chosen, ks, cis) if labelled and ks else None,
        "verdicts_changed": sorted(t.instance_id for t in results if t.verdicts_changed),
        "tasks": [_task_summary(t, chosen) for t in results],
    }
    cis.save()
    return Report.model_validate(report), results


def _selection(
    results: list[TaskResult],
    chosen: list[str],
    fitted: dict[str, Any],
    with_model: bool,
    given_now: bool,
) -> dict[str, Any]:
    """Which selector wrote selections.jsonl, why, where it fell back, and its weights' evidence."""
    return {
        "primary": chosen[0],
        "reason": primary_reason(with_model, chosen, given_now),
        **choose(results, chosen),
        "weights": primary_weights(chosen[0], fitted, with_model),
    }


def _report_selectors(selectors: list[str], folder: RunFolder, *, given: bool) -> list[str]:
    """The selectors, each loaded now: an unknown or broken one names where it came from (a
    selector handed over in Python is known only to the process that handed it over)."""
    source = "the selectors given" if given else f"{folder.config_path}'s selectors"
    remedy = (
        ""
        if given
        else "; give the report its selectors: `report --selectors`, or in Python"
        " report_folder(out, selectors=[...]) with the selector objects or functions themselves"
    )
    try:
        check_names(selectors)
    except ValueError as exc:
        raise DataError(f"{source}: {exc}{remedy}") from exc
    for name in selectors:
        try:
            get_selector(name)
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}{remedy}") from exc
    return selectors


def _report_seed(seed: Any, *, given: bool) -> int:
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        source = "--seed" if given else "config.json's seed"
        raise DataError(f"{source} is {seed!r}: expected a whole number of 0 or more")
    return seed


def _counts_and_labels(
    results: list[TaskResult],
    labelled: list[TaskResult],
    source: Any,
    max_pool: int,
    ks: list[int],
    max_k: int,
) -> dict[str, Any]:
    """How many tasks, candidates and labels the report rests on, and what it left out."""
    n_candidates = sum(len(t.scores) for t in results)
    candidates_labelled = sum(len(t.labelled_ids) for t in labelled)
    return {
        "counts": {
            "tasks": len(results),
            "tasks_labelled": len(labelled),
            "candidates": n_candidates,
            "candidates_labelled": candidates_labelled,
            "resolved": sum(1 for t in labelled for v in t.labels.values() if v),
            "max_pool": max_pool,
            "tasks_with_pool_at_least": {
                str(k): sum(1 for t in labelled if len(t.labelled_ids) >= k) for k in ks
            },
            "max_k": max_k,
        },
        "labels": {
            "source": source,
            "left_out": {
                "tasks_without_a_labelled_candidate": len(results) - len(labelled),
                "unlabelled_candidates": n_candidates - candidates_labelled,
            },
        },
    }


def _rubrics_section(results: list[TaskResult], repos: dict[str, Any]) -> dict[str, Any]:
    """The rubrics: how many were written, why the others failed, their items, repository, grounding."""
    status = Counter(t.progress.rubric.status for t in results)
    failed = Counter(t.progress.rubric.reason for t in results if t.progress.rubric.status != "ok")
    return {
        "ok": status.get("ok", 0),
        "failed": dict(sorted(failed.items())),
        "items": sum(len(list(t.rubric.items())) for t in results if t.rubric),
        "checked_items": sum(
            1 for t in results if t.rubric for _, i in t.rubric.items() if i.check is not None
        ),
        # where each explorer's repository came from (``none``: explored without one)
        "repository": dict(sorted(Counter(t.explored_from for t in results).items())),
        "repository_url": repos["url_template"] or "none" if "url_template" in repos else None,
        # items naming the repository's files; the static explorer's leads that found nothing
        "grounding": grounding_report(t.progress.rubric for t in results),
        # items that pass or fail for every candidate: no signal for the ranking
        "non_discriminating": non_discriminating([t.items for t in results if t.items is not None]),
    }


def _verdicts_and_coverage(results: list[TaskResult]) -> dict[str, Any]:
    """The verdicts by origin and missing reason, what they cover, and the decisions they led to."""
    rows = [v for t in results for v in t.verdicts]  # every finished task's rows, read once
    origins = Counter(v.origin for v in rows)
    all_scores = [s for t in results for s in t.scores.values()]
    with_rubric = sum(1 for t in results if t.progress.rubric.status == "ok")
    return {
        "verdicts": {
            "rows": len(rows),
            "origins": {o: origins.get(o, 0) for o in ("judged", "checked", "missing")},
            "missing_by_reason": dict(
                sorted(Counter(v.reason for v in rows if v.origin == "missing").items())
            ),
            "check_error_by_detail": dict(
                sorted(Counter(str(v.detail) for v in rows if v.reason == "check_error").items())
            ),
            "repository_aware_rows": sum(t.repository_aware_rows for t in results),
        },
        "coverage": {
            "tasks_with_rubric": _rate(with_rubric, len(results)),
            "candidates_with_score": _rate(
                sum(1 for s in all_scores if s.score is not None), len(all_scores)
            ),
            "items_with_verdict": _rate(
                sum(s.items_scored for s in all_scores), sum(s.items_total for s in all_scores)
            ),
            "weight_with_verdict": _rate(
                sum(s.weight_scored for s in all_scores), sum(s.weight_total for s in all_scores)
            ),
        },
        "decisions": {
            d: sum(1 for s in all_scores if s.decision == d)
            for d in ("accept", "review", "reject", "inconclusive")
        },
        "decision_reasons": dict(
            sorted(Counter(r.split(":")[0] for s in all_scores for r in s.reasons).items())
        ),
    }


def _ys(t: TaskResult) -> list[int]:
    return [int(bool(t.labels[c])) for c in t.labelled_ids]


def _task_summary(t: TaskResult, selectors: list[str]) -> dict[str, Any]:
    return {
        "cost": t.progress.cost,
        "instance_id": t.instance_id,
        "base_commit": t.progress.base_commit,
        "rubric": {
            "status": t.progress.rubric.status,
            "reason": t.progress.rubric.reason,
            "hash": t.progress.rubric.hash,
            "turns": t.progress.rubric.turns,
            "last_validation_error": t.progress.rubric.last_validation_error,
        },
        "candidates": len(t.scores),
        "resolved": sum(1 for v in t.labels.values() if v) if t.labelled else None,
        "labelled": len(t.labelled_ids),
        "decisions": dict(sorted(Counter(s.decision for s in t.scores.values()).items())),
        "selected": {
            "candidate_id": t.picks[t.selected_by].candidate_id,
            "selector": t.selected_by,
        },
        "picks": {
            name: {
                "candidate_id": t.picks[name].candidate_id,
                "value": t.picks[name].score,
                "tied": t.picks[name].tied,
                "resolved": t.labels.get(t.picks[name].candidate_id or ""),
            }
            for name in selectors
        },
        "non_discriminating": None if t.items is None else task_non_discriminating(t.items),
    }
