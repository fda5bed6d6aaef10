"""``agentic-rubrics audit-items RUN``: every rubric item of a reported run over its task's pool.

Reads the run folder through its readers — report.json (which must be there: the audit reads a report,
never makes one), scores.jsonl (each candidate's label as the report had it), progress.jsonl (each
task's pool), verdicts.jsonl and the rubrics — computes each item's figures
(:mod:`agentic_rubrics.report.item_stats`), writes ``RUN/audit_items.json`` atomically under the run
folder's lock, and renders them as a table.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from agentic_rubrics.exceptions import DataError, RubricError
from agentic_rubrics.report.item_stats import items_of, summary
from agentic_rubrics.rubric.file import load_rubric
from agentic_rubrics.runfolder.files import atomic_write_json
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.item_audit import (
    ITEM_AUDIT_FILE,
    ItemAudit,
    ItemAuditFile,
    ItemGroup,
    TaskItems,
)
from agentic_rubrics.runfolder.lock import folder_lock
from agentic_rubrics.runfolder.rates import Rate
from agentic_rubrics.runfolder.reported import read_report, read_scores

TOP = 10
"""Groups of items listed as passing most often for unresolved candidates."""


def audit_items(run: Path | str, *, top: int = TOP) -> ItemAuditFile:
    """Audit a reported run folder's items and write ``run/audit_items.json``.

    Raises:
        DataError: not a run folder, not reported, a file of another shape, or a rubric changed since
            it was judged.
        RunFolderBusy: another process is writing to the run folder.
    """
    run = Path(run)
    folder = RunFolder(run)
    folder.config()  # not a run folder: said before the lock makes anything
    with folder_lock(run):
        audit = _audit(folder, top)
        atomic_write_json(run / ITEM_AUDIT_FILE, audit.to_json())
    return audit


def _audit(folder: RunFolder, top: int) -> ItemAuditFile:
    report, raw = read_report(folder)
    scores = read_scores(folder)
    progress = folder.progress()
    verdicts, _ = folder.verdicts()
    tasks = []
    for summary_row in report.tasks:
        iid = summary_row.instance_id
        row = progress.get(iid)
        if row is None:
            raise DataError(
                f"{folder.report_json}: task {iid!r} is not finished in {folder.progress_path};"
                f" run `agentic-rubrics report --out {folder.root}` again"
            )
        candidates = [c.id for c in row.candidates]
        labels = {c: s.resolved for c, s in scores.get(iid, {}).items()}
        items: list[ItemAudit] = []
        if row.rubric.status == "ok":
            path = folder.rubric_path(iid)
            try:
                rubric, _ = load_rubric(path)
            except RubricError as exc:
                raise DataError(f"{iid}: its rubric no longer loads: {exc}") from exc
            if rubric.content_hash() != row.rubric.hash:
                raise DataError(f"{path}: changed after the task was judged")
            items = items_of(rubric, verdicts.get(iid, []), candidates, labels)
        known = [labels.get(c) for c in candidates if labels.get(c) is not None]
        tasks.append(
            TaskItems(
                instance_id=iid,
                candidates=len(candidates),
                labelled=len(known),
                resolved=sum(1 for y in known if y),
                rubric="ok" if row.rubric.status == "ok" else row.rubric.reason or "failed",
                items=items,
            )
        )
    return ItemAuditFile(
        config_hash=report.config_hash,
        report_sha256=hashlib.sha256(raw).hexdigest(),
        labels=report.labels.source,
        summary=summary(tasks, top),
        tasks=tasks,
    )


def _rate(rate: Rate) -> str:
    shown = "" if rate.value is None else f" ({100 * rate.value:.1f}%)"
    return f"{rate.n}/{rate.of}{shown}"


def _num(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def _text(text: str, width: int) -> str:
    """A description for a terminal: control characters out (no escape sequence reaches it), cut."""
    shown = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return shown if len(shown) <= width else shown[: width - 1] + "…"


def _group_rows(title: str, groups: dict[str, ItemGroup]) -> list[str]:
    out = [
        f"{title:<16} {'items':>6} {'defined':>8}  {'non-discriminating':<20} pass all  fail all"
    ]
    for name, g in groups.items():
        out.append(
            f"{name.removesuffix('_rubrics'):<16} {g.items:>6} {g.defined:>8}"
            f"  {_rate(g.non_discriminating):<20} {g.passes_for_all:>8}  {g.fails_for_all:>8}"
        )
    return out


def render_table(audit: ItemAuditFile, *, items: bool = False) -> str:
    """The audit as text: the run's figures by axis and kind, the items passing most for unresolved
    candidates, and, with ``items``, one line per item."""
    s = audit.summary
    o = s.overall
    out = [
        f"{s.tasks} tasks ({s.tasks_with_rubric} with a rubric), {o.items} items;"
        f" labels: {_text(audit.labels, 200)}",
        f"non-discriminating (pass or fail for every candidate with a verdict):"
        f" {_rate(o.non_discriminating)} of the items with verdicts from two candidates or more"
        f" ({o.passes_for_all} pass for all, {o.fails_for_all} fail for all), in"
        f" {s.tasks_with_non_discriminating} tasks; compound items: {s.compound_items}",
        "",
        *_group_rows("axis", s.by_axis),
        "",
        *_group_rows("kind", s.by_kind),
        "",
        "passing most often for unresolved candidates (one description across tasks counts once):",
        f"{'unresolved pass':<18} {'resolved pass':<18} {'items':>5}  {'axis':<14} description",
    ]
    for g in s.unresolved_passes:
        out.append(
            f"{_rate(g.unresolved):<18} {_rate(g.resolved):<18} {len(g.items):>5}"
            f"  {g.axis.removesuffix('_rubrics'):<14} {_text(g.description, 70)}"
        )
    if not s.unresolved_passes:
        out.append("(no unresolved candidate with a verdict)")
    if items:
        out += ["", *_item_rows(audit)]
    return "\n".join(out) + "\n"


def _item_rows(audit: ItemAuditFile) -> list[str]:
    out = [
        "task / item                                    kind     1/0/missing  pass rate"
        "             non-discr.  resolved       unresolved     diff     AUC  compound",
    ]
    for t in audit.tasks:
        for i in t.items:
            nd = {None: "–", True: f"all {i.constant}", False: "no"}[i.non_discriminating]
            out.append(
                f"{_text(f'{t.instance_id}/{i.id}', 46):<46} {i.kind:<8}"
                f" {f'{i.passed}/{i.failed}/{i.missing}':>11}  {_rate(i.pass_rate):<20}"
                f" {nd:<10}  {_rate(i.resolved):<14} {_rate(i.unresolved):<14}"
                f" {_num(i.difference):>6} {_num(i.roc_auc):>7}  {'yes' if i.compound else ''}"
            )
    return out
