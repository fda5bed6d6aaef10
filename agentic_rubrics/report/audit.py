"""Rubric utility audit: where S and the hidden tests disagree, and which items decided it.

The notebook ``notebooks/rubric_utility_audit.ipynb`` is a thin layer over these functions. A disagreement
is a candidate whose tests pass but whose S is below 0.7, or whose tests fail but whose S is at least
0.85. Each one is listed with the items that decided it, and can be labelled with the utility taxonomy
below; labels are saved to a CSV that survives re-running the notebook.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.rank.metrics import flakiness
from agentic_rubrics.report.build import build_report_and_results
from agentic_rubrics.report.results import TaskResult
from agentic_rubrics.runfolder.files import atomic_write_text
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.report import Report

HIGH_UTILITY = (
    "rule break",
    "band-aid fix",
    "wrong layer",
    "root cause missed",
    "missing edges",
    "scope creep",
    "perf risk",
    "API break",
    "security risk",
)
LOW_UTILITY = (
    "test/rules mismatch",
    "over-specified fix",
    "API over-strict",
    "style nit",
    "spec clash",
    "reference-patch conflict",
    "redundant signal",
    "eval bug",
    "irrelevant rule",
)
TAXONOMY = {**dict.fromkeys(HIGH_UTILITY, "high"), **dict.fromkeys(LOW_UTILITY, "low")}
"""Utility labels for a disagreement: high (the rubric caught something real) or low (it was wrong)."""

PASS_BUT_LOW = 0.7
FAIL_BUT_HIGH = 0.85
CSV_FIELDS = (
    "instance_id",
    "candidate_id",
    "case",
    "resolved",
    "s",
    "decision",
    "deciding_items",
    "utility",
    "utility_group",
    "note",
)


@dataclass
class Audit:
    """A run's candidates with their scores, labels and verdicts, ready to look at."""

    folder: Path
    results: list[TaskResult]
    report: Report
    rows: list[dict[str, Any]] = field(default_factory=list)


def find_run(start: Path | None = None) -> Path:
    """The run folder to audit: ``$AUDIT_RUN``, else the newest ``runs/demo-*`` that ``make demo`` wrote,
    looked for in the current folder and its parents (a notebook runs in ``notebooks/``).

    Raises:
        DataError: neither is there; the message says how to point the notebook at a run.
    """
    given = os.environ.get("AUDIT_RUN")
    if given:
        return Path(given)
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        demos = [r.parent for r in (folder / "runs").glob("demo-*/report.json")]
        if demos:
            return max(demos, key=lambda d: (d.stat().st_mtime, d.name))
    raise DataError(
        f"no run folder to audit under {here} or its parents: set the environment variable"
        " AUDIT_RUN (or RUN in the notebook's first cell) to a run folder, e.g. runs/exp1, or run"
        " `make demo` first, which writes runs/demo-<time>/"
    )


def load_audit(folder: Path) -> Audit:
    """Everything the audit shows, from a run folder."""
    report, results = build_report_and_results(RunFolder(folder), n_resamples=0)
    audit = Audit(folder, results, report)
    for t in results:
        for cid, s in t.scores.items():
            audit.rows.append(
                {
                    "instance_id": t.instance_id,
                    "candidate_id": cid,
                    "resolved": t.labels.get(cid),
                    "s": s.score,
                    "decision": s.decision,
                    **{f"s_{a.removesuffix('_rubrics')}": v for a, v in s.axis_scores.items()},
                    "coverage": s.coverage_weight,
                }
            )
    return audit


def scores_by_label(audit: Audit) -> dict[str, list[float]]:
    """S of the labelled candidates that have one, split by label."""
    out: dict[str, list[float]] = {"resolved": [], "unresolved": []}
    for r in audit.rows:
        if r["s"] is not None and r["resolved"] is not None:
            out["resolved" if r["resolved"] else "unresolved"].append(r["s"])
    return out


def axis_means(audit: Audit) -> dict[str, dict[str, float | None]]:
    """Mean per-axis S by label."""
    out: dict[str, dict[str, float | None]] = {}
    for axis in ("file_change", "spec_alignment", "integrity", "runtime"):
        out[axis] = {}
        for label in (True, False):
            values = [
                r[f"s_{axis}"]
                for r in audit.rows
                if r["resolved"] is label and r[f"s_{axis}"] is not None
            ]
            out[axis]["resolved" if label else "unresolved"] = (
                sum(values) / len(values) if values else None
            )
    return out


def item_flakiness(audit: Audit) -> float | None:
    """Share of judged items whose repeated verdicts disagree (``None``: nothing repeated)."""
    series: dict[tuple[str, str, str], list[int | None]] = {}
    for t in audit.results:
        for v in t.verdicts:
            if v.origin != "checked":
                series.setdefault((t.instance_id, v.candidate_id, v.item_id), []).append(v.value)
    return flakiness(series.values())


def _deciding(t: TaskResult, cid: str, want: int) -> list[str]:
    """Items with verdict ``want`` for the candidate, heaviest first (0s for a low S, 1s for a high S)."""
    if t.rubric is None:
        return []
    found = []
    for v in t.verdicts:
        if v.candidate_id == cid and v.value == want and v.repeat == 0:
            item = t.rubric.item(v.item_id)
            found.append(
                (
                    -item.weight,
                    item.id,
                    f"{item.id} (w{item.weight}, {v.origin}): {item.description}",
                )
            )
    return [text for _, _, text in sorted(found)]


def disagreements(audit: Audit) -> list[dict[str, Any]]:
    """Tests pass but S < 0.7, and tests fail but S >= 0.85, with the items that decided them."""
    by_task = {t.instance_id: t for t in audit.results}
    out = []
    for r in audit.rows:
        if r["s"] is None or r["resolved"] is None:
            continue
        if r["resolved"] and r["s"] < PASS_BUT_LOW:
            case, want = "tests pass, S low", 0
        elif not r["resolved"] and r["s"] >= FAIL_BUT_HIGH:
            case, want = "tests fail, S high", 1
        else:
            continue
        items = _deciding(by_task[r["instance_id"]], r["candidate_id"], want)
        out.append(
            {
                "instance_id": r["instance_id"],
                "candidate_id": r["candidate_id"],
                "case": case,
                "resolved": r["resolved"],
                "s": round(r["s"], 4),
                "decision": r["decision"],
                "deciding_items": " | ".join(items[:5]),
                "utility": "",
                "utility_group": "",
                "note": "",
            }
        )
    return out


def label(
    rows: list[dict[str, Any]], instance_id: str, candidate_id: str, utility: str, note: str = ""
) -> None:
    """Label one disagreement with a utility category of :data:`TAXONOMY`.

    Raises:
        DataError: an unknown category, or no such disagreement.
    """
    if utility not in TAXONOMY:
        raise DataError(
            f"unknown utility label {utility!r}; expected one of: {', '.join(TAXONOMY)}"
        )
    for row in rows:
        if row["instance_id"] == instance_id and row["candidate_id"] == candidate_id:
            row.update(utility=utility, utility_group=TAXONOMY[utility], note=note)
            return
    raise DataError(f"no disagreement for {instance_id}/{candidate_id}")


def merge_saved_labels(rows: list[dict[str, Any]], path: Path) -> list[dict[str, Any]]:
    """Carry labels already saved in ``path`` over to freshly computed rows."""
    if not path.exists():
        return rows
    with path.open(encoding="utf-8", newline="") as fh:
        saved = {(r["instance_id"], r["candidate_id"]): r for r in csv.DictReader(fh)}
    for row in rows:
        old = saved.get((row["instance_id"], row["candidate_id"]))
        if old and old.get("utility"):
            if old["utility"] not in TAXONOMY:
                raise DataError(
                    f"{path}: unknown utility label {old['utility']!r} for {row['instance_id']}/{row['candidate_id']}"
                )
            row.update(
                utility=old["utility"],
                utility_group=TAXONOMY[old["utility"]],
                note=old.get("note", ""),
            )
    return rows


def save_labels(rows: list[dict[str, Any]], path: Path) -> Path:
    """Write the disagreements with their labels to a CSV (atomically)."""
    import io

    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CSV_FIELDS), lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: row.get(k, "") for k in CSV_FIELDS})
    atomic_write_text(path, buffer.getvalue())
    return path


def html_table(
    rows: list[dict[str, Any]], columns: list[str] | None = None, limit: int = 50
) -> str:
    """A small HTML table for notebooks (no pandas needed)."""
    from html import escape

    if not rows:
        return "<p><em>none</em></p>"
    columns = columns or list(rows[0])
    head = "".join(f"<th>{escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(_fmt(r.get(c)))}</td>" for c in columns) + "</tr>"
        for r in rows[:limit]
    )
    more = f"<p>... {len(rows) - limit} more</p>" if len(rows) > limit else ""
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>{more}"


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.3f}"
    return "" if value is None else str(value)
