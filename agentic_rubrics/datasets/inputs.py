"""What a run scored: each task's inputs as hashes, the patches themselves, and what changed since.

A finished task's progress row records the hash of its issue text, its base commit and, per candidate,
the sha256 of the exact patch bytes; ``patches.jsonl`` keeps the patches themselves, so selections are
written from what was scored, from the run folder alone. When a tasks file no longer matches (another
patch under the same candidate id, candidates added or removed, an edited issue), resuming or reporting
names each changed task with what changed and refuses, unless the user asks for those tasks to be redone.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from agentic_rubrics.exceptions import DataError, InputsChanged
from agentic_rubrics.patch import is_empty_patch, patch_hash
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.rows import (
    CandidateInput,
    PatchRow,
    ProgressRow,
    RubricStatus,
    read_row,
)
from agentic_rubrics.types import Task


def text_hash(text: str) -> str:
    """sha256 of a text's exact UTF-8 bytes."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class TaskInputs:
    """What a progress row records about a task's inputs."""

    problem_hash: str
    """sha256 of the issue text."""
    base_commit: str
    """The base commit."""
    candidates: list[CandidateInput]
    """Each candidate's hashes and label."""


def task_inputs(task: Task) -> TaskInputs:
    """What a progress row records about a task's inputs (labels stay with the evaluation)."""
    return TaskInputs(
        problem_hash=text_hash(task.problem_statement),
        base_commit=task.base_commit,
        candidates=[
            CandidateInput(
                id=c.id,
                sha256=text_hash(c.patch),
                patch_hash=patch_hash(c.patch),
                empty=is_empty_patch(c.patch),
                resolved=c.resolved,
            )
            for c in task.candidates
        ],
    )


def patch_rows(task: Task) -> list[dict[str, Any]]:
    """The rows ``patches.jsonl`` keeps for a task: each candidate's exact patch with its hash."""
    return [
        PatchRow(
            instance_id=task.instance_id,
            candidate_id=c.id,
            sha256=text_hash(c.patch),
            patch=c.patch,
        ).to_json()
        for c in task.candidates
    ]


def scored_patches(folder: RunFolder) -> dict[tuple[str, str, str], str]:
    """Patches kept in the run folder, by ``(instance_id, candidate_id, sha256)``.

    Raises:
        DataError: a row of another shape (file, line and field), or a patch whose text no longer
            has the sha256 it was scored with: what is submitted must be what was scored.
    """
    path = folder.patches_path
    if not path.exists():
        return {}
    out: dict[tuple[str, str, str], str] = {}
    for number, record in read_jsonl(path, tolerate_torn_tail=True):
        row = read_row(PatchRow, record, f"{path}:{number}")
        if text_hash(row.patch) != row.sha256:
            raise DataError(
                f"{path}:{number}: patch: its text no longer has the sha256 it was scored with"
                f" ({row.sha256}; edited by hand?): restore it, or run the task again"
                " (--restart, or another --out folder)"
            )
        out[(row.instance_id, row.candidate_id, row.sha256)] = row.patch
    return out


def changes(task: Task, recorded: ProgressRow | RubricStatus) -> list[str]:
    """What differs between a task and what the run folder recorded for it (a progress row, or the
    status of a rubric explored but not yet judged); empty when nothing the results rest on changed."""
    out: list[str] = []
    if recorded.problem_hash not in (None, text_hash(task.problem_statement)):
        out.append("issue text")
    if "base_commit" in recorded.model_fields_set and recorded.base_commit != task.base_commit:
        out.append(f"base_commit {recorded.base_commit!r} -> {task.base_commit!r}")
    if not isinstance(recorded, ProgressRow):
        return out
    old = {c.id: c for c in recorded.candidates}
    new = {c.id: c.patch for c in task.candidates}
    added = [cid for cid in new if cid not in old]
    removed = [cid for cid in old if cid not in new]
    edited = [
        cid
        for cid, patch in new.items()
        if cid in old
        and (
            old[cid].sha256 != text_hash(patch)
            if old[cid].sha256 is not None
            else old[cid].patch_hash != patch_hash(patch)
        )
    ]
    if edited:
        out.append(f"patch{'es' if len(edited) > 1 else ''} of {_names(edited)}")
    if added:
        out.append(f"candidates added: {_names(added)}")
    if removed:
        out.append(f"candidates removed: {_names(removed)}")
    return out


def _names(ids: list[str], limit: int = 8) -> str:
    shown = ", ".join(ids[:limit])
    return shown + (f" and {len(ids) - limit} more" if len(ids) > limit else "")


def changed_tasks(folder: RunFolder, tasks: Iterable[Task]) -> dict[str, list[str]]:
    """Tasks of ``tasks`` whose recorded inputs differ, with what changed."""
    done = folder.progress()
    out: dict[str, list[str]] = {}
    for task in tasks:
        recorded: ProgressRow | RubricStatus | None = done.get(task.instance_id)
        if recorded is None:
            recorded = folder.rubric_status(task.instance_id)
        found = changes(task, recorded) if recorded is not None else []
        if found:
            out[task.instance_id] = found
    return out


def refuse_changed(changed: dict[str, list[str]], *, remedy: str) -> None:
    """Raise :class:`InputsChanged` naming every changed task and what changed.

    Raises:
        InputsChanged: when ``changed`` is not empty.
    """
    if not changed:
        return
    lines = [f"  {iid}: {'; '.join(what)}" for iid, what in sorted(changed.items())[:20]]
    if len(changed) > 20:
        lines.append(f"  ... and {len(changed) - 20} more")
    raise InputsChanged(
        f"{len(changed)} task(s) of the tasks file differ from what this run folder scored:\n"
        + "\n".join(lines)
        + f"\nTheir results rest on other inputs and are not used. {remedy}"
    )
