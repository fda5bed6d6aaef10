"""Each rubric item over its task's pool: pass rate, whether it discriminates, how it separates labels.

An item's value for a candidate is its verdicts reduced over repeats as S counts them
(:func:`agentic_rubrics.rank.scoring.reduce_repeats`: the majority, a split vote missing). Over the
task's candidates: verdicts 1, 0 and missing (by reason; ``no_verdict_row`` where a candidate has no
row), the pass rate over those with a verdict, and whether the item is *non-discriminating* — every
candidate with a verdict got the same value, defined when at least two have one. With labels: the pass
rate among resolved and among unresolved candidates with a verdict, their difference, and the ROC-AUC of
the 0/1 verdict for the label (Mann-Whitney, ties half: with one binary score it is
``0.5 + difference / 2``; undefined without both a resolved and an unresolved candidate with a verdict).
Every rate carries its counts. Nothing here reads a file: the report and ``audit-items`` hand it what
they read.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

from agentic_rubrics.rank.metrics import roc_auc
from agentic_rubrics.rank.scoring import reduce_repeats
from agentic_rubrics.rubric.compound import compound_reason
from agentic_rubrics.runfolder.item_audit import (
    ItemAudit,
    ItemGroup,
    ItemSummary,
    NonDiscriminating,
    TaskItems,
    TaskNonDiscriminating,
    UnresolvedPasses,
)
from agentic_rubrics.runfolder.rates import Rate
from agentic_rubrics.types import AXES, Rubric, RubricItem, Verdict

NO_ROW = "no_verdict_row"
"""The missing reason of a candidate with no verdict row for an item."""


def items_of(
    rubric: Rubric,
    verdicts: Iterable[Verdict],
    candidates: Sequence[str],
    labels: Mapping[str, bool | None],
) -> list[ItemAudit]:
    """Every item of ``rubric`` over ``candidates`` (the task's pool, in its order)."""
    reduced: dict[str, dict[str, Verdict]] = defaultdict(dict)
    for v in reduce_repeats(verdicts):
        reduced[v.item_id][v.candidate_id] = v
    out = []
    for axis, item in rubric.items():
        values: dict[str, int] = {}
        missing: Counter[str] = Counter()
        for cid in candidates:
            found = reduced[item.id].get(cid)
            if found is None or found.value is None:
                missing[NO_ROW if found is None else str(found.reason)] += 1
            else:
                values[cid] = found.value
        out.append(_item(axis, item, values, missing, labels))
    return out


def _item(
    axis: str,
    item: RubricItem,
    values: dict[str, int],
    missing: Counter[str],
    labels: Mapping[str, bool | None],
) -> ItemAudit:
    passed = sum(values.values())
    distinct = set(values.values())
    defined = len(values) >= 2
    labelled = [(v, bool(labels[c])) for c, v in values.items() if labels.get(c) is not None]
    resolved = [v for v, y in labelled if y]
    unresolved = [v for v, y in labelled if not y]
    res = Rate.of_counts(sum(resolved), len(resolved))
    unres = Rate.of_counts(sum(unresolved), len(unresolved))
    difference = None
    if res.value is not None and unres.value is not None:
        difference = res.value - unres.value
    return ItemAudit(
        id=item.id,
        axis=axis,
        weight=item.weight,
        kind="judged" if item.check is None else "checked",
        check=None if item.check is None else item.check.name,
        gate=item.gate,
        compound=compound_reason(item.description),
        description=item.description,
        passed=passed,
        failed=len(values) - passed,
        missing=sum(missing.values()),
        missing_by_reason=dict(sorted(missing.items())),
        pass_rate=Rate.of_counts(passed, len(values)),
        non_discriminating=len(distinct) == 1 if defined else None,
        constant=("pass" if 1 in distinct else "fail") if defined and len(distinct) == 1 else None,
        resolved=res,
        unresolved=unres,
        difference=difference,
        roc_auc=roc_auc([v for v, _ in labelled], [y for _, y in labelled]) if labelled else None,
    )


def task_non_discriminating(items: Sequence[ItemAudit]) -> TaskNonDiscriminating:
    """report.json's count for one task, with the ids the view marks."""
    passes = [i.id for i in items if i.constant == "pass"]
    fails = [i.id for i in items if i.constant == "fail"]
    return TaskNonDiscriminating(
        count=len(passes) + len(fails),
        of=sum(1 for i in items if i.non_discriminating is not None),
        passes_for_all=passes,
        fails_for_all=fails,
    )


def non_discriminating(tasks: Sequence[Sequence[ItemAudit]]) -> NonDiscriminating:
    """report.json's count over every task."""
    every = group([i for items in tasks for i in items])
    return NonDiscriminating(
        items=every.non_discriminating,
        passes_for_all=every.passes_for_all,
        fails_for_all=every.fails_for_all,
        tasks_with_any=sum(1 for items in tasks if any(i.non_discriminating for i in items)),
    )


def group(items: Sequence[ItemAudit]) -> ItemGroup:
    """The counts of some items."""
    defined = [i for i in items if i.non_discriminating is not None]
    passes = sum(1 for i in defined if i.constant == "pass")
    fails = sum(1 for i in defined if i.constant == "fail")
    return ItemGroup(
        items=len(items),
        defined=len(defined),
        non_discriminating=Rate.of_counts(passes + fails, len(defined)),
        passes_for_all=passes,
        fails_for_all=fails,
    )


def summary(tasks: Sequence[TaskItems], top: int = 10) -> ItemSummary:
    """The run-level figures: by axis, by kind, and the items passing most for unresolved candidates."""
    every = [i for t in tasks for i in t.items]
    return ItemSummary(
        tasks=len(tasks),
        tasks_with_rubric=sum(1 for t in tasks if t.rubric == "ok"),
        tasks_with_non_discriminating=sum(
            1 for t in tasks if any(i.non_discriminating for i in t.items)
        ),
        compound_items=sum(1 for i in every if i.compound is not None),
        overall=group(every),
        by_axis={a: group([i for i in every if i.axis == a]) for a in AXES},
        by_kind={k: group([i for i in every if i.kind == k]) for k in ("checked", "judged")},
        unresolved_passes=unresolved_passes(tasks, top),
    )


def unresolved_passes(tasks: Sequence[TaskItems], top: int) -> list[UnresolvedPasses]:
    """Items grouped by (description, axis, kind) across tasks — a static explorer writes the same
    item for every task — ranked by how many unresolved candidates they pass, then by that rate."""
    groups: dict[tuple[str, str, str], list[tuple[str, ItemAudit]]] = defaultdict(list)
    for t in tasks:
        for i in t.items:
            groups[(i.description, i.axis, i.kind)].append((t.instance_id, i))
    found = []
    for (description, axis, kind), members in groups.items():
        items = [i for _, i in members]
        unresolved = Rate.of_counts(
            sum(i.unresolved.n for i in items), sum(i.unresolved.of for i in items)
        )
        if not unresolved.of:
            continue
        resolved = Rate.of_counts(
            sum(i.resolved.n for i in items), sum(i.resolved.of for i in items)
        )
        found.append(
            UnresolvedPasses(
                description=description,
                axis=axis,
                kind=kind,
                items=[f"{iid}/{i.id}" for iid, i in members],
                unresolved=unresolved,
                resolved=resolved,
            )
        )
    found.sort(key=lambda g: (-g.unresolved.n, -(g.unresolved.value or 0.0), g.description))
    return found[:top]
