"""The verifiers' names, defaults and settings: what a run configuration needs of them without their
implementations (:mod:`agentic_rubrics.pipeline.verifiers`, which runs them, needs the run's context,
which is built from the configuration)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.sandbox.testenv import EnvSpec

VERIFIERS: dict[str, str] = {
    "rubric": "agentic_rubrics.pipeline.verifiers:RUBRIC",
    "tests": "agentic_rubrics.pipeline.tests_verifier:TestsVerifier",
    "similarity": "agentic_rubrics.pipeline.similarity_verifier:SimilarityVerifier",
}
"""The verifiers a run may name: name -> ``module:attribute`` (a class or an instance)."""
DEFAULT_VERIFIERS = ("rubric",)
"""What a run measures with when it names nothing (and what a run folder from before the setting
read as: its configuration hash is unchanged)."""
VERIFIER_PROMPTS: dict[str, tuple[str, ...]] = {
    "rubric": (),
    "tests": ("tests_agent",),
    "similarity": (),
}
"""The prompts each verifier's writer sends (their hashes guard resuming): its ``prompts``."""


def check_verifiers(names: list[str]) -> None:
    """Refuse unknown, repeated or no verifier names (a ``ValueError`` naming the known ones)."""
    unknown = [n for n in names if n not in VERIFIERS]
    if unknown or not names or len(set(names)) != len(names):
        raise ValueError(
            f"verifiers must be distinct names among {', '.join(VERIFIERS)}; got {names}"
        )


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
