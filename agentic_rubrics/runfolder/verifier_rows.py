"""The rows of the verifiers other than the rubric: ``tests/<id>/status.json`` and
``tests/<id>/outcomes.jsonl`` (see :mod:`agentic_rubrics.pipeline.verifiers`).

A task's ``tests/<id>/`` holds the test files as they were given or written (``test_issue.py`` ...),
then ``status.json`` (:class:`ArtifactStatus`, written last: it marks the artifact done, with the
script's validation on the base tree), and, once its candidates are graded, ``outcomes.jsonl`` (one
:class:`TestRunRow` per run of the script: the base's and each candidate's).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agentic_rubrics.runfolder.rows import RowBase, RubricOutcome
from agentic_rubrics.test_infra import InfraKind
from agentic_rubrics.types import SCHEMA

TestStatus = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
"""A test's outcome as pytest reports it."""
EXCERPT_CHARS = 1500
"""The tail of a run's output kept in its row."""


class TestRunRow(RowBase):
    """One run of a task's test script on one tree (the base, or a candidate applied over it)."""

    __test__ = False  # a row, not a pytest class

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    instance_id: str
    """The task."""
    candidate_id: str | None = None
    """The candidate whose patch was applied (``None``: the base tree, validating the script)."""
    patch_hash: str | None = None
    """Hash of that patch (candidates with the same patch share their runs)."""
    run: int = Field(default=0, ge=0)
    """Which run of this tree (0 first; reruns look for flaky tests)."""
    applied: str | None = None
    """``git_apply``, ``patch_fuzz``, ``none`` (no patch) or ``None`` (it did not apply)."""
    exit_code: int | None = None
    """pytest's exit status (``None``: it did not run, or it was killed)."""
    reason: str | None = None
    """Why the run gave no outcomes (``timeout``, ``patch_does_not_apply``, ``tampers_with_tests``,
    ``no_tests_collected``, ``sandbox_error`` ...); ``None`` when pytest reported."""
    outcomes: dict[str, TestStatus] = Field(default_factory=dict)
    """Each test's status, by pytest node id."""
    durations: dict[str, float] = Field(default_factory=dict)
    """Each test's seconds (setup, call and teardown, as pytest timed them)."""
    seconds: float = Field(default=0.0, ge=0)
    """Wall time of the run (sandbox start, apply, pytest)."""
    cpu_seconds: float | None = Field(default=None, ge=0)
    """CPU time of apply and pytest (``None``: killed before it could be read)."""
    excerpt: str = Field(default="", max_length=EXCERPT_CHARS)
    """The tail of pytest's output (redacted)."""
    infra: list[InfraKind] = Field(default_factory=list)
    """The kinds of test infrastructure the patch changes (:mod:`agentic_rubrics.test_infra`):
    put back to the base before the tests ran (``graded_folder``: the run was refused)."""
    approximate_tree: bool = False
    """The tree was a release sdist standing in for the base commit
    (:mod:`agentic_rubrics.datasets.sdist_trees`), never the base commit itself."""


class TestValidation(RowBase):
    """The script checked on the base tree before any candidate is graded."""

    __test__ = False

    status: Literal["valid", "excluded"]
    """``valid``: it fails on the base tree, and some of its tests count; ``excluded``: it carries no
    signal, every candidate of the task is ``missing`` for the tests verifier with ``reason``."""
    reason: str | None = None
    """``tests_pass_on_base``, ``tests_not_collected``, ``all_tests_flaky``, ``timeout`` ..."""
    tests: list[str] = Field(default_factory=list)
    """The tests that count (pytest node ids), in order."""
    excluded: dict[str, str] = Field(default_factory=dict)
    """Tests left out, with why (``flaky``: its outcome flipped between runs of the base tree)."""
    base_runs: list[TestRunRow] = Field(default_factory=list)
    """The runs on the base tree."""


class ArtifactStatus(RowBase):
    """``<verifier folder>/<id>/status.json``: a verifier's artifact for one task is written."""

    schema_: str = Field(default=SCHEMA, alias="schema")
    """The run folder's version."""
    instance_id: str
    """The task."""
    verifier: str
    """Which verifier (``tests``)."""
    base_commit: str = ""
    """The commit it was written at."""
    problem_hash: str | None = None
    """Hash of the issue text it was written from."""
    source: str
    """``given`` (``--tests DIR``) or ``writer:<explorer>``."""
    status: RubricOutcome
    """``ok`` (written), ``failed`` (no artifact: ``reason``)."""
    reason: str | None = None
    """Why it failed (``tests_not_found``, ``no_test_writer``, ``turn_budget_exhausted`` ...)."""
    files: list[str] = Field(default_factory=list)
    """The artifact's files in its folder."""
    hash: str | None = None
    """``sha256:`` over the files' names and contents."""
    validation: TestValidation | None = None
    """The script's validation on the base tree (the tests verifier)."""
    turns: int | None = None
    """Agent turns its writer used."""
    approximate_tree: dict[str, Any] | None = None
    """Where the tree it was validated on was a release sdist standing in for the base commit: what
    ``approximate.json`` says of it (the sdist, its version and sha256); ``None``: the base commit."""
    seconds: float = 0.0
    """Wall time of writing and validating it."""
