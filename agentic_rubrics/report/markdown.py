"""report.md: the report's numbers as a page people read (tables, coverage, decisions, cost, plots)."""

from __future__ import annotations

from typing import Any

from agentic_rubrics.report.compare import comparison_lines
from agentic_rubrics.rubric.grounding import grounding_markdown
from agentic_rubrics.runfolder.rates import Rate
from agentic_rubrics.runfolder.report import Cost, Report, Similarity


def _fmt(x: float | None, ci: list[float] | None = None) -> str:
    if x is None:
        return "n/a"
    text = f"{x:.3f}"
    if ci:
        text += f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return text


def _pct(rate: Rate) -> str:
    v = rate.value
    return f"{rate.n}/{rate.of}" + ("" if v is None else f" ({100 * v:.1f}%)")


def _plot_lines(plots: list[tuple[str, str]]) -> list[str]:
    if not plots:
        return []
    lines = ["## Plots", ""]
    for title, path in plots:
        lines += [f"![{title}]({path})", ""]
    return lines


def _repeat_lines(report: Report) -> list[str]:
    change = report.selection_changes_between_repeats
    if change is None:
        return []
    return [
        f"- Judged items with repeats: {report.flakiness_items}; the rubric's pick changes between"
        f" repeats in {_pct(change)} tasks"
    ]


def _tests_lines(report: Report) -> list[str]:
    lines = []
    for name, found in (report.verifiers or {}).items():
        word = str(found.get("artifact", "artifact"))
        artifact = word[:-1] + "ies" if word.endswith("y") else word + "s"
        excluded = ", ".join(f"{k} {v}" for k, v in found["excluded"].items()) or "none"
        missing = ", ".join(f"{k} {v}" for k, v in found["missing_candidates"].items()) or "none"
        lines.append(
            f"- {name.capitalize()} verifier: {found['graded']} of {found['tasks']} tasks graded"
            f" ({artifact} excluded: {excluded}); {found['scored_candidates']} candidates scored,"
            f" missing: {missing}"
        )
        if approximate := found.get("approximate_tree"):
            lines.append(
                f"  - {approximate} graded on an approximate tree (a release sdist, not the base commit)"
            )
    return lines


def _cost_lines(cost: Cost, tasks: int) -> list[str]:
    lines = [
        f"- Cost of the whole run (every process and resume): ${cost.usd:.4f}"
        f" (${(cost.usd_per_task or 0):.4f} per task) over {int(cost.requests)} model requests:"
        f" {int(cost.calls)} answered, {int(cost.failed_calls)} failed; {int(cost.cached_calls)}"
        f" more served from the cache; {int(cost.prompt_tokens)} prompt and"
        f" {int(cost.completion_tokens)} completion tokens"
    ]
    run = cost.execution
    if run:
        per = run.get("cpu_seconds_per_candidate")
        lines.append(
            f"- Tests executed (no dollars): {run.get('cpu_seconds')} CPU-seconds over"
            f" {run.get('runs')} runs of {run.get('tasks')} tasks"
            f"{f' ({per} per candidate)' if per is not None else ''}, and"
            f" {run.get('validation_cpu_seconds')} validating the scripts on the base trees"
        )
    if cost.unknown_cost_calls:
        lines.append(
            f"- {int(cost.unknown_cost_calls)} calls could not be priced: the dollar figure leaves them"
            f" out; the budget was charged an estimate of ${cost.estimated_usd:.4f} for them"
        )
    if cost.unreadable_rows:
        lines.append(
            f"- {cost.unreadable_rows} lines of spend.jsonl are no spend row (a torn write or an"
            " edit): left out of every figure above"
        )
    if cost.unreported_usage_calls:
        lines.append(
            f"- {int(cost.unreported_usage_calls)} answers came without usable token counts (missing,"
            " null, negative or absurd): their cost is unknown, estimated from the request's size"
        )
    if cost.in_flight_unknown:
        lines.append(
            f"- {int(cost.in_flight_unknown)} requests were in flight when a process was killed:"
            " their cost is unknown and left out of the dollar figure (the budget counts each at the"
            " mean cost of a priced request)"
        )
    if cost.max_cost_usd is not None:
        over = cost.budget_charge_usd - cost.max_cost_usd
        lines.append(
            f"- Budget: ${cost.max_cost_usd:.4f}; counted against it: ${cost.budget_charge_usd:.4f}"
            + (f" (over by ${over:.4f}: requests already in flight finish)" if over > 0 else "")
        )
    for phase, c in sorted(cost.by_phase.items()):
        lines.append(
            f"  - {phase}: {int(c['calls'])} calls, ${c['usd']:.4f}, "
            f"{int(c['prompt_tokens'] + c['completion_tokens'])} tokens"
        )
    return lines


def _problem_lines(report: Report) -> list[str]:
    problems = report.problems
    if not problems.fatal and not problems.warnings:
        return []
    out = ["## Problems", ""]
    for text in problems.fatal:
        out += [f"**Failed:** {text}", ""]
    out += [f"- {line}" for line in problems.warnings]
    return [*out, ""]


def _label_lines(report: Report) -> list[str]:
    c, labels = report.counts, report.labels
    out = [
        f"Labels: {labels.source}; {c.candidates_labelled} of {c.candidates} candidates labelled."
    ]
    left = labels.left_out
    if left.tasks_without_a_labelled_candidate or left.unlabelled_candidates:
        out[0] += (
            f" Left out of every metric: {left.unlabelled_candidates} unlabelled candidates"
            f" (their tasks count with their labelled candidates) and"
            f" {left.tasks_without_a_labelled_candidate} tasks with no labelled candidate."
        )
    return out


def _fit_lines(fitted: dict[str, Any]) -> list[str]:
    return [
        f"- Weights of `{name}`: fitted on {_fitted_on(f)}; {f['run_instances_in_fit']} of"
        f" this run's {f['run_instances']} tasks were in that fit"
        + (" (their figures are in-sample)." if f["run_instances_in_fit"] else ".")
        for name, f in fitted.items()
    ]


def _fitted_on(f: dict[str, Any]) -> str:
    if "runs" in f:  # agentic-rubrics fit's weights file
        return (
            f"{f.get('instances', '?')} instances of {len(f['runs'])} labelled run(s),"
            f" {f.get('candidates', '?')} candidates (weights file sha256"
            f" {str(f.get('weights_sha256', '?'))[:12]}…)"
        )
    return (
        f"{f.get('data', '?')} (sha256 {str(f.get('data_sha256', '?'))[:12]}…),"
        f" {f.get('instances', '?')} instances, {f.get('candidates', '?')} candidates"
        f" ({', '.join(f.get('pools', {})) or 'pools not recorded'})"
    )


def _similarity_lines(similarity: Similarity | None) -> list[str]:
    if similarity is None:
        return []
    names = {
        "indel-lines": "normalized Indel similarity (2 LCS / total) of changed lines",
        "difflib-ratio": "difflib's ratio of changed lines",
    }
    measures = ", ".join(f"{names.get(m, m)} ({n} tasks)" for m, n in similarity.measures.items())
    cap = similarity.max_lines
    return [
        "",
        f"Agreement between candidates (self_consistency, offline): {measures}"
        + (
            f"; at most the first {cap} changed lines of a patch are compared"
            f" ({similarity.capped_candidates} candidates had more)."
            if cap
            else "."
        ),
    ]


def render_markdown(report: Report, plots: list[tuple[str, str]] | None = None) -> str:
    """A readable report: selection quality by K, ranking quality, coverage, decisions, cost, plots."""
    out = [
        *_header_lines(report),
        *_best_at_k_lines(report),
        *comparison_lines(report.comparisons),
        *_ranking_lines(report),
        *_similarity_lines(report.similarity),
        *_coverage_lines(report),
        *_decision_lines(report),
        "",
        "## Repeats and cost",
        "",
        f"- Flakiness: {_fmt(report.flakiness)}"
        + (" (nothing was judged more than once)" if report.flakiness is None else ""),
        *_repeat_lines(report),
        *_cost_lines(report.cost, report.counts.tasks),
        *_tests_lines(report),
        "",
        *_plot_lines(plots or []),
        *_task_lines(report),
    ]
    return "\n".join(out) + "\n"


def _header_lines(report: Report) -> list[str]:
    c = report.counts
    selection = report.selection
    return [
        "# agentic-rubrics report",
        "",
        f"Explorer `{report.explorer}`, judge `{', '.join(report.judge) or 'none'}`, "
        f"configuration `{report.config_hash[:19]}`. {c.tasks} tasks ({c.tasks_labelled} labelled),"
        f" {c.candidates} candidates ({c.resolved} of {c.candidates_labelled} labelled ones resolved).",
        "",
        *_label_lines(report),
        "",
        *_problem_lines(report),
        f"Selections (`selections.jsonl`): the `{selection.primary}` selector, {selection.reason}."
        + (
            " Where it had no value, the next selector with one picked: "
            + ", ".join(f"{k} in {n} task(s)" for k, n in selection.fallbacks.items())
            + "."
            if selection.fallbacks
            else ""
        ),
        *(
            [
                f"Its weights: {w['fitted_on']}. Out of sample:"
                f" {w['out_of_sample'] or 'none recorded'}."
            ]
            if (w := selection.weights) is not None
            else []
        ),
    ]


def _best_at_k_lines(report: Report) -> list[str]:
    sel = report.selectors
    names = list(sel)
    out = [
        "",
        "## Best@K",
        "",
        "Expected share of tasks solved when the selector picks one of K candidates drawn at random "
        "(exact over all K-subsets, ties uniform), with 95% bootstrap intervals over tasks.",
        *_pool_note(report),
        "",
        "| K | tasks with ≥ K | " + " | ".join(names) + " | oracle Pass@K | Random@K |",
        "|---:|---:|" + "---|" * (len(names) + 2),
    ]
    reach = report.counts.tasks_with_pool_at_least
    for k, oracle in report.oracle_pass_at_k.items():
        cells = [_fmt(sel[n].best_at_k[k], sel[n].best_at_k_ci[k]) for n in names]
        out.append(
            f"| {k} | {reach.get(k, '')} | "
            + " | ".join(cells)
            + f" | {_fmt(oracle)} | {_fmt(report.random_at_k)} |"
        )
    return out


def _pool_note(report: Report) -> list[str]:
    """Which K are reachable: pools smaller than K count with their whole pool."""
    counts = report.counts
    reach = counts.tasks_with_pool_at_least
    smaller = [k for k, n in reach.items() if n < counts.tasks_labelled]
    out = []
    if smaller:
        out.append(
            f"A task with fewer than K labelled candidates counts with its whole pool (Best@K there"
            f" is Best@n): from K = {smaller[0]} on, not every task reaches K (column 'tasks with"
            " ≥ K')."
        )
    if counts.max_k is not None and counts.max_k > counts.max_pool:
        out.append(
            f"K stops at {counts.max_pool}, the largest pool: Best@{counts.max_k} (max_k) is not"
            " defined on these tasks."
        )
    return ["", " ".join(out)] if out else []


def _ranking_lines(report: Report) -> list[str]:
    out = [
        "",
        "## Ranking quality",
        "",
        "| selector | realised Best@1 | ROC-AUC | PR-AUC (average precision) | candidates with a value | ties at the top |",
        "|---|---|---|---|---|---|",
    ]
    for n, m in report.selectors.items():
        out.append(
            f"| {n}{' (primary)' if n == report.primary_selector else ''} "
            f"| {_fmt(m.realised_best_at_1, m.realised_best_at_1_ci)} "
            f"| {_fmt(m.roc_auc, m.roc_auc_ci)} | {_fmt(m.pr_auc, m.pr_auc_ci)} "
            f"| {_pct(m.scored_candidates)} | {_fmt(m.tie_rate)} |"
        )
    return out


def _coverage_lines(report: Report) -> list[str]:
    cov = report.coverage
    v = report.verdicts
    rubrics = report.rubrics
    missing = ", ".join(f"{k} {n}" for k, n in v.missing_by_reason.items()) or "none"
    failed = ", ".join(f"{k} {n}" for k, n in rubrics.failed.items()) or "none"
    origins = {o: v.origins.get(o, 0) for o in ("judged", "checked", "missing")}
    return [
        "",
        "## Coverage and provenance",
        "",
        f"- Rubrics: {_pct(cov.tasks_with_rubric)} tasks; failed: {failed}. "
        f"{rubrics.items} items, {rubrics.checked_items} with a deterministic check.",
        f"- Repositories explored: {_repositories(rubrics.repository)}.",
        grounding_markdown(rubrics.grounding),
        f"- Verdicts: {v.rows} rows — judged {origins['judged']}, checked {origins['checked']}, "
        f"missing {origins['missing']} ({missing}). Missing verdicts are excluded from S, never 0.",
        f"- Items with a verdict: {_pct(cov.items_with_verdict)}; weight with a verdict: "
        f"{_pct(cov.weight_with_verdict)}; candidates with S: {_pct(cov.candidates_with_score)}.",
        *_non_discriminating_lines(report),
        *_fit_lines(report.fitted_weights),
    ]


def _non_discriminating_lines(report: Report) -> list[str]:
    nd = report.rubrics.non_discriminating
    if nd is None:
        return []
    return [
        f"- Non-discriminating items: {_pct(nd.items)} of the items with verdicts from two candidates"
        f" or more pass or fail for every candidate of their task ({nd.passes_for_all} pass for all,"
        f" {nd.fails_for_all} fail for all; in {nd.tasks_with_any} tasks): they move every S of a"
        " pool alike and tell the ranking nothing. `agentic-rubrics audit-items RUN` gives each"
        " item's pass rate, the shares by axis and check kind, and how each item separates resolved"
        " from unresolved candidates; the view marks them in each task's verdict matrix."
    ]


def _decision_lines(report: Report) -> list[str]:
    policy = report.policy
    kinds = ("accept", "review", "reject", "inconclusive")
    return [
        "",
        "## Decisions",
        "",
        f"Policy: accept S ≥ {policy['accept']}, review S ≥ {policy['review']}, "
        f"inconclusive below {policy['min_coverage']} coverage by weight.",
        "",
        "| accept | review | reject | inconclusive |",
        "|---:|---:|---:|---:|",
        "| " + " | ".join(str(report.decisions.get(d, 0)) for d in kinds) + " |",
        "",
        "Reasons: "
        + (", ".join(f"{k} {n}" for k, n in report.decision_reasons.items()) or "none")
        + ".",
    ]


def _task_lines(report: Report) -> list[str]:
    names = list(report.selectors)
    out = [
        "## Tasks",
        "",
        "Each task's rubric, verdicts and patches in a browser: `agentic-rubrics view RUN` writes"
        " `view/index.html` into this run folder (`--serve` serves it on 127.0.0.1).",
        "",
        "| task | K | resolved | rubric | " + " | ".join(f"{n} pick" for n in names) + " |",
        "|---|---:|---:|---|" + "---|" * len(names),
    ]
    for t in report.tasks:
        picks = []
        for n in names:
            p = t.picks[n]
            mark = {True: "✓", False: "✗", None: "?"}[p.resolved]
            picks.append(f"{p.candidate_id} {mark}" + (f" (tie of {p.tied})" if p.tied > 1 else ""))
        status = t.rubric.status + (f": {t.rubric.reason}" if t.rubric.reason else "")
        resolved = "n/a" if t.resolved is None else str(t.resolved)
        out.append(
            f"| {t.instance_id} | {t.candidates} | {resolved} | {status} | "
            + " | ".join(picks)
            + " |"
        )
    return out


def _repositories(counts: dict[str, int]) -> str:
    names = {
        "fetched": "fetched at base_commit",
        "cache": "from the repository cache",
        "repo_path": "the task's repo_path",
        "none": "none (issue only)",
        "no_rubric": "none: the rubric failed first",
    }
    return ", ".join(f"{names.get(k, k)} {n}" for k, n in counts.items()) or "none"
