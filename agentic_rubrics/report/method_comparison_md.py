"""``comparison.md``: a :class:`MethodComparison` as Markdown tables (figures as given, none computed).

:func:`sections` is what ``benchmarks/compare_verifiers.py`` writes under its own heading too, so the
command and the benchmark print one table.
"""

from __future__ import annotations

from agentic_rubrics.runfolder.method_comparison import (
    K_TOTAL,
    METHODS,
    MethodComparison,
    MethodCost,
    MethodFigures,
)

WHY = {"selector_not_in_run": "its selector is not among the report's"}
"""How the table says a reason code (``verifier_not_in_run:<name>`` is said with its name)."""
NOT_MEASURED = "not measured"


def _num(value: float | None, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(value: float | None, ci: list[float] | None) -> str:
    if value is None:
        return "—"
    if not ci or ci[0] is None:
        return _num(value)
    return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def _why(code: str) -> str:
    if code.startswith("verifier_not_in_run:"):
        return f"the run did not run the {code.partition(':')[2]} verifier"
    return WHY.get(code, code)


def header(comparison: MethodComparison) -> list[str]:
    """comparison.md's heading: what the run measured, and on what."""
    c = comparison
    unlabelled = (
        f" ({c.tasks_without_labels} without a label: they count in no figure)"
        if c.tasks_without_labels
        else ""
    )
    return [
        "# Verifiers compared on the same instances and candidates",
        "",
        f"Verifiers of the run: {', '.join(c.verifiers)}. {c.tasks} tasks{unlabelled},"
        f" {c.candidates} candidates ({c.candidates_labelled} labelled; largest pool"
        f" {c.max_pool}); labels: {c.labels}. Figures from report.json ({c.report_sha256[:19]}…)"
        " and the artifacts' status files, none recomputed.",
        "",
    ]


def _best_at_k(methods: dict[str, MethodFigures]) -> list[str]:
    shown = [m for m in METHODS if methods[m].best_at_k is not None]
    ks = sorted(methods["oracle"].best_at_k or {}, key=int)
    lines = [
        "## Best@K",
        "",
        "Expected share of tasks solved when the method picks one of K candidates drawn at random, "
        "95% bootstrap interval over tasks (report.json's figures; the oracle is the labels' Pass@K, "
        "given without an interval).",
        "",
        "| K | " + " | ".join(shown) + " |",
        "|---:|" + "---|" * len(shown),
    ]
    for k in ks:
        cells = []
        for m in shown:
            f = methods[m]
            cells.append(_ci((f.best_at_k or {}).get(k), (f.best_at_k_ci or {}).get(k)))
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    return lines


def _ranking(methods: dict[str, MethodFigures]) -> list[str]:
    lines = [
        "",
        "## Ranking quality and coverage",
        "",
        "| method | realised Best@1 | ROC-AUC | candidates with a value |",
        "|---|---|---|---|",
    ]
    for m in METHODS:
        f = methods[m]
        if f.not_measured is not None:
            lines.append(f"| {m} | {NOT_MEASURED} | {NOT_MEASURED} | {NOT_MEASURED} |")
            continue
        cover = f"{f.coverage.n}/{f.coverage.of}" if f.coverage is not None else "—/—"
        lines.append(
            f"| {m} | {_num(f.realised_best_at_1)} | {_ci(f.roc_auc, f.roc_auc_ci)} | {cover} |"
        )
    return lines


def _cost_row(method: str, c: MethodCost) -> str:
    a, g, t = c.artifact_per_task, c.grading_per_candidate, c.total_per_task_at_k16
    if a is None or g is None or t is None:
        return f"| {method} |" + f" {NOT_MEASURED} |" * 10
    turns = "—" if a.agent_turns is None else f"{a.agent_turns:.1f}"
    return (
        f"| {method} | {a.usd:.4f} | {a.estimated_usd:.4f} | {turns}"
        f" | {a.cpu_seconds:.3f} | {g.usd:.5f} | {g.estimated_usd:.5f}"
        f" | {g.cpu_seconds:.3f} | {t.usd:.4f} | {t.estimated_usd:.4f}"
        f" | {t.cpu_seconds:.2f} |"
    )


def _cost(comparison: MethodComparison) -> list[str]:
    lines = [
        "",
        "## Cost",
        "",
        "Artifact: written once per task (model $ and the writer agent's turns; CPU-seconds of the "
        "tests' validation on the base tree). Grading: per candidate of the run (model $ of the rubric judge, the "
        f"similarity judge or the classifier; CPU-seconds of executing the tests). Total at K = {K_TOTAL}: "
        f"artifact + {K_TOTAL} × grading, per task. $ measured is what providers reported; $ est. what the "
        "run's budget was charged for calls without a price.",
        "",
        "| method | artifact $ | artifact $ est. | agent turns | artifact CPU-s | grading $ "
        "| grading $ est. | grading CPU-s | total@16 $ | total@16 $ est. | total@16 CPU-s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    return lines + [_cost_row(m, comparison.cost[m]) for m in METHODS]


def _notes(comparison: MethodComparison) -> list[str]:
    lines: list[str] = []
    weights = comparison.hybrid_weights
    if weights:
        lines += [
            "",
            f"Hybrid weight on S: {weights.get('rubric_weight')} ({weights.get('source')}).",
        ]
    absent = [m for m in METHODS if comparison.methods[m].not_measured is not None]
    if absent:
        said = [f"{m} ({_why(comparison.methods[m].not_measured or '')})" for m in absent]
        lines += ["", f"Not measured in this run: {'; '.join(said)}."]
    if any(
        c.artifact_per_task is not None and c.artifact_per_task.agent_turns is None
        for c in comparison.cost.values()
    ):
        lines += [
            "",
            "Agent turns —: a rubric explored by an agent before agentic-rubrics recorded its turns"
            " in `rubrics/<id>/status.json`.",
        ]
    return lines


def sections(comparison: MethodComparison) -> list[str]:
    """Best@K with intervals, ranking quality and coverage, the cost table, and the notes."""
    return [
        *_best_at_k(comparison.methods),
        *_ranking(comparison.methods),
        *_cost(comparison),
        *_notes(comparison),
    ]


def render(comparison: MethodComparison) -> str:
    """comparison.md's text."""
    return "\n".join([*header(comparison), *sections(comparison)]) + "\n"
