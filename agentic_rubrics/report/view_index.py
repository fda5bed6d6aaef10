"""``RUN/view/``: the index (headline, plots, one row per task) and a page per task, written at once.

The index's rows are a JSON data block that its one script (``view_assets/index.js``) renders a page
at a time, sorted and filtered in the browser: 500 tasks stay one small file, and each task's matrix
and patches live on its own page. The folder is written beside the old one and swapped in, so a
reader never sees half of it.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from agentic_rubrics.report.view_data import LOW_COVERAGE, RunView, TaskView, load_view
from agentic_rubrics.report.view_html import (
    asset,
    esc,
    fmt,
    json_block,
    page,
    pct,
    png_data_uri,
    table,
)
from agentic_rubrics.report.view_task import task_page
from agentic_rubrics.runfolder.files import atomic_write_text
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.lock import folder_lock
from agentic_rubrics.runfolder.names import safe_name
from agentic_rubrics.runfolder.report import Report

VIEW_DIR = "view"
"""The view's folder inside the run folder."""
PAGE_SIZE = 100
"""Rows of the task table shown at a time."""


@dataclass
class Written:
    """What :func:`write_view` wrote."""

    folder: Path
    """The view's folder."""
    tasks: int
    """Task pages."""
    bytes: int
    """Bytes of every file."""
    seconds: float
    """Wall time, reading included."""


def page_name(instance_id: str) -> str:
    """A task page's path inside the view (a safe file name, URL-quoted)."""
    return f"tasks/{quote(safe_name(instance_id))}.html"


def task_row(task: TaskView) -> dict[str, Any]:
    """One task as the index's script reads it."""
    s = task.summary
    selected = s.selected.get("candidate_id")
    pick = s.picks.get(s.selected.get("selector") or "")
    resolved = pick.resolved if pick is not None and pick.candidate_id == selected else None
    s_range = task.s_range()
    usd = sum(float(phase.get("usd", 0) or 0) for phase in s.cost.values())
    return {
        "id": task.instance_id,
        "page": page_name(task.instance_id),
        "repo": task.progress.repo,
        "k": s.candidates,
        "labelled": s.labelled,
        "resolved": s.resolved,
        "pick": selected,
        "pick_resolved": resolved,
        "wrong": resolved is False and bool(s.resolved),
        "s_min": s_range[0] if s_range else None,
        "s_max": s_range[1] if s_range else None,
        "coverage": task.coverage(),
        "flips": len(task.flips()),
        # report.json's count of items passing or failing for every candidate (None: not counted)
        "nondisc": None if s.non_discriminating is None else s.non_discriminating.count,
        "missing": dict(task.missing_by_reason()),
        "picks": {n: [p.candidate_id, p.resolved] for n, p in s.picks.items()},
        "usd": usd,
        "rubric": s.rubric.status if s.rubric.status == "ok" else s.rubric.reason or "failed",
    }


def headline(report: Report) -> str:
    """The run's counts, label source, selectors' metrics and warnings."""
    c, sel = report.counts, report.selectors
    k_max = max((int(k) for k in report.oracle_pass_at_k), default=None)
    ks = ["1"] + ([str(k_max)] if k_max is not None and k_max > 1 else [])
    rows = [
        [
            f"<code>{esc(name)}</code>"
            + (" <b>primary</b>" if name == report.primary_selector else ""),
            *(pct(m.best_at_k.get(k)) for k in ks),
            pct(m.realised_best_at_1),
            fmt(m.roc_auc),
            fmt(m.pr_auc),
        ]
        for name, m in sel.items()
    ]
    rows.append(["oracle Pass@K", *(pct(report.oracle_pass_at_k.get(k)) for k in ks), "", "", ""])
    heads = ["selector", *(f"Best@{k}" for k in ks), "realised Best@1", "ROC-AUC", "PR-AUC"]
    cov, v = report.coverage, report.verdicts
    facts = [
        f"{c.tasks} tasks ({c.tasks_labelled} labelled), {c.candidates} candidates"
        f" ({c.resolved} of {c.candidates_labelled} labelled ones resolved)",
        f"labels: {report.labels.source}",
        f"explorer {report.explorer}, judge {', '.join(report.judge) or 'none'},"
        f" configuration {report.config_hash[:19]}",
        f"selections: {report.selection.primary} ({report.selection.reason})",
        "verdict rows: " + ", ".join(f"{k} {n}" for k, n in sorted(v.origins.items())),
        "missing by reason: "
        + (", ".join(f"{k} {n}" for k, n in sorted(v.missing_by_reason.items())) or "none"),
        f"weight with a verdict: {pct(cov.weight_with_verdict.value)}; flakiness"
        f" {fmt(report.flakiness)} over {report.flakiness_items} repeated items",
        f"Random@K {pct(report.random_at_k)}; cost ${report.cost.usd:.4f}"
        f" over {report.cost.calls} calls",
    ]
    problems = report.problems.fatal + report.problems.warnings
    return (
        '<ul class="facts">'
        + "".join(f"<li>{esc(f)}</li>" for f in facts)
        + "</ul>"
        + (
            '<ul class="problems">' + "".join(f"<li>{esc(p)}</li>" for p in problems) + "</ul>"
            if problems
            else ""
        )
        + table(heads, rows, cls="metrics")
    )


def _plots(view: RunView) -> str:
    if not view.plots:
        return ""
    figures = "".join(
        f'<figure><img alt="{esc(rel)}" src="{png_data_uri(data)}"><figcaption>{esc(rel)}'
        "</figcaption></figure>"
        for rel, data in view.plots.items()
    )
    return f'<details class="plots" open><summary>Plots</summary>{figures}</details>'


def _controls(view: RunView) -> str:
    reasons = sorted({r for t in view.tasks for r in t.missing_by_reason()})
    options = [
        ("all", "all tasks"),
        ("wrong", "wrong pick (a resolved candidate was there)"),
        ("lowcov", f"coverage below {LOW_COVERAGE:.0%} (or no rubric)"),
        ("flaky", "flaky (repeats disagree)"),
        ("nondisc", "non-discriminating items (pass or fail for all)"),
        ("missing", "any missing verdict"),
        *((f"missing:{r}", f"missing: {r}") for r in reasons),
    ]
    select = "".join(f'<option value="{esc(v)}">{esc(t)}</option>' for v, t in options)
    return (
        '<div class="controls"><label>show <select id="filter">'
        f'{select}</select></label> <label>find <input id="find" type="search"'
        ' placeholder="instance id or repository"></label> <span id="shown"></span>'
        ' <button id="prev" type="button">‹ prev</button> <span id="pageno"></span>'
        ' <button id="next" type="button">next ›</button></div>'
    )


def index_page(view: RunView, page_size: int = PAGE_SIZE) -> str:
    """The index: headline, plots and the task table (rendered by the script from the data block,
    ``page_size`` rows at a time)."""
    names = list(view.report.selectors)
    heads = [
        ("id", "task"),
        ("repo", "repository"),
        ("k", "K"),
        ("labelled", "labelled"),
        ("resolved", "resolved"),
        ("pick", "pick"),
        ("s_max", "S range"),
        ("coverage", "coverage"),
        ("flips", "flips"),
        ("nondisc", "same for all"),
        ("missing_n", "missing"),
        *((f"pick:{n}", n) for n in names),
        ("usd", "cost $"),
    ]
    th = "".join(f'<th data-key="{esc(k)}" tabindex="0">{esc(t)}</th>' for k, t in heads)
    links = "".join(
        f'<li><a href="{esc(page_name(t.instance_id))}">{esc(t.instance_id)}</a></li>'
        for t in view.tasks
    )
    body = (
        "<h1>agentic-rubrics run</h1>"
        f'<p class="meta">{esc(view.root.name)}</p>{headline(view.report)}{_plots(view)}'
        f'<h2>Tasks</h2>{_controls(view)}<table id="tasks" class="tasks"><thead><tr>{th}</tr>'
        "</thead><tbody></tbody></table>"
        f"<noscript><ul>{links}</ul></noscript>"
        + json_block(
            "view-data",
            {
                "page_size": page_size,
                "selectors": names,
                "tasks": [task_row(t) for t in view.tasks],
            },
        )
    )
    return page("agentic-rubrics run", body, script=asset("index.js"))


def write_view(run: Path, *, page_size: int = PAGE_SIZE) -> Written:
    """Write ``run/view/`` from the reported run folder (replacing an older view at once).

    Raises:
        DataError: not a run folder, not reported, or a file of the wrong shape.
        RunFolderBusy: another process is writing to the run folder.
    """
    started = time.perf_counter()
    RunFolder(run).config()  # not a run folder: said before anything is made
    with folder_lock(run):  # the report's files are not rewritten while they are read
        view = load_view(run)
        return _write(run, view, page_size, started)


def _write(run: Path, view: RunView, page_size: int, started: float) -> Written:
    """Every page written into a new folder beside the old view, then swapped in for it."""
    target = run / VIEW_DIR
    tmp = Path(tempfile.mkdtemp(prefix=".view-", dir=run))
    try:
        atomic_write_text(tmp / "index.html", index_page(view, page_size), durable=False)
        for task in view.tasks:
            atomic_write_text(tmp / page_name(task.instance_id), task_page(task), durable=False)
        size = sum(p.stat().st_size for p in tmp.rglob("*") if p.is_file())
        old = run / f".view-old-{time.time_ns()}"
        if target.exists():
            target.rename(old)
        tmp.rename(target)
        shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return Written(target, len(view.tasks), size, time.perf_counter() - started)
