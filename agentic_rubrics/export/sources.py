"""What ``export-sft`` reads of a run folder, through the run folder's own readers: its configuration,
finished tasks, trajectories, rubrics, verdicts, patches, labels and the issues of its tasks file.

A file of the wrong shape is an error naming the file, the line and the field (``runfolder.rows``); a
patch or an issue that is no longer what the run scored is refused the same way.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.inputs import scored_patches, text_hash
from agentic_rubrics.datasets.labels import Labels, default_labels, load_labels, recorded_tasks_file
from agentic_rubrics.exceptions import DataError, RubricError
from agentic_rubrics.rank.metrics import roc_auc
from agentic_rubrics.rank.scoring import score_candidate
from agentic_rubrics.rubric.file import load_rubric
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.rows import ProgressRow, Trajectory, read_row
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.types import Rubric, Verdict


@dataclass
class RunSource:
    """One run folder, read once."""

    path: Path
    folder: RunFolder
    config_hash: str
    config: dict[str, Any]
    progress: dict[str, ProgressRow]
    labels: Labels
    _verdicts: dict[str, list[Verdict]] | None = field(default=None, repr=False)
    _rubrics: dict[str, Rubric | None] = field(default_factory=dict, repr=False)

    @property
    def models(self) -> dict[str, str]:
        """The explorer's and the judge's models, as config.json records them."""
        out = {}
        for role in ("explorer", "judge"):
            model = (self.config.get(role) or {}).get("model") or {}
            if isinstance(model, dict) and isinstance(model.get("model"), str):
                out[role] = model["model"]
        return out

    def repo(self, instance_id: str) -> str:
        """The task's repository: its progress row's, else the SWE-bench id's ``owner__name``."""
        row = self.progress.get(instance_id)
        if row is not None and row.repo:
            return row.repo
        owner_name = instance_id.rsplit("-", 1)[0]
        return owner_name.replace("__", "/", 1)

    def verdicts(self) -> dict[str, list[Verdict]]:
        """The finished tasks' verdicts (validated once)."""
        if self._verdicts is None:
            self._verdicts = self.folder.verdicts()[0]
        return self._verdicts

    def rubric(self, instance_id: str) -> Rubric | None:
        """The task's rubrics.yaml, parsed and validated now (``None``: absent or invalid)."""
        if instance_id not in self._rubrics:
            path = self.folder.rubric_path(instance_id)
            try:
                self._rubrics[instance_id] = load_rubric(path)[0] if path.is_file() else None
            except RubricError:
                self._rubrics[instance_id] = None
        return self._rubrics[instance_id]

    def utility(self, instance_id: str) -> float | None:
        """ROC-AUC of S over the task's labelled, scored candidates (``None``: not measurable: no
        rubric, no progress row, or fewer than one resolved and one unresolved candidate with S)."""
        row = self.progress.get(instance_id)
        rubric = self.rubric(instance_id)
        if row is None or rubric is None:
            return None
        verdicts = self.verdicts().get(instance_id, [])
        labels = self.labels.for_task(instance_id, [c.id for c in row.candidates])
        scores, truth = [], []
        for cand in row.candidates:
            label = labels.get(cand.id)
            if label is None:
                continue
            mine = [v for v in verdicts if v.candidate_id == cand.id]
            s = score_candidate(
                rubric, mine, instance_id=instance_id, candidate_id=cand.id, empty_patch=cand.empty
            ).score
            if s is not None:
                scores.append(s)
                truth.append(label)
        return roc_auc(scores, truth) if scores else None

    def patches(self) -> dict[tuple[str, str], str]:
        """The patches the run scored, by (instance id, candidate id), as its progress rows name them."""
        kept = scored_patches(self.folder)
        out = {}
        for iid, row in self.progress.items():
            for cand in row.candidates:
                if cand.sha256 is not None and (iid, cand.id, cand.sha256) in kept:
                    out[(iid, cand.id)] = kept[(iid, cand.id, cand.sha256)]
        return out

    def issues(self, tasks_file: Path | None) -> dict[str, str]:
        """Each finished task's issue text, from ``tasks_file`` or the run's own tasks file.

        Raises:
            DataError: no tasks file, or one whose issue text is not the one the run scored.
        """
        path = tasks_file or recorded_tasks_file(self.folder)
        if path is None:
            raise DataError(
                f"{self.path}: its tasks file is gone and the run folder keeps no issue text: give"
                " the tasks file the run was made with (--tasks)"
            )
        out = {}
        for task in load_tasks(path):
            row = self.progress.get(task.instance_id)
            if row is None:
                continue
            if row.problem_hash not in (None, text_hash(task.problem_statement)):
                raise DataError(
                    f"{path}: {task.instance_id}: problem_statement: not the issue text the run"
                    f" {self.path} scored (its hash differs): give the tasks file it was made with"
                )
            out[task.instance_id] = task.problem_statement
        return out

    def trajectories(self) -> list[tuple[Path, Trajectory]]:
        """Every trajectory the run kept, validated (in file-name order).

        Raises:
            DataError: a file that is not JSON, or not a trajectory of this version (file and field).
        """
        folder = self.folder.trajectories_dir
        out = []
        for path in sorted(folder.glob("*.json")) if folder.is_dir() else []:
            try:
                record = json.loads(path.read_text(encoding="utf-8"))
            except (ValueError, UnicodeDecodeError, RecursionError) as exc:
                raise DataError(f"{path}: not JSON ({exc})") from exc
            if not isinstance(record, dict):
                raise DataError(f"{path}: expected a JSON object, got {type(record).__name__}")
            out.append((path, read_row(Trajectory, record, str(path))))
        return out


def open_run(path: Path, labels_file: Path | None = None) -> RunSource:
    """A run folder, its configuration and progress validated (errors name file, line and field)."""
    folder = RunFolder(path)
    recorded = folder.recorded()
    config = folder.config().get("config")
    labels = load_labels(labels_file) if labels_file is not None else default_labels(folder)
    return RunSource(
        path=path,
        folder=folder,
        config_hash=recorded.config_hash,
        config=config if isinstance(config, dict) else {},
        progress=folder.progress(),
        labels=labels,
    )
