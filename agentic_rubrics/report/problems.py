"""Failures say so: what went wrong in a run, read from its report, as fatal summaries and warnings.

A phase that failed for everyone — every model request failed, no item was judged although the model was
needed, every rubric failed, the primary selector ranked no candidate of any task — is fatal: the command
exits with code 1 and one paragraph says the cause and the fix. A partial failure is a warning: one line
per cause, printed at the end of the command (and kept in report.json and report.md).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from agentic_rubrics.reasons import MISSING_REASONS
from agentic_rubrics.runfolder.report import Problems, Report
from agentic_rubrics.runfolder.retry import TRANSIENT_VERDICTS, transient_rubric_failure
from agentic_rubrics.runfolder.rows import RubricStatus

# check_error details that say the post-image analysis itself failed, not the candidate
_ANALYSIS = {
    "analysis_crashed": "its post-image analysis worker died",
    "analysis_timeout": "its post-image analysis ran out of time",
    "not_confined": "bubblewrap cannot run here and isolation was required",
}
# missing reasons that say nothing about the model (no model asked, by design)
_NOT_MODEL = {"not_configured", "check_error", "empty_patch", "rubric_error", "no_verdict"}

NOT_ASKED = "rubric_not_requested"
"""The rubric of a run whose verifiers leave the rubric out (``--verifiers tests``)."""


def _request_fix(failures: dict[str, int]) -> str:
    kinds = {k.split("/")[0] for k in failures}
    if kinds == {"transient"}:
        return (
            "The provider kept failing after bounded retries (rate limits, timeouts, 5xx, dropped"
            " connections): check that the server at --api-base is up and reachable (with /v1 for an"
            " OpenAI-compatible one) and that the account is not rate-limited, then run the same"
            " command again — it retries exactly the items that failed, and keeps everything judged."
        )
    if "bad_request" in kinds:
        return (
            "The provider rejected the requests: check --model (provider/model), the model's"
            " parameters (extra_params in --config) and --api-base."
        )
    return "Check --model and --api-base, then run the same command again to retry."


_MIRROR = (
    "--repo-url 'file:///path/to/mirrors/{owner}__{name}.git' (local git mirrors of the"
    " upstreams, used exactly as GitHub would be; docs/swebench.md)"
)
_FETCHING = ("fetch_failed", "timeout", "commit_not_found", "lock_timeout")


def _is_local(url: str) -> bool:
    return url.startswith("file://") or url.startswith("/")


def _repository_fix(top: str, explorer: str, url: str | None) -> str:
    """What to do when the explorers had no repository (``top``: ``no_repository[:<why>]``), for the
    explorer and the URL template in force (``url``: ``none`` when fetching was off, ``None`` when
    the report does not say)."""
    why = top.partition(":")[2]
    static = explorer == "static"
    off = url == "none"
    instead = (
        "--repo-url none writes the issue-only static rubric (no repository at all)"
        if static
        else "--explorer issue-only writes a rubric from the issue alone (the paper's ablation)"
    )
    if why in ("no_such_folder", "no_git"):
        return (
            "The tasks' repo_path folders are missing or are not git checkouts: fix them (a checkout"
            " at base_commit), or drop repo_path so the repository is fetched"
            f"{' (fetching is off: --repo-url none)' if off else ''}. Resuming retries them."
        )
    if why == "export_too_large":
        return (
            "A repository is over the size bounds: raise repos.max_file_mib or repos.max_tree_mib in"
            f" --config if it is trusted; or {instead}. Resuming retries them."
        )
    if why in ("invalid_repo", "invalid_commit"):
        return "The tasks' repo (owner/name) or base_commit is malformed: fix the tasks file."
    if not why and not off:
        return (
            f"The tasks give neither repo and base_commit nor a repo_path, and the {explorer}"
            f" explorer needs the repository: add them to the tasks file; or {instead}."
        )
    if off:
        return (
            f"The {explorer} explorer needs the repository, and fetching is off (--repo-url none)"
            " with no repo_path in the tasks: remove --repo-url none (GitHub), give a mirror:"
            f" {_MIRROR}, or a repo_path per task; or {instead}."
        )
    if url is not None and _is_local(url) and why in _FETCHING:
        return (
            f"The mirrors the URL template in force names ({url}) could not be read: check that"
            " each task's {owner}__{name} there is a git repository holding its base_commit"
            " (`git -C <mirror> cat-file -e <base_commit>`); or"
            f" {instead}; or give each task a repo_path (a checkout at base_commit). Resuming"
            " retries them."
        )
    return _fetch_fix(why, url, static, instead)


def _fetch_fix(why: str, url: str | None, static: bool, instead: str) -> str:
    """What to do when fetching the repositories failed, or the explorer had none otherwise."""
    if why in _FETCHING:
        source = f" from {url}" if url is not None else ""
        head = (
            f"The repositories could not be fetched{source} (no network, or the URL template does"
            " not reach the upstreams)"
        )
    else:
        head = "The explorer had no repository"
    if static:
        return (
            f"{head}. The static explorer works without one: {instead}, or give a mirror:"
            f" {_MIRROR}; or give each task a repo_path (a checkout at base_commit). Resuming"
            " retries them."
        )
    return (
        f"{head}. Give each task a repo_path (a checkout at base_commit), a mirror: {_MIRROR},"
        " or a swerex-docker or swerex-modal sandbox (the repository is in the image); or"
        f" {instead}. Resuming retries them."
    )


def rubric_fix(reasons: Counter[str], explorer: str = "", url: str | None = None) -> str:
    """What to do when rubrics failed, by the most common reason, for the explorer and the URL
    template in force (``url``: ``none`` when fetching was off; ``None``: not known)."""
    top = reasons.most_common(1)[0][0] if reasons else ""
    if top.startswith("no_repository"):
        return _repository_fix(top, explorer, url)
    if top.startswith("sandbox_error"):
        return (
            "No sandbox could be opened: check --sandbox (bubblewrap needs `apt-get install"
            " bubblewrap` and user namespaces; docker needs a running daemon); resuming retries them."
        )
    if top in ("rubric_not_found", "rubric_invalid"):
        return (
            "--rubrics DIR must hold DIR/<instance_id>/rubrics.yaml for every task; check them with"
            " `agentic-rubrics validate DIR/*/rubrics.yaml`."
        )
    if top == "budget":
        return "--max-cost was reached: resume with a higher --max-cost."
    return (
        "Look at rubrics/<instance_id>/status.json and trajectories/ for what the explorer did;"
        " resuming retries the transient failures."
    )


def explorer_examples(
    failed: Iterable[tuple[str, str | None, int | None, str | None]], limit: int = 2
) -> dict[str, str]:
    """Per failure reason, what a model explorer's first failed tasks did: its turns and the
    validator's last error on its file (``failed``: instance id, reason, turns, last error)."""
    seen: dict[str, list[str]] = {}
    for instance_id, reason, turns, error in failed:
        if turns is None and error is None:
            continue
        said = seen.setdefault(str(reason), [])
        if len(said) < limit:
            used = f"{turns} turns; " if turns is not None else ""  # a reused rubric has none
            last = (
                f"the validator's last error: {_short(error)}"
                if error
                else "no file it wrote was validated"
            )
            said.append(f"{instance_id} ({used}{last})")
    return {reason: "; ".join(said) for reason, said in seen.items()}


def _short(text: str, cap: int = 200) -> str:
    text = " ".join(text.split())
    return text if len(text) <= cap else text[: cap - 1] + "…"


def _report_examples(report: Report) -> dict[str, str]:
    return explorer_examples(
        (t.instance_id, t.rubric.reason, t.rubric.turns, t.rubric.last_validation_error)
        for t in report.tasks
        if t.rubric.status != "ok"
    )


def _tests_failures(report: Report, out: Problems) -> None:
    """A verifier other than the rubric scored no candidate (fatal), or left some without a score (an
    empty patch is no failure: nothing was asked)."""
    for name, found in (report.verifiers or {}).items():
        artifact = found.get("artifact", "artifact")
        where = (
            f"{found.get('folder', name)}/<instance_id>/ (status.json: why an {artifact} failed)"
        )
        missing = {k: v for k, v in found["missing_candidates"].items() if k != "empty_patch"}
        if not found["scored_candidates"]:
            out.fatal.append(
                f"The {name} verifier scored no candidate ({found['tasks']} tasks; candidates"
                f" missing: {_counts(found['missing_candidates'])}). Look at {where}; resuming"
                " retries the transient failures."
            )
        elif missing:
            out.warnings.append(
                f"The {name} verifier has no score for {sum(missing.values())} candidates"
                f" ({_counts(missing)}); {found['tasks'] - found['graded']} of {found['tasks']}"
                f" tasks had no valid {artifact} ({_counts(found['excluded']) or 'none'})"
            )


def _probes_failures(report: Report, out: Problems) -> None:
    """``consensus_probes`` run on no task (fatal) or not on all (no example: no failure)."""
    found = report.probes
    failed = {k: v for k, v in ((found or {}).get("reasons") or {}).items() if k != "no_examples"}
    if found and failed and not found["ran"]:
        out.fatal.append(
            f"consensus_probes ran the examples on no task ({found['tasks']} tasks:"
            f" {_counts(failed)}). They run where the tests verifier's tests run (--test-python, --test-env-spec; not"
            " under --test-docker); behaviour_consensus ranked from the code alone."
        )
    elif failed:
        out.warnings.append(f"consensus_probes did not run the examples on: {_counts(failed)}")


def _examples_text(examples: dict[str, str]) -> str:
    """What the explorer did, per reason (empty when it was no model explorer)."""
    return "".join(f" {reason}: {text}." for reason, text in sorted(examples.items()))


def _counts(counts: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))


def diagnose(report: Report) -> Problems:
    """Fatal summaries and warnings for a finished report."""
    out = Problems()
    model_missing = {
        k: v for k, v in report.verdicts.missing_by_reason.items() if k not in _NOT_MODEL
    }
    # a run that measures with other verifiers alone asked for no rubric: none failed
    failed_rubrics = Counter({k: v for k, v in report.rubrics.failed.items() if k != NOT_ASKED})
    _phase_failures(report, model_missing, failed_rubrics, out)
    _tests_failures(report, out)
    _probes_failures(report, out)
    _analysis_failures(report, out)
    _partial_failures(report, model_missing, failed_rubrics, out)
    _trust_warnings(report, out)
    return out


def _phase_failures(
    report: Report, model_missing: dict[str, int], failed_rubrics: Counter[str], out: Problems
) -> None:
    """A phase that failed for everyone: fatal, with the cause and the fix."""
    tasks, cost = report.counts.tasks, report.cost
    judged = report.verdicts.origins.get("judged", 0)
    if cost.requests and not cost.calls:
        out.fatal.append(
            f"Every one of the {int(cost.requests)} model requests of this run failed"
            f" ({_counts(cost.failures) or 'no answer'}), so nothing a model decides was decided."
            f" {_request_fix(cost.failures)}"
        )
    elif model_missing and not judged:
        fix = (
            _request_fix(cost.failures)
            if cost.failures
            else "Resume with a higher --max-cost or look at the reasons above."
        )
        out.fatal.append(
            f"No item was judged by the model: all {sum(model_missing.values())} items it had to"
            f" decide are missing ({_counts(model_missing)}); S rests on the checks alone. {fix}"
        )
    if tasks and report.rubrics.ok == 0 and failed_rubrics:
        fix = rubric_fix(failed_rubrics, report.explorer, report.rubrics.repository_url)
        out.fatal.append(
            f"Every rubric failed ({tasks} tasks: {_counts(dict(failed_rubrics))}), so no candidate"
            f" has a rubric score.{_examples_text(_report_examples(report))} {fix}"
        )
    selection = report.selection
    if tasks and selection.tasks_without_primary_value == tasks:
        took = (
            f" (selections.jsonl took the next selectors' picks: {_counts(selection.fallbacks)})"
            if selection.fallbacks
            else ""
        )
        out.fatal.append(
            f"The primary selector {selection.primary!r} has a value for no candidate of any of"
            f" the {tasks} tasks, so its picks are arbitrary{took}. Fix what its values rest on"
            " (the rubrics and verdicts above), or put another selector first with"
            " `agentic-rubrics report --selectors ...`."
        )


def _analysis_failures(report: Report, out: Problems) -> None:
    """Post-image analyses that failed themselves: a warning, fatal when they are half the rows the
    analysis decides (the repository-aware items'; every row in reports that did not count them)."""
    rows = report.verdicts.rows
    aware = report.verdicts.repository_aware_rows
    of = aware if aware else rows
    for detail, n in sorted(report.verdicts.check_error_by_detail.items()):
        if detail not in _ANALYSIS:
            continue
        most = 2 * n >= of
        share = f"{n} of {aware} repository-aware" if aware else f"{n} of {rows}"
        line = (
            f"{share} item verdicts missing: check_error {detail} ({_ANALYSIS[detail]}):"
            " the repository-aware items of those candidates rest on nothing"
        )
        if most:
            line += (
                f" — {'all' if n >= of else 'most'} of what the post-image analysis decides"
                f" ({n} of the run's {rows} rows); the workers' own errors are on standard error"
            )
        (out.fatal if most else out.warnings).append(line)


def _partial_failures(
    report: Report, model_missing: dict[str, int], failed_rubrics: Counter[str], out: Problems
) -> None:
    """One warning line per cause of a partial failure."""
    cost, selection = report.cost, report.selection
    for reason, n in sorted(model_missing.items()):
        meaning = MISSING_REASONS.get(reason, reason)
        retry = (
            " — run the same command again to retry them" if reason in TRANSIENT_VERDICTS else ""
        )
        if reason == "budget":
            retry = " — resume with a higher --max-cost to judge them"
        out.warnings.append(f"{n} item verdicts missing: {reason} ({meaning}){retry}")
    if report.rubrics.ok:
        examples = _report_examples(report)
        for reason, n in sorted(failed_rubrics.items()):
            again = " (retried on resume)" if transient_rubric_failure(reason) else ""
            e_g = f" — e.g. {examples[reason]}" if reason in examples else ""
            out.warnings.append(f"{n} rubric(s) failed: {reason}{again}{e_g}")
    if selection.fallbacks and len(out.fatal) == 0:
        out.warnings.append(
            f"the primary selector {selection.primary!r} had no value in"
            f" {selection.tasks_without_primary_value} task(s); selections.jsonl took the next"
            f" selector's pick there ({_counts(selection.fallbacks)})"
        )
    if cost.calls and cost.failed_calls:
        out.warnings.append(
            f"{int(cost.failed_calls)} of {int(cost.requests)} model requests failed"
            f" ({_counts(cost.failures)})"
        )
    if cost.in_flight_unknown:
        out.warnings.append(
            f"{int(cost.in_flight_unknown)} model requests were in flight when a process was"
            " killed: their cost is unknown and left out of the dollar figure"
        )


def _trust_warnings(report: Report, out: Problems) -> None:
    """What the figures should not be trusted for: in-sample weights, edited rows, missing labels."""
    for name, fit in report.fitted_weights.items():
        if fit["run_instances_in_fit"]:
            out.warnings.append(
                f"{fit['run_instances_in_fit']} of the run's {fit['run_instances']} tasks were in the"
                f" fit of the {name!r} selector's weights ({fit.get('data', '?')}): its figures on"
                " them are in-sample, not a measure of how it ranks new tasks"
            )
    changed = report.verdicts_changed
    if changed:
        more = f" and {len(changed) - 5} more" if len(changed) > 5 else ""
        out.warnings.append(
            f"verdicts.jsonl no longer holds the rows {len(changed)} task(s) wrote (their digest"
            f" differs: edited by hand?): {', '.join(changed[:5])}{more}; their scores rest on the"
            " rows as they are now"
        )
    left = report.labels.left_out
    if left.unlabelled_candidates:
        out.warnings.append(
            f"{left.unlabelled_candidates} candidates have no label and"
            f" {left.tasks_without_a_labelled_candidate} tasks none at all: left out of the"
            f" metrics (labels: {report.labels.source})"
        )


def explore_problems(statuses: list[RubricStatus], url: str | None = None) -> Problems:
    """For ``explore`` alone: every rubric failed is fatal, some failed is a warning per reason
    (``url``: the repositories' URL template in force, see :func:`rubric_fix`)."""
    out = Problems()
    failed = Counter(str(s.reason) for s in statuses if s.status != "ok" and s.reason != NOT_ASKED)
    examples = explorer_examples(
        (s.instance_id, s.reason, s.turns, s.last_validation_error)
        for s in statuses
        if s.status != "ok"
    )
    if statuses and len(failed) and sum(failed.values()) == len(statuses):
        out.fatal.append(
            f"Every rubric failed ({len(statuses)} tasks: {_counts(dict(failed))})."
            f"{_examples_text(examples)}"
            f" {rubric_fix(failed, statuses[0].source.removeprefix('explorer:'), url)}"
        )
    else:
        for reason, n in sorted(failed.items()):
            e_g = f" — e.g. {examples[reason]}" if reason in examples else ""
            out.warnings.append(f"{n} rubric(s) failed: {reason}{e_g}")
    return out
