"""What the HTML view shows, read from a reported run folder through its readers, nothing recomputed.

report.json (the headline, each task's picks and cost), scores.jsonl (each candidate's S, coverage,
decision and label as the report scored it), verdicts.jsonl, progress.jsonl, the rubrics, patches.jsonl,
the trajectories and the plots. The issue text is the one thing a run folder does not hold itself: it is
read from the tasks file config.json names, and shown only when its sha256 is the one the task was
scored with (else the page says why it is absent).
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from agentic_rubrics.datasets.inputs import scored_patches, text_hash
from agentic_rubrics.datasets.labels import recorded_tasks_file
from agentic_rubrics.exceptions import DataError, RubricError
from agentic_rubrics.rubric.file import load_rubric
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.report import Report, TaskSummary
from agentic_rubrics.runfolder.reported import read_report, read_scores
from agentic_rubrics.runfolder.rows import ProgressRow, ScoreRow, Trajectory, read_row
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.types import Rubric, Verdict

LOW_COVERAGE = 0.8
"""A task whose candidates have verdicts for less than this share of the rubric's weight is flagged."""


@dataclass
class TaskView:
    """One task as its page shows it."""

    summary: TaskSummary
    """report.json's summary (picks, the selection, cost)."""
    progress: ProgressRow
    """Its progress row (candidates in order, repository, judge, repeats)."""
    rubric: Rubric | None
    """The rubric it was judged with (``None``: none, or it no longer loads: ``notes`` says)."""
    verdicts: list[Verdict]
    """Its verdict rows."""
    scores: dict[str, ScoreRow]
    """Each candidate's scores.jsonl row."""
    patches: dict[str, str | None]
    """Each candidate's patch as scored (``None``: patches.jsonl does not hold it)."""
    issue: str | None = None
    """The issue text (``None``: the tasks file is gone or holds another text)."""
    trajectory: Trajectory | None = None
    """The explorer's trajectory, if the run kept one."""
    notes: list[str] = field(default_factory=list)
    """What could not be shown, and why."""

    @property
    def instance_id(self) -> str:
        """The task."""
        return self.summary.instance_id

    @property
    def candidate_ids(self) -> list[str]:
        """The candidates, in the task's order."""
        return [c.id for c in self.progress.candidates]

    def cell(self, candidate_id: str, item_id: str) -> list[Verdict]:
        """One candidate's verdicts of one item, by repeat."""
        return self._cells.get((candidate_id, item_id), [])

    @cached_property
    def _cells(self) -> dict[tuple[str, str], list[Verdict]]:
        out: dict[tuple[str, str], list[Verdict]] = {}
        for v in sorted(self.verdicts, key=lambda v: v.repeat):
            out.setdefault((v.candidate_id, v.item_id), []).append(v)
        return out

    def flips(self) -> set[tuple[str, str]]:
        """(candidate, item) pairs judged more than once with different values."""
        seen: dict[tuple[str, str], set[int]] = {}
        for v in self.verdicts:
            if v.origin == "judged" and v.value is not None:
                seen.setdefault((v.candidate_id, v.item_id), set()).add(v.value)
        return {key for key, values in seen.items() if len(values) > 1}

    def origins(self, candidate_id: str) -> Counter[str]:
        """One candidate's verdict rows by origin (judged, checked, missing)."""
        return Counter(v.origin for v in self.verdicts if v.candidate_id == candidate_id)

    def missing_by_reason(self) -> Counter[str]:
        """The task's missing verdict rows by reason."""
        return Counter(str(v.reason) for v in self.verdicts if v.origin == "missing")

    def coverage(self) -> float | None:
        """The share of the rubric's weight with a verdict over the candidates (``None``: none has a
        coverage, e.g. no rubric)."""
        values = [s.coverage_weight for s in self.scores.values() if s.coverage_weight is not None]
        return sum(values) / len(values) if values else None

    def s_range(self) -> tuple[float, float] | None:
        """The lowest and highest S of the candidates (``None``: no S)."""
        values = [s.score for s in self.scores.values() if s.score is not None]
        return (min(values), max(values)) if values else None


@dataclass
class RunView:
    """A reported run folder as the view shows it."""

    root: Path
    """The run folder."""
    report: Report
    """report.json."""
    tasks: list[TaskView]
    """Every finished task, in report.json's order."""
    plots: dict[str, bytes] = field(default_factory=dict)
    """report.json's plots (path relative to the run folder -> PNG bytes) that are still there."""


def load_view(root: Path) -> RunView:
    """A reported run folder, read for the view.

    Raises:
        DataError: not a run folder, not reported yet, or a file of the wrong shape (file, line, field).
    """
    folder = RunFolder(root)
    report, _ = read_report(folder)
    scores = read_scores(folder)
    progress = folder.progress()
    verdicts, _ = folder.verdicts()
    patches = scored_patches(folder)
    issues, issue_note = _issues(folder)
    tasks = []
    for summary in report.tasks:
        row = progress.get(summary.instance_id)
        if row is None:
            raise DataError(
                f"{folder.report_json}: task {summary.instance_id!r} is not finished in"
                f" {folder.progress_path}; run `agentic-rubrics report --out {root}` again"
            )
        task = TaskView(
            summary=summary,
            progress=row,
            rubric=None,
            verdicts=verdicts.get(summary.instance_id, []),
            scores=scores.get(summary.instance_id, {}),
            patches={
                c.id: patches.get((row.instance_id, c.id, c.sha256 or "")) for c in row.candidates
            },
        )
        _fill(folder, task, issues, issue_note)
        tasks.append(task)
    return RunView(root=root, report=report, tasks=tasks, plots=_plots(root, report))


def _issues(folder: RunFolder) -> tuple[dict[str, str], str]:
    """Issue texts by instance id from the run's tasks file, or why there are none."""
    path = recorded_tasks_file(folder)
    if path is None:
        return {}, "the run's tasks file is gone (the run folder holds only the issue's sha256)"
    try:
        return {t.instance_id: t.problem_statement for t in load_tasks(path)}, ""
    except DataError as exc:
        return {}, f"the run's tasks file no longer reads: {exc}"


def _fill(folder: RunFolder, task: TaskView, issues: dict[str, str], issue_note: str) -> None:
    """The task's rubric, issue text and trajectory, each with a note when it cannot be shown."""
    iid, row = task.instance_id, task.progress
    if row.rubric.status == "ok":
        try:
            rubric, _ = load_rubric(folder.rubric_path(iid))
        except RubricError as exc:
            task.notes.append(f"its rubric no longer loads: {exc}")
        else:
            if rubric.content_hash() == row.rubric.hash:
                task.rubric = rubric
            else:
                task.notes.append("rubrics.yaml changed after the task was judged: not shown")
    issue = issues.get(iid)
    if issue is None:
        task.notes.append(f"issue text: {issue_note or 'the tasks file no longer holds this task'}")
    elif row.problem_hash not in (None, text_hash(issue)):
        task.notes.append("issue text: the tasks file now holds another text than was scored")
    else:
        task.issue = issue
    path = folder.trajectory_path(iid)
    if path.exists():
        try:
            record = json.loads(path.read_text("utf-8"))
            if not isinstance(record, dict):
                raise DataError(f"{path}: expected a JSON object")
            task.trajectory = read_row(Trajectory, record, str(path))
        except (ValueError, RecursionError, DataError) as exc:
            task.notes.append(f"trajectory: {exc}")
    missing = [cid for cid, patch in task.patches.items() if patch is None]
    if missing:
        task.notes.append(f"patches.jsonl holds no patch for {', '.join(missing)}")


def _plots(root: Path, report: Report) -> dict[str, bytes]:
    """The plots report.json lists, read if they are PNG files inside the run folder."""
    out = {}
    base = root.resolve()
    for rel in report.plots:
        path = (root / rel).resolve()
        if path.suffix == ".png" and path.is_relative_to(base) and path.is_file():
            data = path.read_bytes()
            if data.startswith(b"\x89PNG\r\n\x1a\n"):
                out[rel] = data
    return out
