"""Repeated judgements: flakiness of model verdicts, and how often the rubric's pick changes by repeat."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.rerank import rubric_ranking, select
from agentic_rubrics.rank.scoring import DecisionPolicy, score_candidate

if TYPE_CHECKING:
    from agentic_rubrics.report.results import TaskResult


def _rate(num: int, den: int) -> dict[str, Any]:
    return {"value": num / den if den else None, "n": num, "of": den}


def repeat_stability(
    results: list[TaskResult], policy: DecisionPolicy, seed: int
) -> dict[str, Any]:
    """Flakiness over repeated model verdicts, and how often the rubric's pick changes by repeat.

    Identical patches share their verdicts, so each (task, patch, item) counts once. Checked items
    never vary and are left out.
    """
    series: dict[tuple[str, str, str], dict[int, int | None]] = {}
    changed = with_repeats = 0
    for t in results:
        repeats = t.progress.repeats
        if repeats < 2:
            continue
        hashes = {c.id: c.patch_hash for c in t.progress.candidates}
        for v in t.verdicts:
            if v.origin == "checked" or v.reason == "empty_patch":
                continue
            series.setdefault((t.instance_id, hashes[v.candidate_id], v.item_id), {})[v.repeat] = (
                v.value
            )
        if t.rubric is None:
            continue
        with_repeats += 1
        picks = set()
        for r in range(repeats):
            scores = {}
            for cand in t.progress.candidates:
                cid = cand.id
                rows = [
                    v
                    for v in t.verdicts
                    if v.candidate_id == cid and (v.repeat == r or v.origin == "checked")
                ]
                scores[cid] = score_candidate(
                    t.rubric,
                    rows,
                    instance_id=t.instance_id,
                    candidate_id=cid,
                    empty_patch=cand.empty,
                    policy=policy,
                )
            picks.add(select(t.instance_id, rubric_ranking(scores), "rubric", seed).candidate_id)
        changed += len(picks) > 1
    return {
        "flakiness": metrics.flakiness(list(s.values()) for s in series.values()),
        "flakiness_items": sum(
            1 for s in series.values() if sum(v is not None for v in s.values()) >= 2
        ),
        "selection_changes_between_repeats": _rate(changed, with_repeats) if with_repeats else None,
    }
