"""Ground-truth labels are evaluation data, read when the report is made, never inputs of a run.

They come from a tasks file (``candidates[].resolved``) or a labels file (JSONL, one row per candidate:
``{"instance_id", "candidate_id", "resolved": true | false | null}``), so a corrected label takes effect
in ``report`` without rerunning anything. Without either, the report uses the tasks file the run was made
with, if it is still there, and else the labels recorded in the run folder when each task was judged.
The report says which.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.types import Task

Label = bool | None


@dataclass
class Labels:
    """Labels by instance id and candidate id, and where they came from (said in the report)."""

    source: str
    values: dict[str, dict[str, Label]] = field(default_factory=dict)

    def for_task(self, instance_id: str, candidate_ids: list[str]) -> dict[str, Label]:
        """The task's labels, in candidate order; a candidate the source does not know is ``None``."""
        known = self.values.get(instance_id, {})
        return {cid: known.get(cid) for cid in candidate_ids}


def from_tasks(tasks: list[Task], source: str) -> Labels:
    """The labels of loaded tasks."""
    return Labels(source, {t.instance_id: {c.id: c.resolved for c in t.candidates} for t in tasks})


def load_labels(path: Path) -> Labels:
    """Labels from a labels file or a tasks file (told apart per record by its ``candidates`` key).

    Raises:
        DataError: a record is malformed (named by file, line and field).
    """
    values: dict[str, dict[str, Label]] = {}
    rows = list(read_jsonl(path))
    if rows and all("candidates" in r for _, r in rows):
        return from_tasks(load_tasks(path), f"tasks file {path}")
    for line, r in rows:
        for key in ("instance_id", "candidate_id"):
            if not isinstance(r.get(key), str) or not r[key]:
                raise DataError(f"{path}:{line}: {key}: expected a non-empty string")
        if "resolved" not in r or r["resolved"] not in (True, False, None):
            raise DataError(f"{path}:{line}: resolved: expected true, false or null")
        values.setdefault(r["instance_id"], {})[r["candidate_id"]] = r["resolved"]
    return Labels(f"labels file {path}", values)


def recorded_labels(folder: RunFolder, why: str = "") -> Labels:
    """The labels the run folder recorded when each task was judged."""
    values = {
        iid: {c.id: c.resolved for c in row.candidates} for iid, row in folder.progress().items()
    }
    return Labels("labels recorded in the run folder when each task was judged" + why, values)


def recorded_tasks_file(folder: RunFolder) -> Path | None:
    """The tasks file the run was made with, if it is still there."""
    name = folder.config().get("config", {}).get("tasks_file")
    path = Path(name) if name else None
    return path if path is not None and path.is_file() else None


def default_labels(folder: RunFolder) -> Labels:
    """The run's own tasks file's labels (read now), else those recorded in the run folder."""
    path = recorded_tasks_file(folder)
    if path is not None:
        return from_tasks(load_tasks(path), f"tasks file {path}")
    return recorded_labels(folder, " (the run's tasks file is gone)")
