"""``config.json``: what a run folder records of its run — the configuration (what the report reads of
it: :class:`RecordedSettings`), its hash, and what the folder's readers need of each verifier of the run
(:class:`VerifierEntry`: where its artifacts are, which record holds its grades)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.runfolder.rows import RowBase
from agentic_rubrics.types import SCHEMA


class VerifierEntry(RowBase):
    """What a run folder records of one verifier of its run (``config.json``'s ``verifiers``): what
    its readers need without the verifier's code — where its artifacts are, which record of a task's
    ``baselines`` holds its grades, and what its artifact is called."""

    folder: str
    """Its folder: ``<folder>/<safe id>/`` per task, ``status.json`` written last."""
    record: str | None = None
    """The key of its record in a task's ``baselines`` (``None``: its grades are verdict rows)."""
    scores: str | None = None
    """The key of the candidates' scores in that record."""
    artifact: str = "artifact"
    """What one of its artifacts is called (``rubric``, ``script``, ``proxy``)."""


LEGACY_VERIFIERS: dict[str, VerifierEntry] = {
    "rubric": VerifierEntry(folder="rubrics", artifact="rubric"),
    "tests": VerifierEntry(folder="tests", record="tests", scores="pass_rate", artifact="script"),
    "similarity": VerifierEntry(
        folder="proxies", record="proxy_similarity", scores="value", artifact="proxy"
    ),
}
"""The verifiers a run folder written before ``config.json`` recorded them could have run."""


class _Kind(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    kind: str
    """The component's kind (``static``, ``agent``; ``checks``, ``llm`` …)."""


class RecordedSettings(BaseModel):
    """What the report reads of the configuration a run folder records (``config.json``'s ``config``;
    its other settings are the pipeline's, read by RunConfig)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    selectors: list[str]
    """The selectors in force (the first writes selections.jsonl)."""
    seed: int
    """Tie-break, shuffle and bootstrap seed (checked where it is used: ``report --seed`` may
    replace a bad one)."""
    bootstrap_resamples: int = Field(ge=0)
    """Resamples of every interval (0: none)."""
    max_k: int = Field(ge=1)
    """The largest K reported."""
    max_cost_usd: float | None = None
    """The budget."""
    plots: bool = True
    """Whether the report draws its plots (a folder from before the setting: drawn)."""
    policy: dict[str, Any]
    """The decision policy's thresholds (validated as a DecisionPolicy by the report)."""
    explorer: _Kind
    """The explorer's kind."""
    judge: _Kind
    """The judge's kind."""
    repos: dict[str, Any] = Field(default_factory=dict)
    """Where repositories come from (``url_template``: credentials removed; null: fetching off)."""
    verifiers: list[str] = Field(default_factory=lambda: ["rubric"])
    """The verifiers the run measured with (a folder from before the setting: the rubric)."""


class RecordedConfig(BaseModel):
    """``config.json``: the run's configuration, its hash and the folder's version."""

    model_config = ConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    config_hash: str
    """The hash that guards resuming."""
    config: RecordedSettings
    """What the report reads of the configuration."""
    verifiers: dict[str, VerifierEntry] = Field(default_factory=dict)
    """What its readers need of each verifier of the run, by name (a folder from before it was
    recorded: empty, see :meth:`verifier_entries`)."""

    def verifier_entries(self) -> dict[str, VerifierEntry]:
        """Each verifier of the run, by name, in running order: as recorded, else as the built-in
        verifiers were laid out before it was recorded."""
        if self.verifiers:
            return dict(self.verifiers)
        names = self.config.verifiers
        return {n: e for n, e in LEGACY_VERIFIERS.items() if n in names}
