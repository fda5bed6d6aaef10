"""A run folder as pandas DataFrames, for notebooks: tasks, candidates' scores, verdicts, selectors.

pandas is an optional extra (``pip install 'agentic-rubrics[pandas]'``); it is imported here, when a
frame is asked for. Every frame is built from the run folder's typed files, as the report reads them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_rubrics.runfolder.files import read_json, read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.report import Report
from agentic_rubrics.runfolder.rows import ScoreRow, read_row


@dataclass
class Frames:
    """One run folder's frames."""

    tasks: Any
    """One row per task: report.json's task summaries."""
    scores: Any
    """One row per candidate: scores.jsonl (S, coverage, decision, label, each selector's value),
    each row validated (a hand-edited one names its line and field)."""
    verdicts: Any
    """One row per verdict: verdicts.jsonl."""
    selectors: Any
    """One row per selector: Best@K, ROC-AUC, PR-AUC and their intervals (report.json)."""


def _pandas() -> Any:
    try:
        import pandas  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ImportError("DataFrames need pandas: pip install 'agentic-rubrics[pandas]'") from exc
    return pandas


def frames(run: Path | RunFolder) -> Frames:
    """The run folder's report, scores and verdicts as DataFrames (it must have been reported)."""
    pd = _pandas()
    folder = run if isinstance(run, RunFolder) else RunFolder(Path(run))
    report = Report.model_validate(read_json(folder.report_json))
    tasks = pd.DataFrame([t.model_dump(mode="json") for t in report.tasks])
    scores = pd.DataFrame(
        [
            read_row(ScoreRow, row, f"{folder.scores_path}:{line}").model_dump(by_alias=True)
            for line, row in read_jsonl(folder.scores_path)
        ]
    )
    verdicts = pd.DataFrame(folder.verdict_rows())
    selectors = pd.DataFrame(
        [
            {"selector": name, **metrics.model_dump(mode="json")}
            for name, metrics in report.selectors.items()
        ]
    )
    return Frames(tasks=tasks, scores=scores, verdicts=verdicts, selectors=selectors)
