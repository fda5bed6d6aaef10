"""scores.jsonl: one row per candidate (:class:`~agentic_rubrics.runfolder.rows.ScoreRow`), from the
results the report was computed from."""

from __future__ import annotations

from agentic_rubrics.report.results import TaskResult
from agentic_rubrics.runfolder.rows import ScoreRow


def score_rows(results: list[TaskResult]) -> list[ScoreRow]:
    """One record per candidate: S, its coverage, the decision with its reason codes, its label
    (``resolved``: ``None`` unlabelled), each selector's ranking value (the rubric's is tiered:
    ``rank_tier`` — empty patch < no verdict < failed gate < inconclusive < scored — then S within the
    tier) and value (what ROC-AUC and PR-AUC rest on: S for the rubric), and the picks."""
    rows = []
    for t in results:
        picked = {name: p.candidate_id for name, p in t.picks.items()}
        for cid, s in t.scores.items():
            rows.append(
                ScoreRow(
                    instance_id=t.instance_id,
                    candidate_id=cid,
                    rubric_hash=t.progress.rubric.hash,
                    judge=t.progress.judge,
                    score=s.score,
                    axis_scores=dict(s.axis_scores),
                    coverage_weight=s.coverage_weight,
                    coverage_items=s.coverage_items,
                    missing=s.missing,
                    decision=s.decision,
                    reasons=s.reasons,
                    rank_tier=s.rank_tier,
                    resolved=t.labels.get(cid),
                    ranking={name: t.rankings[name].get(cid) for name in t.rankings},
                    values={name: t.values[name].get(cid) for name in t.values},
                    selected_by=sorted(name for name, pick in picked.items() if pick == cid),
                )
            )
    return rows
