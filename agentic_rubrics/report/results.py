"""One task's results as the report rebuilds them from the run folder (scores, rankings, picks, labels):
what the report's sections, the plots, the repeats and the audit read."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from agentic_rubrics.report.item_stats import items_of
from agentic_rubrics.rubric.checks_repo import is_repo_check
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.item_audit import ItemAudit
from agentic_rubrics.runfolder.recorded import VerifierEntry
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

    @cached_property
    def items(self) -> list[ItemAudit] | None:
        """Its rubric's items over its pool (:mod:`agentic_rubrics.report.item_stats`); ``None``
        without a rubric."""
        if self.rubric is None:
            return None
        candidates = [c.id for c in self.progress.candidates]
        return items_of(self.rubric, self.verdicts, candidates, self.labels)

    @property
    def explored_from(self) -> str:
        """Where the explorer's tree came from; ``no_rubric``: the rubric failed before it explored."""
        rubric = self.progress.rubric
        return rubric.repository if rubric.status == "ok" else "no_rubric"


def rank_tasks(results: list[TaskResult], selectors: Sequence[str], seed: int) -> None:
    """Each selector's ranking, values and pick in every task; the selectors that read every task
    first (``prepare``: the hybrid chooses its weight on the labelled ones) do so before."""
    from agentic_rubrics.rank.rerank import select
    from agentic_rubrics.rank.selectors import get_selector, prepare_selectors
    from agentic_rubrics.rank.selectors.guard import guarded

    prepare_selectors(selectors, results)
    for result in results:
        for name in selectors:
            selector = get_selector(name)
            ranking = selector.ranking(result)
            # what ROC/PR rest on is the selector's own; what it picks never fixes nothing
            result.values[name] = selector.values(result, ranking)
            result.rankings[name] = guarded(selector, result, ranking)
            result.picks[name] = select(result.instance_id, result.rankings[name], name, seed)


def run_cost(
    spend_path: Path, results: list[TaskResult], max_cost_usd: float | None
) -> dict[str, Any]:
    """The report's cost: every model request of the run (spend.jsonl), the calls served from the
    response cache for the finished tasks (they cost nothing), and the tests verifier's execution in
    CPU-seconds (``execution``: not dollars; ``None`` when nothing was executed)."""
    from agentic_rubrics.llm.spend import cost_summary, read_spending

    costs = [c for t in results for c in t.progress.cost.values()]
    cached = float(sum(c.get("cached_calls", 0) for c in costs))
    out = cost_summary(read_spending(spend_path), cached, len(results), max_cost_usd)
    # what executing candidates cost (CPU-seconds, no dollars): each verifier's ``<name>_grading``
    # and ``<name>_validation`` phases
    phases = [(p, c) for t in results for p, c in t.progress.cost.items() if "cpu_seconds" in c]
    grading = [c for p, c in phases if p.endswith("_grading")]
    checks = [c for p, c in phases if p.endswith("_validation")]
    if grading or any(checks):
        cpu = sum(float(g.get("cpu_seconds", 0)) for g in grading)
        candidates = sum(int(g.get("candidates", 0)) for g in grading)
        out["execution"] = {
            "tasks": len(grading),
            "runs": sum(int(g.get("runs", 0)) for g in grading),
            "cpu_seconds": round(cpu, 4),
            "cpu_seconds_per_candidate": round(cpu / candidates, 4) if candidates else None,
            "validation_cpu_seconds": round(sum(float(c.get("cpu_seconds", 0)) for c in checks), 4),
            "unmeasured_runs": sum(int(g.get("unmeasured_runs", 0)) for g in grading),
        }
    return out


def verifier_summary(
    results: list[TaskResult], entries: Mapping[str, VerifierEntry]
) -> dict[str, Any] | None:
    """The verifiers whose grades are a record of ``baselines`` (all but the rubric) over the run
    (``None`` when none ran): per verifier, how many tasks it graded, why the others were excluded,
    its candidates with and without a score (by reason), what its artifact is called and where its
    artifacts are (``entries``: what config.json records of each)."""
    out: dict[str, Any] = {}
    for name, entry in entries.items():
        if entry.record is None or entry.scores is None:
            continue
        key = entry.record
        records = [t.progress.baselines[key] for t in results if key in t.progress.baselines]
        records = [r for r in records if isinstance(r, dict)]
        if records:
            found = _one_verifier(records, entry.scores)
            out[name] = {**found, "artifact": entry.artifact, "folder": entry.folder}
    return out or None


def _one_verifier(records: list[dict[str, Any]], scores: str) -> dict[str, Any]:
    excluded: dict[str, int] = {}
    missing: dict[str, int] = {}
    scored = 0
    for record in records:
        if record.get("status") != "graded":
            why = str(record.get("reason"))
            excluded[why] = excluded.get(why, 0) + 1
        rates, reasons = record.get(scores) or {}, record.get("reasons") or {}
        for cid, rate in rates.items():
            if isinstance(rate, int | float):
                scored += 1
            else:
                why = str(reasons.get(cid))
                missing[why] = missing.get(why, 0) + 1
    graded = sum(1 for r in records if r.get("status") == "graded")
    approximate = sum(1 for r in records if r.get("approximate_tree") is True)
    return {
        "tasks": len(records),
        "graded": graded,
        "excluded": dict(sorted(excluded.items())),
        "scored_candidates": scored,
        "missing_candidates": dict(sorted(missing.items())),
        # graded on a release sdist standing in for the base commit (said only when some were)
        **({"approximate_tree": approximate} if approximate else {}),
    }


def listed_no_lines(results: Sequence[TaskResult], folder: RunFolder) -> None:
    """A task stored before self-consistency listed its candidates with no changed line (prose, a
    binary-only diff) gets the list from the folder's scored patches, so that the selector never
    picks one there either: its stored agreement values still let such copies agree."""
    from agentic_rubrics.datasets.inputs import scored_patches
    from agentic_rubrics.patch import changed_lines
    from agentic_rubrics.rank.selectors.self_consistency import NO_LINES

    old = [t for t in results if "self_consistency" in t.baselines and NO_LINES not in t.baselines]
    patches = {(i, c): p for (i, c, _), p in scored_patches(folder).items()} if old else {}
    for t in old:
        mine = {c.id: patches.get((t.instance_id, c.id)) for c in t.progress.candidates}
        none = sorted(c for c, p in mine.items() if p is not None and not changed_lines(p))
        t.progress.baselines[NO_LINES] = none
