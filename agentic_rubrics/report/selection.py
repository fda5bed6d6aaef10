"""selections.jsonl: the picked patch of every task, in SWE-bench predictions format.

The primary selector (the first of the run's selectors) picks, and the report says why it is the primary
one. A task where it has a value for no candidate (the rubric failed, every patch is empty ...) takes the
pick of the next selector that has one, and the report counts these fallbacks. The file is written from
the patches the run folder kept when it scored each task (``patches.jsonl``), never from a tasks file
that may have changed since: what is submitted is what was scored.
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_rubrics.datasets.inputs import scored_patches
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.runfolder.files import atomic_write_text
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.names import safe_name

if TYPE_CHECKING:
    from agentic_rubrics.report.results import TaskResult
    from agentic_rubrics.runfolder.report import Report


def has_value(selector: str, t: TaskResult) -> bool:
    """Whether a selector has a value for some candidate of the task (for ``rubric``: some S)."""
    return any(v is not None for v in t.values[selector].values())


def choose(results: list[TaskResult], selectors: list[str]) -> dict[str, Any]:
    """Set each task's selection (``selected_by``) and count the fallbacks from the primary selector."""
    fallbacks: Counter[str] = Counter()
    nothing = 0
    for t in results:
        with_value = [name for name in selectors if has_value(name, t)]
        t.selected_by = with_value[0] if with_value else selectors[0]
        nothing += not with_value
        if t.selected_by != selectors[0]:
            fallbacks[t.selected_by] += 1
    labels = [t.labels.get(t.picks[t.selected_by].candidate_id or "") for t in results]
    known = [float(v) for v in labels if v is not None]
    return {
        "fallbacks": dict(sorted(fallbacks.items())),
        "tasks_without_primary_value": sum(1 for t in results if not has_value(selectors[0], t)),
        "tasks_without_any_value": nothing,
        "realised_best_at_1": sum(known) / len(known) if known else None,
        "unlabelled_picks": len(labels) - len(known),
    }


def primary_reason(with_model: bool, selectors: list[str], given_now: bool) -> str:
    """Why the first selector is the primary one (said in the report, so adding a model never changes
    which selector writes selections.jsonl without a word); ``with_model``: the run has a judge model."""
    from agentic_rubrics.rank.rerank import BASE_SELECTORS, MODEL_SELECTORS

    if given_now:
        return "given first in `report --selectors`"
    if with_model and selectors == MODEL_SELECTORS:
        return (
            "the default with a judge model: the rubric's S from the model's verdicts; without a"
            f" model the default is {BASE_SELECTORS[0]}, and --selectors sets another"
        )
    if not with_model and selectors == BASE_SELECTORS:
        return (
            "the default without a judge model: the candidate that agrees most with the others"
            " (mean similarity of changed lines), chosen out of sample on SWE-bench development"
            " data, where no fitted no-model ranking beat it on both Lite and Verified (see"
            " benchmarks/README.md); with --model the default is rubric, and --selectors sets another"
        )
    return "given first in the run's selectors (--selectors or the configuration)"


def primary_weights(name: str, fitted: dict[str, Any], with_model: bool) -> dict[str, Any]:
    """Where the primary selector's weights came from and their out-of-sample evidence (report.json's
    ``selection.weights``): ``source`` (``none``: nothing fitted, ``shipped``, ``fitted``: a
    ``fitted:`` file, ``unknown``: a selector of the user's own), ``fitted_on`` and ``out_of_sample``
    (sentences; the latter ``None`` when nothing is recorded) and ``figures`` (what it rests on: a
    fitted file's own nested cross-validation, a built-in's outer-fold figures in the library's
    selection evidence, ``benchmarks/choose_default.py``)."""
    from agentic_rubrics.rank.rerank import selection_evidence
    from agentic_rubrics.rank.selectors import BUILTIN, get_selector, is_fusion_name

    fit = fitted.get(name)
    if fit is not None and "out_of_sample" in fit:
        return {
            "source": "fitted",
            "fitted_on": f"{name.removeprefix('fitted:')} (sha256 {fit['weights_sha256'][:12]}…),"
            f" fitted by `agentic-rubrics fit` on {fit['instances']} instances of"
            f" {len(fit['runs'])} run(s), library {fit['library_version']}",
            "out_of_sample": _held_out(fit["out_of_sample"]),
            "figures": fit["out_of_sample"],
        }
    evidence = selection_evidence()
    recorded = evidence["selectors"].get(name)
    if name == "rubric" and with_model:  # the figures are the static rubric's, not a model's
        recorded = None
    if fit is not None:
        source = "shipped"
        fitted_on = (
            f"shipped with the library, fitted on {fit.get('data', '?')}"
            f" ({fit.get('instances', '?')} instances)"
        )
    elif name in BUILTIN or is_fusion_name(name):
        source, fitted_on = "none", f"none, nothing is fitted ({get_selector(name).description})"
    else:
        source, fitted_on = (
            "unknown",
            "a selector of your own: the report has no record of its weights",
        )
    said = None
    if recorded is not None:
        said = _outer_folds(recorded)
        if name == evidence["default"]:
            said += f"; the no-model default: {evidence['why']}"
        if source == "shipped":
            said += (
                "; these are its fit repeated without each held-out repository, not the shipped"
                " weights themselves, which were fitted on development instances"
            )
    return {"source": source, "fitted_on": fitted_on, "out_of_sample": said, "figures": recorded}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}"


def _interval(ci: list[float] | None, sign: str = "") -> str:
    return f" [{100 * ci[0]:{sign}.1f}, {100 * ci[1]:{sign}.1f}]" if ci else ""


def _held_out(ev: dict[str, Any]) -> str:
    k = ev["k"]
    mine, base, diff = ev["fitted"], ev["self_consistency"], ev["difference"]
    return (
        f"nested cross-validation on its {ev['pools']} pools: Best@{k}"
        f" {_pct(mine[f'best_at_{k}'])}{_interval(mine[f'best_at_{k}_ci'])} against"
        f" self-consistency {_pct(base[f'best_at_{k}'])}{_interval(base[f'best_at_{k}_ci'])},"
        f" difference {100 * diff[f'best_at_{k}']:+.1f}{_interval(diff['ci'], '+')}"
    )


def _outer_folds(recorded: dict[str, Any]) -> str:
    parts = []
    for name in ("lite", "verified"):
        got = recorded.get(name)
        if got:
            d = got.get("minus_self_consistency")
            versus = (
                f", {100 * d['mean']:+.1f}{_interval(d.get('ci95'), '+')} against self-consistency"
                if d
                else ""
            )
            parts.append(
                f"Best@16 {_pct(got['best_at_16'])}{_interval(got.get('ci'))} on {got['pools']}"
                f" held-out SWE-bench {name.capitalize()} development pools{versus}"
            )
    how = f"benchmarks/choose_default.py, outer folds by repository: {recorded['what']}"
    return "; ".join(parts) + f" ({how})"


def write_selections(folder: RunFolder, report: Report, results: list[TaskResult]) -> None:
    """Write selections.jsonl: each task's pick (by the primary selector, or its fallback), with the
    patch it scored; and ``selections/<selector>.jsonl``, every selector's own picks (no fallback),
    in the same SWE-bench predictions format. Files there of selectors this report does not name are
    removed: the folder holds the picks of one report.

    Raises:
        DataError: the run folder does not hold the patch a pick was scored on; ``selections`` is
            not a directory of its own.
    """
    primary = report.primary_selector
    where = _selections_dir(folder)
    names = {f"{safe_name(name)}.jsonl": name for name in report.selectors}
    patches = scored_patches(folder)
    picks = {t.instance_id: t.picks[t.selected_by or primary].candidate_id for t in results}
    atomic_write_text(folder.selections_path, _lines(folder, results, picks, primary, patches))
    for name_file, name in names.items():
        own = {t.instance_id: t.picks[name].candidate_id for t in results}
        atomic_write_text(where / name_file, _lines(folder, results, own, name, patches))
    for stale in where.glob("*.jsonl"):
        if stale.name not in names and (stale.is_file() or stale.is_symlink()):
            stale.unlink()  # a link goes, never what it points to


SELECTIONS_DIR = "selections"
"""``selections/<selector>.jsonl`` beside the primary selections.jsonl (names as file names)."""


def _selections_dir(folder: RunFolder) -> Path:
    """The folder of every selector's picks, made if absent; a link or a file in its place is refused
    (the report replaces and removes ``*.jsonl`` files there: never in a folder a link points to)."""
    where = folder.root / SELECTIONS_DIR
    if where.is_symlink() or (where.exists() and not where.is_dir()):
        raise DataError(
            f"{where}: expected the run folder's own directory of every selector's picks, found a"
            f" {'link' if where.is_symlink() else 'file'}; move it away and report again"
        )
    where.mkdir(exist_ok=True)
    return where


def _lines(
    folder: RunFolder,
    results: list[TaskResult],
    picks: dict[str, str | None],
    name: str,
    patches: dict[tuple[str, str, str], str],
) -> str:
    lines = []
    for t in results:
        pick = picks[t.instance_id]
        if pick is None:
            continue
        recorded = t.progress.candidate(pick)
        patch = patches.get((t.instance_id, pick, recorded.sha256 or ""))
        if patch is None:
            raise DataError(
                f"{folder.patches_path}: no scored patch for {t.instance_id} candidate {pick};"
                " the run folder was made by an older version or edited. Run the task again"
                " (--restart, or another --out folder)."
            )
        row = {
            "instance_id": t.instance_id,
            "model_name_or_path": f"agentic-rubrics/{name}",
            "model_patch": patch,
        }
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    return "".join(lines)
