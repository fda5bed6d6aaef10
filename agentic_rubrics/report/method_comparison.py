"""``agentic-rubrics compare RUN``: every method of a reported run side by side, with the cost table.

Reads the run folder through its readers only — report.json (which must be there: the comparison
reads a report, never makes one; its cost is spend.jsonl's, its execution the tests verifier's
recorded CPU-seconds), config.json (the verifiers of the run) and each verifier's artifact status
files (its writer's turns) — and writes ``RUN/comparison.json`` and ``RUN/comparison.md`` atomically
under the run folder's lock. Nothing is recomputed: every figure is the report's, every cost a sum of
its recorded phases divided by the run's tasks or candidates.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.report.method_comparison_md import render
from agentic_rubrics.runfolder.files import atomic_write_json, atomic_write_text
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.lock import folder_lock
from agentic_rubrics.runfolder.method_comparison import (
    COMPARISON_JSON,
    COMPARISON_MD,
    K_TOTAL,
    METHODS,
    ArtifactSpend,
    MethodComparison,
    MethodCost,
    MethodFigures,
    Spend,
)
from agentic_rubrics.runfolder.rates import Rate
from agentic_rubrics.runfolder.report import Report
from agentic_rubrics.runfolder.reported import read_report
from agentic_rubrics.runfolder.rows import RubricStatus

PARTS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "rubric": (("explore",), ("judge",)),
    "tests": (("tests_writer",), ()),
    "similarity": (("proxy",), ("similarity",)),
    "patch_classifier": ((), ("classifier",)),
}
"""What a method's score is made of: per part, the model phases that write its artifact (once per
task) and those that grade each candidate. The tests verifier grades by executing (CPU-seconds)."""
USES: dict[str, tuple[str, ...]] = {
    "random": (),
    "oracle": (),
    "self_consistency": (),
    "patch_classifier": ("patch_classifier",),
    "rubric": ("rubric",),
    "tests": ("tests",),
    "similarity": ("similarity",),
    "hybrid": ("rubric", "tests"),
}
"""The parts each method's score needs (a part named like a verifier is that verifier)."""
VERIFIERS = ("rubric", "tests", "similarity")
"""The parts that are verifiers: a run without one has not measured the methods that need it."""


def compare_methods(run: Path | str) -> MethodComparison:
    """Compare the methods of a reported run folder; write ``comparison.json`` and ``comparison.md``.

    Raises:
        DataError: not a run folder, not reported, no labelled candidate, or a file of another shape.
        RunFolderBusy: another process is writing to the run folder.
    """
    run = Path(run)
    folder = RunFolder(run)
    folder.config()  # not a run folder: said before the lock makes anything
    with folder_lock(run):
        made = build_comparison(folder)
        atomic_write_json(run / COMPARISON_JSON, made.to_json())
        atomic_write_text(run / COMPARISON_MD, render(made))
    return made


def build_comparison(folder: RunFolder) -> MethodComparison:
    """The comparison of a reported run folder, written nowhere."""
    report, raw = read_report(folder)
    if report.counts.candidates_labelled == 0:
        raise DataError(
            f"{folder.report_json}: no candidate has a label (resolved), and every figure of the"
            f" comparison rests on labels; report the run with them: agentic-rubrics report --out"
            f" {folder.root} --labels FILE (or --tasks FILE)"
        )
    verifiers = list(folder.recorded().config.verifiers)
    methods = {m: figures(report, m, verifiers) for m in METHODS}
    turns = artifact_turns(folder, report, verifiers)
    return MethodComparison(
        config_hash=report.config_hash,
        report_sha256="sha256:" + hashlib.sha256(raw).hexdigest(),
        labels=report.labels.source,
        verifiers=verifiers,
        tasks=report.counts.tasks,
        tasks_without_labels=report.labels.left_out.tasks_without_a_labelled_candidate,
        candidates=report.counts.candidates,
        candidates_labelled=report.counts.candidates_labelled,
        max_pool=report.counts.max_pool,
        methods=methods,
        cost={m: method_cost(report, m, turns, methods[m].not_measured) for m in METHODS},
        hybrid_weights=report.fitted_weights.get("hybrid"),
    )


def not_measured(report: Report, method: str, verifiers: list[str]) -> str | None:
    """Why the run has no figures for ``method`` (``None``: it has)."""
    for part in USES[method]:
        if part in VERIFIERS and part not in verifiers:
            return f"verifier_not_in_run:{part}"
    if method != "oracle" and method not in report.selectors:
        return "selector_not_in_run"
    return None


def figures(report: Report, method: str, verifiers: list[str]) -> MethodFigures:
    """One method's Best@K (with intervals), ROC-AUC and coverage, as report.json gives them."""
    why = not_measured(report, method, verifiers)
    if why is not None:
        return MethodFigures(
            source=None,
            best_at_k=None,
            best_at_k_ci=None,
            realised_best_at_1=None,
            roc_auc=None,
            roc_auc_ci=None,
            coverage=None,
            not_measured=why,
        )
    if method == "oracle":  # the labels' Pass@K: no interval, no ranking to score
        counts = report.counts
        return MethodFigures(
            source="report.json oracle_pass_at_k",
            best_at_k=dict(report.oracle_pass_at_k),
            best_at_k_ci=dict.fromkeys(report.oracle_pass_at_k),
            realised_best_at_1=None,
            roc_auc=None,
            roc_auc_ci=None,
            coverage=Rate.of_counts(counts.candidates_labelled, counts.candidates),
        )
    s = report.selectors[method]
    return MethodFigures(
        source=f"report.json selectors.{method}",
        best_at_k=dict(s.best_at_k),
        best_at_k_ci=dict(s.best_at_k_ci),
        realised_best_at_1=s.realised_best_at_1,
        roc_auc=s.roc_auc,
        roc_auc_ci=s.roc_auc_ci,
        coverage=s.scored_candidates,
    )


def _task_turns(folder: RunFolder, verifier: str, artifacts: str, iid: str) -> int | None:
    """The turns the agent that wrote one task's artifact took (0: none wrote it, or none took a
    turn); ``None`` for an explored rubric whose status predates the count."""
    if verifier == "rubric":
        rubric = folder.rubric_status(iid)
        if rubric is None or rubric.turns is not None:
            return rubric.turns if rubric is not None else 0
        # an ok rubric's turns are recorded since the comparison needed them: before, unknown
        return None if _explored_ok(rubric) else 0
    status = folder.artifact_status(artifacts, iid)
    return (status.turns if status is not None else None) or 0


def _explored_ok(rubric: RubricStatus) -> bool:
    return rubric.status == "ok" and rubric.source == "explorer:agent"


def artifact_turns(
    folder: RunFolder, report: Report, verifiers: list[str]
) -> dict[str, float | None]:
    """Each verifier's mean turns per task of its artifact's writer (``None``: some not recorded)."""
    entries = folder.verifier_entries()
    ids = [t.instance_id for t in report.tasks]
    out: dict[str, float | None] = {}
    for name in VERIFIERS:
        if name not in verifiers or name not in entries:
            continue
        turns = [_task_turns(folder, name, entries[name].folder, iid) for iid in ids]
        known = [t for t in turns if t is not None]
        out[name] = sum(known) / max(len(ids), 1) if len(known) == len(turns) else None
    return out


def _spend(report: Report, phases: tuple[str, ...], per: int) -> dict[str, float]:
    by_phase = report.cost.by_phase
    return {
        key: sum(float(by_phase.get(p, {}).get(key, 0)) for p in phases) / per
        for key in ("usd", "estimated_usd")
    }


def _execution(report: Report, key: str) -> float:
    value = (report.cost.execution or {}).get(key)
    return float(value) if value is not None else 0.0


def method_cost(
    report: Report, method: str, turns: dict[str, float | None], why: str | None
) -> MethodCost:
    """A method's artifact cost per task, grading cost per candidate and total at K = 16: the sums of
    its parts (``why``: not measured, then no figure at all)."""
    if why is not None:
        return MethodCost(
            artifact_per_task=None,
            grading_per_candidate=None,
            total_per_task_at_k16=None,
            not_measured=why,
        )
    tasks, candidates = max(report.counts.tasks, 1), max(report.counts.candidates, 1)
    artifact = {"usd": 0.0, "estimated_usd": 0.0, "cpu_seconds": 0.0}
    grading = dict(artifact)
    agent_turns: float | None = 0.0
    for part in USES[method]:
        writing, graded = PARTS[part]
        for key, value in _spend(report, writing, tasks).items():
            artifact[key] += value
        for key, value in _spend(report, graded, candidates).items():
            grading[key] += value
        if part == "tests":  # graded by execution: CPU-seconds, no dollars
            artifact["cpu_seconds"] += _execution(report, "validation_cpu_seconds") / tasks
            grading["cpu_seconds"] += _execution(report, "cpu_seconds_per_candidate")
        part_turns = turns.get(part, 0.0)
        agent_turns = (
            None if agent_turns is None or part_turns is None else agent_turns + part_turns
        )
    return MethodCost(
        artifact_per_task=ArtifactSpend(**artifact, agent_turns=agent_turns),
        grading_per_candidate=Spend(**grading),
        total_per_task_at_k16=Spend(**{k: artifact[k] + K_TOTAL * grading[k] for k in artifact}),
    )
