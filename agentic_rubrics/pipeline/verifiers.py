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

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.sandbox.testenv import EnvSpec

if TYPE_CHECKING:
    from agentic_rubrics.pipeline.context import RunContext
    from agentic_rubrics.records import ArtifactRecord
    from agentic_rubrics.runfolder.folder import RunFolder
    from agentic_rubrics.types import Task

VERIFIERS: dict[str, str] = {
    "rubric": "agentic_rubrics.pipeline.verifiers:RUBRIC",
    "tests": "agentic_rubrics.pipeline.tests_verifier:TestsVerifier",
    "similarity": "agentic_rubrics.pipeline.similarity_verifier:SimilarityVerifier",
}
"""The verifiers a run may name: name -> ``module:attribute`` (a class or an instance)."""
DEFAULT_VERIFIERS = ("rubric",)
"""What a run measures with when it names nothing (and what a run folder from before the setting
read as: its configuration hash is unchanged)."""


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
    prompts: tuple[str, ...] = ()


RUBRIC = RubricVerifier()

_LOADED: dict[str, Any] = {}


def check_verifiers(names: list[str]) -> None:
    """Refuse unknown, repeated or no verifier names (a ``ValueError`` naming the known ones)."""
    unknown = [n for n in names if n not in VERIFIERS]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(
            f"verifiers must be distinct names among {', '.join(VERIFIERS)}; got {names}"
        )


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


class TestsConfig(BaseModel):
    """How the ``tests`` verifier executes its test script against each candidate (bubblewrap over one
    prepared copy of the task's tree; every limit is a hard limit of the sandbox)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    python: str = "/usr/bin/python3"
    """The interpreter (with pytest) the tests run with, inside the sandbox (``--test-python``; its
    prefix is shown read-only to the sandbox when it is not a system one)."""
    env_specs: dict[str, EnvSpec] | None = None
    """Spec-built environments (``--test-env-spec FILE``, ``env-check``'s format) by
    ``owner/name@version``, ``owner/name`` or ``*`` (first match for the task's repository and
    version): a venv built once per (repository, version), cached, read-only in the sandbox. A task no
    key matches runs with ``python``. Hashed only when set."""
    env_cache: str | None = None
    """Where built venvs are kept (default: ``envs/`` beside the repository cache; not hashed)."""
    timeout_s: float = Field(default=120.0, gt=0, le=3600)
    """Seconds for one run (apply and pytest); past it the whole pid namespace is killed:
    ``missing: timeout``."""
    max_processes: int = Field(default=256, ge=8, le=4096)
    """Processes and threads at once (a fork bomb stops there)."""
    max_memory_mib: int = Field(default=2048, ge=64)
    """Address space of each process."""
    max_write_mib: int = Field(default=256, ge=1)
    """What the tests and the patch may write in the tree, together."""
    base_runs: int = Field(default=2, ge=1, le=10)
    """Runs on the base tree (no patch) that validate the script: it must fail there, and a test
    whose outcome differs between runs is excluded as ``flaky``."""
    reruns: int = Field(default=1, ge=0, le=10)
    """Extra runs of each candidate (``--test-reruns``); a test whose outcome flips on one candidate's
    tree is excluded (``flaky``) for every candidate of the task. A run that ended without outcomes
    (timeout, sandbox error, a patch that does not apply) is not run again: reruns are spent only
    where they are cheap and can show a flip (a run of the bundled tasks' tests takes 0.2 CPU-s)."""
    max_files: int = Field(default=20, ge=1, le=200)
    """Files a given tests folder (``--tests DIR``) may hold for one task."""
    max_file_bytes: int = Field(default=262_144, ge=1024)
    """Bytes of one test file."""
