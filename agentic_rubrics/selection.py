"""selections.jsonl: the picked patch of every task, in SWE-bench predictions format.

Written from the patches the run folder kept when it scored each task (``patches.jsonl``), never from a
tasks file that may have changed since: what is submitted is what was scored.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from agentic_rubrics.data import RunFolder, atomic_write_text
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.inputs import scored_patches

if TYPE_CHECKING:
    from agentic_rubrics.report import TaskResult


def write_selections(folder: RunFolder, report: dict[str, Any], results: list[TaskResult]) -> None:
    """Write selections.jsonl: each task's pick by the primary selector, with the patch it scored.

    Raises:
        DataError: the run folder does not hold the patch a pick was scored on.
    """
    primary = report["primary_selector"]
    patches = scored_patches(folder)
    lines = []
    for t in results:
        pick = t.picks[primary].candidate_id
        if pick is None:
            continue
        recorded = next(c for c in t.progress["candidates"] if c["id"] == pick)
        patch = patches.get((t.instance_id, pick, recorded.get("sha256", "")))
        if patch is None:
            raise DataError(
                f"{folder.patches_path}: no scored patch for {t.instance_id} candidate {pick};"
                " the run folder was made by an older version or edited. Run the task again"
                " (--restart, or another --out folder)."
            )
        row = {
            "instance_id": t.instance_id,
            "model_name_or_path": f"agentic-rubrics/{primary}",
            "model_patch": patch,
        }
        lines.append(json.dumps(row, ensure_ascii=False) + "\n")
    atomic_write_text(folder.selections_path, "".join(lines))
