"""A reported run folder read back: report.json and scores.jsonl, typed, refused with the command to
run when the run has not been reported (the view and ``audit-items`` read a report, never make one)."""

from __future__ import annotations

import json

from pydantic import ValidationError

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.report import Report
from agentic_rubrics.runfolder.rows import ScoreRow, field_error, read_row


def read_report(folder: RunFolder) -> tuple[Report, bytes]:
    """report.json, typed, and its bytes (what a record made from it names by hash).

    Raises:
        DataError: not a run folder, not reported, or not a report of this shape (naming the field).
    """
    folder.config()  # not a run folder: say so first
    path = folder.report_json
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise DataError(
            f"{path}: file not found; report the run first: agentic-rubrics report --out {folder.root}"
        ) from exc
    try:
        record = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise DataError(f"{path}: not JSON ({exc})") from exc
    if not isinstance(record, dict):
        raise DataError(f"{path}: expected a JSON object")
    try:
        return Report.model_validate(record), data
    except ValidationError as exc:
        raise DataError(f"{path}: {field_error(exc)}") from exc


def read_scores(folder: RunFolder) -> dict[str, dict[str, ScoreRow]]:
    """scores.jsonl by task and candidate, each row validated (a bad one names its line and field).

    Raises:
        DataError: no scores.jsonl (the run was not reported), or a row of another shape.
    """
    path = folder.scores_path
    if not path.exists():
        raise DataError(f"{path}: file not found; run `agentic-rubrics report --out {folder.root}`")
    scores: dict[str, dict[str, ScoreRow]] = {}
    for line, record in read_jsonl(path):
        score = read_row(ScoreRow, record, f"{path}:{line}")
        scores.setdefault(score.instance_id, {})[score.candidate_id] = score
    return scores
