"""``comparison.json``, typed: every method of a reported run side by side — Best@K with its interval,
ROC-AUC, coverage, and the cost table (what writing each verifier's artifact cost per task, what
grading cost per candidate, and the total per task at K = 16).

``agentic-rubrics compare RUN`` (:mod:`agentic_rubrics.report.method_comparison`) makes it from the run
folder alone; ``benchmarks/compare_verifiers.py`` runs, then calls the same function. A method the run
did not measure says why (``not_measured``) and carries no figure: never a 0 standing for nothing.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.runfolder.rates import Rate
from agentic_rubrics.runfolder.view import JsonView
from agentic_rubrics.types import SCHEMA

COMPARISON_JSON = "comparison.json"
"""The comparison's record in the run folder."""
COMPARISON_MD = "comparison.md"
"""The comparison as Markdown tables, beside it."""
METHODS = (
    "random",
    "oracle",
    "self_consistency",
    "patch_classifier",
    "rubric",
    "tests",
    "similarity",
    "hybrid",
)
"""The methods compared, in the table's order (the paper's baselines and verifiers)."""
K_TOTAL = 16
"""The K of the total cost per task: one artifact per verifier, K gradings."""
NOT_MEASURED = {
    "verifier_not_in_run": "the run did not run the verifier it needs (``verifier_not_in_run:<name>``)",
    "selector_not_in_run": "its selector is not among those the run was reported with",
}
"""Why a method has no figures (the codes ``not_measured`` takes)."""


class _Part(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class MethodFigures(_Part):
    """One method's ranking figures, as report.json gives them (the oracle: the labels' Pass@K)."""

    source: str | None
    """Where they come from (``report.json selectors.<name>``); ``None``: not measured."""
    best_at_k: dict[str, float | None] | None
    """Best@K by K (a string key); ``None``: not measured."""
    best_at_k_ci: dict[str, list[float] | None] | None
    """Its 95% bootstrap interval by K (the oracle's: ``None`` at every K)."""
    realised_best_at_1: float | None
    """The share of resolved picks among the labelled tasks (the oracle: ``None``)."""
    roc_auc: float | None
    """ROC-AUC over the candidates with a value (the oracle: ``None``)."""
    roc_auc_ci: list[float] | None
    """Its interval."""
    coverage: Rate | None
    """Labelled candidates with a value, of the run's candidates (the oracle: the labelled ones)."""
    not_measured: str | None = None
    """Why the run has no figures for it (a code of ``NOT_MEASURED``); ``None``: measured."""


class Spend(_Part):
    """What one artifact or one grading cost, on average."""

    usd: float
    """Dollars the providers reported."""
    estimated_usd: float
    """Dollars the budget was charged for answers without a price (not in ``usd``)."""
    cpu_seconds: float
    """CPU-seconds of execution (the tests verifier: validation on the base tree, or grading)."""


class ArtifactSpend(Spend):
    """What writing a method's artifacts cost per task."""

    agent_turns: float | None
    """Mean turns of the agents that wrote them (0 for a given, reused or static one); ``None``: a
    rubric an agent explored before its status file recorded the turns (unknown, not 0)."""


class MethodCost(_Part):
    """One method's cost: the verifiers (and the classifier) its score needs, added."""

    artifact_per_task: ArtifactSpend | None
    """Its artifacts' writing, per finished task; ``None``: not measured."""
    grading_per_candidate: Spend | None
    """Its grading, per candidate of the run; ``None``: not measured."""
    total_per_task_at_k16: Spend | None
    """``artifact_per_task + 16 × grading_per_candidate``; ``None``: not measured."""
    not_measured: str | None = None
    """Why (a code of ``NOT_MEASURED``); ``None``: measured."""


class MethodComparison(JsonView, _Part):
    """``comparison.json``."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The record's version."""
    config_hash: str
    """The run's configuration hash."""
    report_sha256: str
    """sha256 of the report.json it read (labels and selectors are the report's: a new report, a
    new comparison)."""
    labels: str
    """Where the report's labels came from."""
    verifiers: list[str]
    """The verifiers the run measured with."""
    tasks: int
    """Finished tasks."""
    tasks_without_labels: int
    """Of those, tasks with no labelled candidate: they count in no figure."""
    candidates: int
    """Candidates of the finished tasks (what grading costs are divided by)."""
    candidates_labelled: int
    """Labelled candidates of labelled tasks."""
    max_pool: int
    """The largest number of labelled candidates of one task (the largest K)."""
    methods: dict[str, MethodFigures]
    """Each method's ranking figures, in ``METHODS`` order."""
    cost: dict[str, MethodCost]
    """Each method's cost, in ``METHODS`` order."""
    hybrid_weights: dict[str, Any] | None = None
    """The hybrid's fitted weight and its evidence (report.json's ``fitted_weights.hybrid``)."""

    def to_json(self) -> dict[str, Any]:
        """The file's content."""
        return self.model_dump(mode="json", by_alias=True)
