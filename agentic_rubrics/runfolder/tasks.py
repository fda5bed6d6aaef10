"""The tasks file: one task per line, validated where it is read."""

from __future__ import annotations

from pathlib import Path

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.rows import field_error
from agentic_rubrics.types import Task


def load_tasks(path: Path | str) -> list[Task]:
    """Read a tasks JSONL file (one task per line). Errors name the file, line and field; a file with
    no task is one (a run of it would report nothing and say all went well).

    Fields beyond the task format (gold patch, test patch, hints ...) are dropped on load: nothing
    downstream can read them.
    """
    from pydantic import ValidationError

    path = Path(path)
    tasks: list[Task] = []
    seen: dict[str, int] = {}
    for number, record in read_jsonl(path):
        candidates = record.get("candidates")
        if isinstance(candidates, list):
            for i, cand in enumerate(candidates):
                if isinstance(cand, dict) and "id" not in cand:
                    raise DataError(f"{path}:{number}: candidates[{i}].id: missing required field")
        try:
            task = Task.model_validate(record)
        except ValidationError as exc:
            raise DataError(f"{path}:{number}: {field_error(exc)}") from exc
        if task.instance_id in seen:
            raise DataError(
                f"{path}:{number}: instance_id {task.instance_id!r} repeats line {seen[task.instance_id]}"
            )
        seen[task.instance_id] = number
        tasks.append(task)
    if not tasks:
        raise DataError(f"{path}: no tasks (expected one JSON object per line)")
    return tasks
