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
from agentic_rubrics.runfolder.folder import RunFolder, safe_name

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
            " model the default is offline_content, and --selectors sets another"
        )
    if not with_model and selectors == BASE_SELECTORS:
        return (
            "the default without a judge model: static rubric S with line, file and function"
            " agreement across candidates and what each patch does to the tree, weights fitted on"
            " pools of one agent's samples (the best no-model ranking there on SWE-bench Lite); with"
            " --model the default is rubric, and --selectors sets another"
        )
    return "given first in the run's selectors (--selectors or the configuration)"


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
