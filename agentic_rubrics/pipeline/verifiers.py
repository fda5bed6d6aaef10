"""Verifiers: what a run measures candidates with, named in ``verifiers`` (``--verifiers rubric,tests``).

A verifier is an artifact written once per task (rubrics.yaml, a test script ...) into its own folder of
the run folder (``rubrics/<id>/``, ``tests/<id>/``), by a writer (an explorer; or given, ``--rubrics DIR``
/ ``--tests DIR``), plus a grader that turns (artifact, candidate) into a score with its provenance
(judged, executed, checked, or missing with a reason). Its scores reach the report as selectors
(``rubric``; ``tests``; ``hybrid``, both fused).

:data:`VERIFIERS` is the registry: a short name -> where its implementation lives (``module:attribute``,
imported on first use). The rubric verifier is the pipeline's own explore/judge path
(:mod:`agentic_rubrics.pipeline.stages`); every other one implements :class:`Verifier` and runs after
it for each task (:mod:`agentic_rubrics.pipeline.verify`): one call makes (or reuses) its artifact and
grades the candidates, so what the two share (a prepared copy of the task's tree) lives one task long. A new verifier is its entry here, its module,
and its settings section on RunConfig.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from agentic_rubrics.pipeline.verifier_settings import VERIFIER_PROMPTS, VERIFIERS, check_verifiers

if TYPE_CHECKING:
    from agentic_rubrics.pipeline.context import RunContext
    from agentic_rubrics.records import ArtifactRecord
    from agentic_rubrics.runfolder.folder import RunFolder
    from agentic_rubrics.types import Task


@dataclass
class Graded:
    """What grading one task's candidates with one verifier gives (nothing written yet)."""

    baselines: dict[str, Any] = field(default_factory=dict)
    """Added to the task's progress row ``baselines``: what the verifier's selectors read."""
    files: dict[str, str] = field(default_factory=dict)
    """Run-folder-relative path -> text, written before the progress row (outcome rows ...)."""
    cost: dict[str, dict[str, int | float]] = field(default_factory=dict)
    """Added to the progress row's ``cost`` by phase (CPU-seconds of execution, not dollars)."""


class Verifier(Protocol):
    """A verifier other than the rubric (see the module's docstring)."""

    name: str
    folder: str
    """The run folder's folder of its artifacts (``tests``): ``<folder>/<safe id>/``."""
    prompts: tuple[str, ...]
    """The prompts its writer sends (their hashes guard resuming)."""

    def earlier(self, folder: RunFolder, instance_id: str) -> ArtifactRecord | None:
        """The artifact an earlier attempt left in the run folder (its status file written last)."""
        ...

    async def run(
        self, task: Task, ctx: RunContext, earlier: ArtifactRecord | None, *, grade: bool
    ) -> tuple[ArtifactRecord, Graded | None]:
        """The task's artifact (``earlier``, given, or written and validated now) and, with
        ``grade``, every candidate graded against it. ``task`` is its public view. A failure of the
        artifact or of one candidate's grading is a reason in what it returns, never an exception
        (but for what stops the whole run: a model that refuses every call, a budget spent)."""
        ...


class RubricVerifier:
    """The rubric: explored and judged by the pipeline's own stages (this names it in the registry)."""

    name = "rubric"
    folder = "rubrics"
    prompts: tuple[str, ...] = VERIFIER_PROMPTS["rubric"]


RUBRIC = RubricVerifier()

_LOADED: dict[str, Any] = {}


def get_verifier(name: str) -> Verifier:
    """The verifier registered as ``name`` (imported on first use)."""
    if name not in VERIFIERS:
        check_verifiers([name])
    if name not in _LOADED:
        module, _, attr = VERIFIERS[name].partition(":")
        found = getattr(importlib.import_module(module), attr)
        _LOADED[name] = found() if isinstance(found, type) else found
    verifier: Verifier = _LOADED[name]
    return verifier


def artifact_verifiers(names: list[str]) -> list[Verifier]:
    """The verifiers among ``names`` that run after the rubric's stages (all but ``rubric``)."""
    return [get_verifier(n) for n in names if n != "rubric"]
