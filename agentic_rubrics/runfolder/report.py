"""report.json, typed: every number of a report with the counts it rests on.

:func:`agentic_rubrics.report.build_report_and_results` makes a :class:`Report`; report.md, the plots,
the problems and the command's last lines read its attributes. It is written with
:meth:`Report.to_json` (the file keeps its shape: the same keys, ints stay ints), and that JSON is what
:func:`agentic_rubrics.run` returns.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_serializer

from agentic_rubrics.runfolder.comparisons import Comparisons
from agentic_rubrics.runfolder.item_audit import NonDiscriminating, TaskNonDiscriminating
from agentic_rubrics.runfolder.rates import Rate
from agentic_rubrics.runfolder.view import JsonView
from agentic_rubrics.types import SCHEMA

Number = int | float
"""A count or an amount as it was computed (an int stays an int in the file)."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class SelectionSummary(_Part):
    """Which selector wrote selections.jsonl, why, and where it fell back."""

    primary: str
    """The primary selector."""
    reason: str
    """Why it is the primary one."""
    fallbacks: dict[str, int]
    """Tasks where the next selector with a value picked, by that selector."""
    tasks_without_primary_value: int
    """Tasks where the primary selector has no value for any candidate."""
    tasks_without_any_value: int
    """Tasks where no selector has a value."""
    realised_best_at_1: float | None
    """The share of resolved picks of selections.jsonl (labelled picks)."""
    unlabelled_picks: int
    """Picks without a label."""
    weights: dict[str, Any] | None = None
    """Where its weights came from, and their out-of-sample evidence (``report.selection``)."""


class Counts(_Part):
    """How many tasks and candidates the report rests on."""

    tasks: int
    """Finished tasks."""
    tasks_labelled: int
    """Tasks with at least one labelled candidate."""
    candidates: int
    """Candidates of the finished tasks."""
    candidates_labelled: int
    """Labelled candidates of labelled tasks."""
    resolved: int
    """Of those, resolved ones."""
    max_pool: int
    """The largest number of labelled candidates of one task (the largest K)."""
    tasks_with_pool_at_least: dict[str, int] = Field(default_factory=dict)
    """Per K reported: labelled tasks with at least K labelled candidates. The others count in
    Best@K with their whole pool (K >= n is the whole pool), so Best@K over mixed pool sizes mixes
    Best@K and Best@n."""
    max_k: int | None = None
    """The K the run asked for (``max_k``); K above ``max_pool`` is not reported."""


class LeftOut(_Part):
    """What has no label and so counts in no metric."""

    tasks_without_a_labelled_candidate: int
    """Tasks with no labelled candidate."""
    unlabelled_candidates: int
    """Candidates without a label."""


class LabelSource(_Part):
    """Where the labels came from."""

    source: str
    """The tasks file, a labels file, or the run folder's record."""
    left_out: LeftOut
    """What has no label."""


class GroundingSummary(_Part):
    """``rubrics.grounding``: items naming the repository's files; the static leads that found nothing."""

    rubrics_in_repository: int
    """Rubrics written with a repository at hand."""
    rubrics_with_grounded_items: int
    """Of those, rubrics with an item naming one of its files."""
    grounded_items: int
    """Items naming a file of the repository."""
    rubrics_with_leads: int
    """Rubrics with the static explorer's lead counts."""
    rubrics_with_unmatched_leads: int
    """Of those, rubrics with a lead that found nothing."""
    leads: dict[str, int]
    """Leads by kind."""
    leads_unmatched: dict[str, int]
    """Leads that found nothing, by kind."""


class Rubrics(_Part):
    """The rubrics of the finished tasks."""

    ok: int
    """Tasks with a rubric."""
    failed: dict[str, int]
    """Failed rubrics by reason."""
    items: int
    """Items of every rubric."""
    checked_items: int
    """Items with a deterministic check."""
    repository: dict[str, int]
    """Where each explorer's tree came from (``none``: explored without one; ``no_rubric``: the
    rubric failed before anything was explored)."""
    repository_url: str | None = None
    """The URL template repositories were fetched with (credentials removed), ``none`` when fetching
    was off (``--repo-url none``); ``None`` in reports written before it was recorded."""
    grounding: GroundingSummary
    """How grounded the rubrics are."""
    non_discriminating: NonDiscriminating | None = None
    """Items that pass or fail for every candidate of their task (``None``: written before it was
    counted); ``agentic-rubrics audit-items`` gives each item's figures."""


class Verdicts(_Part):
    """The verdict rows of the finished tasks."""

    rows: int
    """Verdict rows."""
    origins: dict[str, int]
    """Rows by origin: judged, checked, missing."""
    missing_by_reason: dict[str, int]
    """Missing rows by reason."""
    check_error_by_detail: dict[str, int] = Field(default_factory=dict)
    """``check_error`` rows by their detail (``analysis_crashed``, ``timeout`` …)."""
    repository_aware_rows: int | None = None
    """Rows of repository-aware items (decided on the base tree by the post-image analysis);
    ``None`` in reports written before it was counted."""


class Coverage(_Part):
    """The share of tasks, candidates, items and weight that have what S rests on."""

    tasks_with_rubric: Rate
    """Tasks with a rubric."""
    candidates_with_score: Rate
    """Candidates with an S."""
    items_with_verdict: Rate
    """Items with a verdict."""
    weight_with_verdict: Rate
    """Rubric weight with a verdict."""


class SelectorMetrics(_Part):
    """One selector on the labelled tasks."""

    best_at_k: dict[str, float | None]
    """Exact Best@K by K (a string key)."""
    best_at_k_ci: dict[str, list[float] | None]
    """Its 95% bootstrap interval by K."""
    realised_best_at_1: float | None
    """The share of resolved picks (labelled ones)."""
    realised_best_at_1_ci: list[float] | None
    """Its interval."""
    unlabelled_picks: int
    """Picks without a label."""
    roc_auc: float | None
    """ROC-AUC over the candidates with a value."""
    roc_auc_ci: list[float] | None
    """Its interval."""
    pr_auc: float | None
    """PR-AUC (average precision) over the candidates with a value."""
    pr_auc_ci: list[float] | None
    """Its interval."""
    pr_auc_is: str
    """What PR-AUC means here: ``average precision``."""
    scored_candidates: Rate
    """Labelled candidates with a value."""
    tie_rate: float | None
    """The share of tasks whose top value is tied."""
    tasks: int
    """Labelled tasks."""


class Cost(_Part):
    """The whole run's model use (every process and resume) from spend.jsonl."""

    requests: Number
    """Requests sent."""
    calls: Number
    """Requests answered."""
    failed_calls: Number
    """Requests that failed."""
    unknown_cost_calls: Number
    """Answered requests that could not be priced."""
    in_flight_unknown: Number
    """Requests in flight when a process was killed (cost unknown)."""
    usd: Number
    """Known dollars."""
    prompt_tokens: Number
    """Prompt tokens."""
    completion_tokens: Number
    """Completion tokens."""
    cached_calls: Number
    """Calls served from the response cache (no cost)."""
    usd_per_task: Number | None
    """Dollars per finished task."""
    by_phase: dict[str, dict[str, Number]]
    """The counts by phase."""
    failures: dict[str, int]
    """Failed requests by kind."""
    max_cost_usd: Number | None
    """The budget."""
    budget_charge_usd: Number
    """What counted against the budget."""
    estimated_usd: Number = 0
    """Dollars charged to the budget as estimates for answers of unknown cost (not in ``usd``)."""
    unreported_usage_calls: Number = 0
    """Answers whose provider gave no usable token counts (their cost is unknown)."""
    unreadable_rows: int = 0
    """spend.jsonl lines that are no spend row (a torn write, a hand edit): skipped."""
    execution: dict[str, Number | None] | None = None
    """The tests verifier's execution, in CPU-seconds (not dollars): ``tasks``, ``runs``,
    ``cpu_seconds`` (grading), ``cpu_seconds_per_candidate``, ``validation_cpu_seconds`` (the
    script's runs on the base tree), ``unmeasured_runs`` (killed before their CPU could be read);
    ``None`` when nothing was executed."""

    @model_serializer(mode="wrap")
    def _without_no_execution(self, handler: Any) -> Any:
        # a run that executed nothing reports the cost it always did
        out = handler(self)
        if isinstance(out, dict) and out.get("execution", 0) is None:
            del out["execution"]
        return out


class Similarity(_Part):
    """How agreement between candidates was measured."""

    measures: dict[str, int]
    """Tasks by measure."""
    max_lines: int | None
    """The changed lines compared per patch (``None``: no cap recorded)."""
    capped_candidates: int
    """Candidates with more lines than the cap."""


class TaskRubric(_Part):
    """A task's rubric status."""

    status: str
    """``ok`` or ``failed``."""
    reason: str | None
    """Why it failed."""
    hash: str | None
    """Its content hash."""
    turns: int | None = None
    """Turns a model explorer used."""
    last_validation_error: str | None = None
    """A failed model explorer: the validator's last error on its file."""


class Pick(_Part):
    """One selector's pick for a task."""

    candidate_id: str | None
    """The pick."""
    value: float | None
    """Its ranking value."""
    tied: int
    """Candidates sharing the top value."""
    resolved: bool | None
    """Its label."""


class TaskSummary(_Part):
    """One task of the report."""

    instance_id: str
    """The task."""
    base_commit: str
    """Its base commit."""
    rubric: TaskRubric
    """Its rubric."""
    candidates: int
    """K."""
    resolved: int | None
    """Resolved candidates (``None``: unlabelled task)."""
    labelled: int
    """Labelled candidates."""
    decisions: dict[str, int]
    """Candidates by decision."""
    selected: dict[str, str | None]
    """The pick of selections.jsonl and the selector that made it."""
    picks: dict[str, Pick]
    """Each selector's pick."""
    cost: dict[str, dict[str, Number]]
    """The task's model use by phase."""
    non_discriminating: TaskNonDiscriminating | None = None
    """Its rubric's items that pass or fail for every candidate (``None``: no rubric, or written
    before it was counted)."""


class Problems(_Part):
    """What went wrong (:mod:`agentic_rubrics.problems`)."""

    fatal: list[str] = Field(default_factory=list)
    """One paragraph per phase that failed for everyone (exit 1)."""
    warnings: list[str] = Field(default_factory=list)
    """One line per partial failure."""


class Report(JsonView, _Part):
    """report.json."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The record's version."""
    config_hash: str
    """The run's configuration hash."""
    explorer: str
    """The explorer kind of the configuration."""
    judge: list[str]
    """The judges of the finished tasks."""
    policy: dict[str, Any]
    """The decision policy (thresholds)."""
    primary_selector: str
    """The selector given first."""
    selection: SelectionSummary
    """What selections.jsonl holds and why."""
    seed: int
    """The tie-break seed."""
    counts: Counts
    """Tasks and candidates."""
    labels: LabelSource
    """The labels' source and what they leave out."""
    rubrics: Rubrics
    """The rubrics."""
    verdicts: Verdicts
    """The verdict rows."""
    coverage: Coverage
    """What has a verdict."""
    decisions: dict[str, int]
    """Candidates by decision."""
    decision_reasons: dict[str, int]
    """Reason codes behind the decisions."""
    selectors: dict[str, SelectorMetrics]
    """Each selector's metrics, the primary first."""
    fitted_weights: dict[str, dict[str, Any]] = Field(default_factory=dict)
    """Per selector with fitted weights: what they were fitted on (data file and sha256, pools, fit
    method), ``run_instances`` and ``run_instances_in_fit`` (those tasks' figures are in-sample)."""
    oracle_pass_at_k: dict[str, float | None]
    """Oracle Pass@K by K."""
    random_at_k: float | None
    """Random@K."""
    flakiness: float | None
    """The share of repeatedly judged items whose verdict changed (``None``: none judged twice)."""
    flakiness_items: int
    """Items judged more than once."""
    selection_changes_between_repeats: Rate | None
    """Tasks whose rubric pick changes between repeats."""
    cost: Cost
    verifiers: dict[str, dict[str, Any]] | None = None
    """Per verifier other than the rubric (``tests``, ``similarity``): ``tasks``, ``graded`` (tasks whose artifact
    was valid), ``excluded`` and ``missing_candidates`` by reason, ``scored_candidates``;
    ``approximate_tree``: tasks graded on a release sdist standing in for the base commit (only
    when some were)."""
    """The run's model use."""
    similarity: Similarity | None
    """How agreement was measured (``None``: no task recorded it)."""
    probes: dict[str, Any] | None = None
    """``consensus_probes``: ``tasks``, ``ran``, ``informative``, ``reasons`` (only when set)."""
    tasks: list[TaskSummary]
    """Each finished task."""
    comparisons: Comparisons | None = None
    """Paired differences in Best@K and the gap each selector closes (``None``: no labels)."""
    verdicts_changed: list[str] = Field(default_factory=list)
    """Tasks whose verdict rows on disk differ from those they wrote (a hand edit)."""
    problems: Problems = Field(default_factory=Problems)
    """What went wrong (set once the report is complete)."""
    plots: list[str] = Field(default_factory=list)
    """The plots' paths, relative to the run folder."""

    def to_json(self) -> dict[str, Any]:
        """report.json's content (``verifiers`` only when a verifier other than the rubric ran,
        ``probes`` only when a run tried them)."""
        out = self.model_dump(mode="json", by_alias=True)
        return {k: v for k, v in out.items() if k not in ("verifiers", "probes") or v}
