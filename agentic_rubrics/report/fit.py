"""``agentic-rubrics fit``: fusion weights fitted on a user's own labelled runs, with their evidence.

Reads one or more run folders (their labels: the run's tasks file, as the report reads them), turns each
labelled task into a pool of signals (:mod:`agentic_rubrics.rank.selectors.fusion`), refuses to fit on
too little (:func:`agentic_rubrics.rank.fusion_fit.check_enough`), measures the fitting procedure by
nested cross-validation (folds by repository) beside self-consistency, fits the weights on every pool,
and writes them with their provenance and that evidence. ``--selectors fitted:FILE`` ranks with them,
and the report states both.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.labels import default_labels
from agentic_rubrics.exceptions import AgenticRubricsError, DataError
from agentic_rubrics.rank import fusion_fit
from agentic_rubrics.rank.fusion import FittedFusion, Values, instance_sha256
from agentic_rubrics.rank.scoring import DecisionPolicy
from agentic_rubrics.rank.selectors.fusion import signal_values
from agentic_rubrics.report.build import load_results
from agentic_rubrics.runfolder.files import atomic_write_json
from agentic_rubrics.runfolder.folder import RunFolder

SIGNALS = (
    "self_consistency",
    "rubric",
    "content.file_agreement",
    "content.func_agreement",
    "content.not_applied",
    "content.new_error",
    "content.removes_used",
)
"""What a fit weighs by default (``patch_classifier`` too when every run stored it): no patch-shape
feature, which mostly tells who wrote a patch."""
OPTIONAL = ("patch_classifier",)
METHOD = (
    "conditional logit over each pool's candidates on per-task {method}-normalised signals, L2 penalty;"
    " signals and penalty chosen by cross-validated Best@{k} (folds by {folds}); complete cases only;"
    " agentic_rubrics.rank.fusion_fit"
)


@dataclass
class FitResult:
    """What ``fit`` wrote, and what the command says."""

    path: Path
    weights: FittedFusion
    warnings: list[str]


def _pools(
    runs: Sequence[Path], signals: list[str] | None
) -> tuple[list[fusion_fit.Pool], list[str], list[dict[str, Any]]]:
    """Every labelled task of the runs as a pool; the signals; each run's provenance."""
    pools: list[fusion_fit.Pool] = []
    made: list[dict[str, Any]] = []
    seen: dict[str, Path] = {}
    for run in runs:
        folder = RunFolder(run)
        recorded = folder.recorded()
        run_id = str(folder.config().get("run_id") or run.resolve())
        if run_id in seen:  # the same folder twice, or a copy of it: its pools would count twice
            raise DataError(
                f"{run}: the same run as {seen[run_id]} (run_id {run_id}); given twice, its pools"
                " would count twice and narrow every interval"
            )
        seen[run_id] = run
        policy = DecisionPolicy.model_validate(recorded.config.policy)
        results = load_results(
            folder, policy=policy, selectors=["random"], seed=0, labels=default_labels(folder)
        )
        labelled = [t for t in results if t.labelled]
        if signals is None:
            stored = all(o in t.baselines for t in labelled for o in OPTIONAL) and labelled
            signals = [*SIGNALS, *(OPTIONAL if stored else ())]
        for t in labelled:
            ids = t.labelled_ids
            try:
                values: dict[str, Values] = {s: dict(signal_values(t, s)) for s in signals}
            except AgenticRubricsError as exc:
                raise DataError(f"{run}: {t.instance_id}: {exc}") from exc
            group = t.progress.repo or t.instance_id
            labels = {c: bool(t.labels[c]) for c in ids}
            pools.append(fusion_fit.Pool(t.instance_id, group, labels, values))
        made.append(
            {
                "run": str(run),
                "config_hash": recorded.config_hash,
                "instances": len(labelled),
                "candidates": sum(len(t.labelled_ids) for t in labelled),
            }
        )
    return pools, list(signals or SIGNALS), made


def _present(pools: list[fusion_fit.Pool], signals: list[str]) -> tuple[list[str], dict[str, str]]:
    """The signals with a value somewhere; the others, with why they are left out."""
    kept, left = [], {}
    for s in signals:
        if any(v is not None for p in pools for c, v in p.signals[s].items() if c in p.labels):
            kept.append(s)
        else:
            left[s] = "no value in any labelled candidate"
    if not kept:
        raise DataError(f"none of the signals {signals} has a value in these runs")
    return kept, left


def fit_runs(
    runs: Sequence[Path],
    out: Path,
    *,
    signals: list[str] | None = None,
    k: int = 16,
    method: str = "rank",
    resamples: int = 1000,
    seed: int = 0,
    command: str = "",
) -> FitResult:
    """Fit, measure and write fusion weights (see the module's docstring).

    Raises:
        DataError: a folder is not a run, a signal is not recorded, or the runs hold too few
            labelled instances or no resolved candidate.
    """
    pools, asked, made = _pools(runs, signals)
    fusion_fit.check_enough(pools)
    kept, left = _present(pools, asked)
    pools, folds_by = fusion_fit.grouped(pools)
    values, chosen = fusion_fit.cross_validate(pools, kept, k, method)
    evidence = fusion_fit.evidence(pools, values, k=k, resamples=resamples, seed=seed)
    fusion, config, scores = fusion_fit.fit(pools, kept, k, method)
    evidence.update(
        {
            "how": f"nested cross-validation, {len(chosen)} outer folds by {folds_by}; in each, the"
            " signals and penalty chosen on the training folds alone; figures on held-out pools only",
            "chosen_per_outer_fold": chosen,
        }
    )
    ids = {p.instance_id for p in pools}
    fitted_on = {
        "runs": made,
        "instances": len(ids),
        "informative_instances": len({p.instance_id for p in pools if p.informative}),
        "repositories": len({p.group for p in pools}) if folds_by == "repository" else None,
        "candidates": sum(len(p.labels) for p in pools),
        "resolved": sum(1 for p in pools for v in p.labels.values() if v),
        "signals": kept,
        "signals_left_out": left,
        "configuration": config.describe(),
        "cross_validated_best_at_k": scores,
        "method": METHOD.format(method=method, k=k, folds=folds_by),
        "library_version": importlib.metadata.version("agentic-rubrics"),
        "command": command,
    }
    weights = FittedFusion(fusion, fitted_on, evidence, frozenset(instance_sha256(i) for i in ids))
    atomic_write_json(out, weights.to_json())
    warnings = []
    if not evidence["beats_self_consistency"]:
        d = evidence["difference"]
        ci = d["ci"]
        shown = f"[{100 * ci[0]:+.1f}, {100 * ci[1]:+.1f}]" if ci else "(no interval)"
        warnings.append(
            f"the fit does not beat self-consistency out of sample: Best@{k} difference"
            f" {100 * d[f'best_at_{k}']:+.1f} points {shown} on held-out pools; its interval holds 0"
            " or less, so self-consistency is as good a choice on runs like these"
        )
    return FitResult(out, weights, warnings)
