"""One task's results as the report rebuilds them from the run folder (scores, rankings, picks, labels):
what the report's sections, the plots, the repeats and the audit read."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics.rubric.checks_repo import is_repo_check
from agentic_rubrics.runfolder.rows import ProgressRow
from agentic_rubrics.types import CandidateScore, Rubric, Selection, Verdict

Ranking = dict[str, float | None]


@dataclass
class TaskResult:
    """Everything the report needs about one task, rebuilt from the run folder."""

    instance_id: str
    progress: ProgressRow
    rubric: Rubric | None
    scores: dict[str, CandidateScore]
    labels: dict[str, bool | None]
    verdicts: list[Verdict] = field(default_factory=list)
    rankings: dict[str, Ranking] = field(default_factory=dict)
    values: dict[str, Ranking] = field(default_factory=dict)
    """Per selector, the values ROC/PR rest on (the rubric selector: S, not its tiered rank)."""
    picks: dict[str, Selection] = field(default_factory=dict)
    selected_by: str = ""
    """The selector whose pick goes to selections.jsonl (the primary one, or its fallback)."""
    verdicts_changed: bool = False
    """The task's verdict rows on disk differ from those it wrote (their recorded digest)."""

    @property
    def baselines(self) -> dict[str, Any]:
        """The selectors' features stored at judge time."""
        return self.progress.baselines

    @property
    def labelled_ids(self) -> list[str]:
        """The candidates with a label (metrics rest on these alone)."""
        return [cid for cid, v in self.labels.items() if v is not None]

    @property
    def labelled(self) -> bool:
        """At least one candidate has a label: the task counts in the metrics."""
        return bool(self.labelled_ids)

    @property
    def fully_labelled(self) -> bool:
        """Every candidate has a label."""
        return bool(self.labels) and len(self.labelled_ids) == len(self.labels)

    @property
    def repository_aware_rows(self) -> int:
        """Verdict rows of items decided on the base tree (what the post-image analysis decides)."""
        if self.rubric is None:
            return 0
        aware = {item.id for _, item in self.rubric.items() if is_repo_check(item.check)}
        return sum(1 for v in self.verdicts if v.item_id in aware)

    @property
    def explored_from(self) -> str:
        """Where the explorer's tree came from; ``no_rubric``: the rubric failed before it explored."""
        rubric = self.progress.rubric
        return rubric.repository if rubric.status == "ok" else "no_rubric"
