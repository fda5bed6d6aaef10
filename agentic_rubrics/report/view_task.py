"""A task's page: a list of sections, each made by one small function of the task.

A section is ``(anchor, title, markup)``; :data:`TASK_SECTIONS` lists the functions that make them, in
page order, and a function may return ``None`` when the task has nothing to show. Another verifier's
artifacts (test outputs, a proxy patch) are one more function appended to the list (or passed to
:func:`task_page`), built with :mod:`agentic_rubrics.report.view_html`'s escaping helpers (``pre``,
``details``, ``table``, ``esc``). Task pages carry no script at all.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import lru_cache

from agentic_rubrics.report.view_data import TaskView
from agentic_rubrics.report.view_html import (
    details,
    diff_html,
    esc,
    fmt,
    label_mark,
    page,
    pct,
    pre,
    table,
)
from agentic_rubrics.types import Check, Verdict

Section = tuple[str, str, str]
"""``(anchor, title, markup)``: one part of a task's page."""
SectionMaker = Callable[[TaskView], Section | None]
"""A function of the task that makes a section, or ``None`` when there is nothing to show."""

AXIS_NAMES = {
    "file_change_rubrics": "file change",
    "spec_alignment_rubrics": "spec alignment",
    "integrity_rubrics": "integrity",
    "runtime_rubrics": "runtime",
}


def issue_section(task: TaskView) -> Section | None:
    """The issue text, and the rubric's summary of the task."""
    body = pre(task.issue, "issue") if task.issue is not None else "<p>(not available)</p>"
    if task.rubric is not None:
        meta = task.rubric.metadata
        body += table(
            ["rubric's summary", ""],
            [
                ["task", esc(meta.task_summary)],
                ["underlying bug", esc(meta.underlying_bug)],
            ],
            cls="kv",
        )
    return "issue", "Issue", body


def rubric_section(task: TaskView) -> Section | None:
    """The rubric's items: axis, weight, gate, check and description."""
    row = task.progress.rubric
    if task.rubric is None:
        why = row.reason or "not available"
        return "rubric", "Rubric", f"<p>No rubric: {esc(why)}.</p>"
    rows = []
    for axis, item in task.rubric.items():
        check = item.check
        rows.append(
            [
                f"<code>{esc(item.id)}</code>",
                esc(AXIS_NAMES.get(axis, axis)),
                esc(item.weight) + (" <b>gate</b>" if item.gate else ""),
                "judged" if check is None else f"<code>{esc(_check_text(check))}</code>",
                esc(item.description),
            ]
        )
    head = (
        f"<p>{len(rows)} items, source <code>{esc(row.source or '?')}</code>, repository"
        f" <code>{esc(row.repository)}</code>, hash <code>{esc((row.hash or '')[:19])}</code>.</p>"
    )
    return "rubric", "Rubric", head + table(["item", "axis", "weight", "check", "text"], rows)


def _check_text(check: Check) -> str:
    """The check as rubrics.yaml writes it (``name: arg``, then ``in`` and ``not_in``)."""
    data = check.model_dump(mode="json")
    return "; ".join(f"{k}: {json.dumps(v, ensure_ascii=False)}" for k, v in data.items())


def _mark(v: Verdict) -> str:
    """One verdict as a classed mark carrying its origin, value and reason."""
    return _mark_of(v.origin, v.value, v.reason, v.detail)


@lru_cache(maxsize=4096)
def _mark_of(origin: str, value: int | None, reason: str | None, detail: str | None) -> str:
    # verdicts repeat the same few marks: 224,000 of them are 10 distinct ones in a 500-task run
    if origin == "missing":
        why = f"{reason}" + (f" ({detail})" if detail else "")
        return (
            f'<span class="v vm" data-origin="missing" data-reason="{esc(reason)}"'
            f' title="missing: {esc(why)}">–<small>{esc(reason)}</small></span>'
        )
    cls = ("vj" if origin == "judged" else "vc") + str(value)
    shown = ("1" if value else "0") if origin == "judged" else ("✓" if value else "✗")
    said = f": {reason}" if reason else ""
    return (
        f'<span class="v {cls}" data-origin="{esc(origin)}" data-value="{esc(value)}"'
        f' title="{esc(origin)}{esc(said)}">{shown}</span>'
    )


_FOR_ALL = {"pass": "passes for all", "fail": "fails for all"}


def matrix_section(task: TaskView) -> Section | None:
    """Items × candidates: each verdict (judged, checked, missing with its reason; every repeat,
    flips marked), then each candidate's S, coverage, decision, label and the selectors that picked it."""
    cids = task.candidate_ids
    flips = task.flips()
    constant = _constant_items(task)
    head = "".join(f'<th data-candidate="{esc(c)}">{esc(c)}</th>' for c in cids)
    rows = []
    items = [(a, i.id, i.weight) for a, i in task.rubric.items()] if task.rubric else []
    known = {i for _, i, _ in items}
    extra = sorted({v.item_id for v in task.verdicts} - known)  # rows no rubric item explains
    for axis, item_id, weight in [*items, *(("?", i, "?") for i in extra)]:
        cells = []
        for cid in cids:
            cls = ' class="flip"' if (cid, item_id) in flips else ""
            marks = "".join(_mark(v) for v in task.cell(cid, item_id))
            cells.append(f'<td data-candidate="{esc(cid)}"{cls}>{marks}</td>')
        label = f"<code>{esc(item_id)}</code> <small>{esc(AXIS_NAMES.get(axis, axis))} ×{esc(weight)}</small>"
        same = constant.get(item_id)  # read from report.json, never recomputed here
        mark = f' class="nd" data-constant="{same}"' if same else ""
        if same:
            label += f' <b class="nd" title="no signal for the ranking">{_FOR_ALL[same]}</b>'
        rows.append(f'<tr data-item="{esc(item_id)}"{mark}><th>{label}</th>{"".join(cells)}</tr>')
    foot = [
        _foot_row(task, "S", lambda c: _s_cell(task, c)),
        _foot_row(task, "coverage", lambda c: pct(_coverage(task, c))),
        _foot_row(task, "decision", lambda c: esc(_decision(task, c))),
        _foot_row(task, "label", lambda c: label_mark(_label(task, c))),
        _foot_row(task, "picked by", lambda c: _picked_by(task, c)),
        _foot_row(task, "verdicts", lambda c: _counts(task, c)),
    ]
    legend = (
        '<p class="legend"><span class="v vj1">1</span>/<span class="v vj0">0</span> judged,'
        ' <span class="v vc1">✓</span>/<span class="v vc0">✗</span> checked,'
        ' <span class="v vm">–</span> missing (its reason); one mark per repeat;'
        ' <span class="flip">outlined</span>: the repeats disagree.'
        f" {len(flips)} flipping cell(s)."
        ' <b class="nd">passes for all</b>/<b class="nd">fails for all</b>: every candidate with a'
        f" verdict got the same value, so the item tells the ranking nothing; {len(constant)} such"
        " item(s) (<code>agentic-rubrics audit-items RUN</code> lists every item's figures).</p>"
    )
    markup = (
        f'{legend}<div class="scroll"><table class="matrix"><thead><tr><th>item</th>{head}</tr>'
        f"</thead><tbody>{''.join(rows)}</tbody><tfoot>{''.join(foot)}</tfoot></table></div>"
    )
    return "matrix", "Verdicts", markup


def _constant_items(task: TaskView) -> dict[str, str]:
    """report.json's non-discriminating items of the task: id -> ``pass`` or ``fail``."""
    found = task.summary.non_discriminating
    if found is None:  # a report written before they were counted: nothing marked
        return {}
    return {
        **dict.fromkeys(found.passes_for_all, "pass"),
        **dict.fromkeys(found.fails_for_all, "fail"),
    }


def _score(task: TaskView, cid: str) -> float | None:
    row = task.scores.get(cid)
    return row.score if row is not None else None


def _coverage(task: TaskView, cid: str) -> float | None:
    row = task.scores.get(cid)
    return row.coverage_weight if row is not None else None


def _decision(task: TaskView, cid: str) -> str:
    row = task.scores.get(cid)
    return row.decision if row is not None else "–"


def _label(task: TaskView, cid: str) -> bool | None:
    row = task.scores.get(cid)
    return row.resolved if row is not None else None


def _s_cell(task: TaskView, cid: str) -> str:
    value = _score(task, cid)
    return f'<span class="s" data-s="{esc(repr(value))}">{fmt(value)}</span>'


def _picked_by(task: TaskView, cid: str) -> str:
    names = [name for name, pick in task.summary.picks.items() if pick.candidate_id == cid]
    selected = task.summary.selected.get("candidate_id") == cid
    tag = '<b class="sel">selected</b> ' if selected else ""
    return tag + " ".join(f"<small>{esc(n)}</small>" for n in names)


def _counts(task: TaskView, cid: str) -> str:
    c = task.origins(cid)
    return (
        f'<small data-judged="{c["judged"]}" data-checked="{c["checked"]}"'
        f' data-missing="{c["missing"]}">{c["judged"]} j · {c["checked"]} c · {c["missing"]} m</small>'
    )


def _foot_row(task: TaskView, name: str, cell: Callable[[str], str]) -> str:
    cells = "".join(f'<td data-candidate="{esc(c)}">{cell(c)}</td>' for c in task.candidate_ids)
    return f'<tr data-row="{esc(name)}"><th>{esc(name)}</th>{cells}</tr>'


def candidates_section(task: TaskView) -> Section | None:
    """Each candidate's patch as scored, highlighted; the selected one open."""
    selected = task.summary.selected.get("candidate_id")
    blocks = []
    for cid in task.candidate_ids:
        patch = task.patches.get(cid)
        s = _score(task, cid)
        label = {True: "resolved", False: "not resolved", None: "unlabelled"}[_label(task, cid)]
        summary = f"{cid} — S {fmt(s)}, {label}"
        if cid == selected:
            summary += ", selected"
        body = diff_html(patch) if patch is not None else "<p>(not in patches.jsonl)</p>"
        blocks.append(details(summary, body, open_=cid == selected, cls="cand"))
    return "candidates", "Candidates' patches", "".join(blocks)


def trajectory_section(task: TaskView) -> Section | None:
    """The explorer's trajectory, collapsed (only when the run kept one)."""
    t = task.trajectory
    if t is None:
        return None
    rows = []
    for n, step in enumerate(t.steps, start=1):
        what = "".join(
            f"<div><small>{esc(key)}</small>{pre(str(val))}</div>"
            for key in ("argument", "thought", "validation", "observation")
            if (val := getattr(step, key)) is not None
        )
        status = "–" if step.exit_code is None else str(step.exit_code)
        rows.append([esc(step.turn or n), esc(step.tool or "–"), esc(status), what])
    summary = (
        f"{t.explorer} ({t.model or 'no model'}, sandbox {t.sandbox or 'none'}): {len(t.steps)}"
        f" steps, {t.status}" + (f" ({t.reason})" if t.reason else "")
    )
    body = table(["turn", "tool", "exit", "what"], rows, cls="steps")
    return "trajectory", "Exploration", details(summary, body)


def notes_section(task: TaskView) -> Section | None:
    """What the page cannot show, and why."""
    if not task.notes:
        return None
    return (
        "notes",
        "Not shown",
        "<ul>" + "".join(f"<li>{esc(n)}</li>" for n in task.notes) + "</ul>",
    )


TASK_SECTIONS: list[SectionMaker] = [
    issue_section,
    rubric_section,
    matrix_section,
    candidates_section,
    trajectory_section,
    notes_section,
]
"""The sections of a task's page, in order: append a function to show another verifier's artifacts."""


def _header(task: TaskView) -> str:
    s = task.summary
    sel = s.selected.get("candidate_id")
    pick = s.picks.get(s.selected.get("selector") or "")
    return (
        f'<h1>{esc(task.instance_id)}</h1><p class="meta">repository'
        f" <code>{esc(task.progress.repo or '?')}</code>, base <code>{esc(s.base_commit[:19])}</code>,"
        f" K = {s.candidates}, {s.labelled} labelled, {s.resolved if s.resolved is not None else '–'}"
        f" resolved; judge <code>{esc(task.progress.judge)}</code> × {task.progress.repeats};"
        f" selected <b>{esc(sel or 'none')}</b> by <code>{esc(s.selected.get('selector') or '–')}</code>"
        f" {label_mark(pick.resolved if pick else None)}</p>"
    )


def task_page(task: TaskView, sections: Sequence[SectionMaker] = TASK_SECTIONS) -> str:
    """A task's whole page (no script: the policy allows none)."""
    made = [sec for make in sections if (sec := make(task)) is not None]
    toc = " · ".join(f'<a href="#{esc(a)}">{esc(title)}</a>' for a, title, _ in made)
    body = "".join(
        f'<section id="{esc(a)}"><h2>{esc(title)}</h2>{markup}</section>'
        for a, title, markup in made
    )
    return page(task.instance_id, f'{_header(task)}<p class="toc">{toc}</p>{body}', home="../")
