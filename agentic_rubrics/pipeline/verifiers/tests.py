"""The ``tests`` verifier: a test script written once per task, validated on the base tree, executed
against every candidate (:mod:`.tests_grading`).

The script comes from ``--tests DIR`` (``DIR/<instance_id>/``: its ``*.py`` files, as a task's
``hidden_tests/``) or from the test-writing agent (:mod:`.tests_writing`: the explorer's model in the
explorer's sandbox, shown the issue and the repository only — never a candidate, the gold patch or
hidden tests). It lands in ``tests/<id>/`` with ``status.json`` (its validation) written last; grading
writes ``tests/<id>/outcomes.jsonl`` and the task's ``baselines.tests`` (what the ``tests`` and
``hybrid`` selectors read), and its CPU-seconds to the progress row's ``cost``.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.datasets.inputs import text_hash
from agentic_rubrics.patch import patch_hash
from agentic_rubrics.pipeline.context import RunContext
from agentic_rubrics.pipeline.verifiers import BUILTIN, Graded, TaskScope, VerifierSettings
from agentic_rubrics.pipeline.verifiers.artifacts import earlier_artifact, trajectory_file
from agentic_rubrics.pipeline.verifiers.tests_given import FILE_NAME, files_hash, given_tests
from agentic_rubrics.pipeline.verifiers.tests_grading import (
    NO_OUTCOME,
    Grades,
    grade,
    validate,
)
from agentic_rubrics.pipeline.verifiers.tests_tree import TaskTree
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.names import safe_name
from agentic_rubrics.runfolder.records import ArtifactRecord
from agentic_rubrics.runfolder.verifier_rows import ArtifactStatus
from agentic_rubrics.sandbox.swerex_docker import LOCAL_IMAGE, SweRexDockerConfig
from agentic_rubrics.sandbox.testenv import EnvSpec
from agentic_rubrics.setting_effects import Effect
from agentic_rubrics.types import SCHEMA, Task

log = logging.getLogger(__name__)

SPEC = BUILTIN["tests"]
FEATURE = "tests"
"""The key of the verifier's record in a task's ``baselines`` (the selectors read it)."""
_CLI_RESULTS = Effect("results", cli=True)
REVALIDATED = NO_OUTCOME | {"tests_not_collected"}
"""Validation reasons a resumed run validates again: the run gave no reading (a timeout, a sandbox or
container failure) or read none (a runner's names the library did not read before)."""


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
    docker: Literal["swebench", "local"] | SweRexDockerConfig | None = None
    """The tests in docker instead of bubblewrap (``--test-docker``): the task's image prepared once
    per task, each run in a container of its own with the container's limits, the tests run with the
    image's ``python`` in ``repo_dir``; no tree on this machine, ``env_specs`` unused. ``swebench``:
    SWE-bench's published instance images (conda's ``testbed``); ``local``: the images ``build-env``
    made here (their own environment, never pulled); or a whole swerex-docker configuration
    (``image``'s ``{instance_id}`` / ``{swebench_id}`` filled). Hashed only when set."""

    def docker_config(self) -> SweRexDockerConfig | None:
        """:attr:`docker` as a configuration."""
        if self.docker == "swebench":
            return SweRexDockerConfig()
        if self.docker == "local":
            return SweRexDockerConfig(image=LOCAL_IMAGE, conda_env=None, pull="never")
        return self.docker


class TestsSettings(VerifierSettings):
    """The tests verifier's settings: its given scripts, and how they run."""

    tests_dir: Annotated[str | None, _CLI_RESULTS] = None
    """Reuse ``DIR/<instance_id>/`` (its test files) as the script instead of having the agent write
    one."""
    tests: Annotated[TestsConfig, _CLI_RESULTS] = Field(default_factory=TestsConfig)
    """How the script runs (interpreter, limits, reruns)."""

    def given(self) -> str | None:
        return self.tests_dir

    def prompts(self, config: Any) -> list[str]:
        written = config.explorer.model_commands and self.tests_dir is None
        return ["tests_agent"] if written else []

    def probe_environment(self) -> dict[str, Any]:
        """What the examples ``consensus_probes`` runs print can depend on (the run's hash holds it
        when that option is set): the interpreter or the specs' environments, the sandbox's limits,
        docker (under which they do not run); not how tests are graded."""
        own = self.tests
        return {
            "python": own.python,
            "env_specs": {k: v.model_dump(mode="json") for k, v in (own.env_specs or {}).items()},
            "limits": [own.max_memory_mib, own.max_processes, own.max_write_mib],
            "docker": own.docker is not None,
        }

    def hashed(self, data: dict[str, Any]) -> dict[str, Any]:
        # where venvs are kept never changes a result; no spec hashes as before specs were a setting
        data["tests"].pop("env_cache", None)
        if self.tests.env_specs is None:
            data["tests"].pop("env_specs", None)
        if self.tests.docker is None:
            data["tests"].pop("docker", None)
        return data


def settings(ctx: RunContext) -> TestsSettings:
    """The tests verifier's settings in the run's configuration."""
    return ctx.config.section(SPEC.name, TestsSettings)


class TestsVerifier:
    """See the module's docstring."""

    __test__ = False  # a verifier, not a pytest class
    name = SPEC.name

    def earlier(self, folder: RunFolder, instance_id: str) -> ArtifactRecord | None:
        def check(files: dict[str, str], status: ArtifactStatus) -> str | None:
            if status.status == "ok" and files_hash(files) != status.hash:
                return "its test files changed after they were validated"
            validation = status.validation
            if validation is not None and validation.reason in REVALIDATED:
                return f"its validation gave no reading ({validation.reason}): validated again"
            return None

        return earlier_artifact(
            folder, SPEC, instance_id, allowed=lambda n: bool(FILE_NAME.match(n)), check=check
        )

    async def run(
        self, scope: TaskScope, earlier: ArtifactRecord | None, *, grade: bool
    ) -> tuple[ArtifactRecord, Graded | None]:
        task, ctx = scope.task, scope.ctx
        tree = TaskTree(task, ctx, settings(ctx).tests)
        try:
            artifact = earlier or await self._write(task, ctx, tree)
            return artifact, (await self._grade(task, ctx, artifact, tree) if grade else None)
        finally:
            await tree.close()

    async def _write(self, task: Task, ctx: RunContext, tree: TaskTree) -> ArtifactRecord:
        """The script, given or written, and its validation on the base tree."""
        config, own = ctx.config, settings(ctx)
        started = time.monotonic()
        status: dict[str, Any] = {
            "schema": SCHEMA,
            "instance_id": task.instance_id,
            "verifier": self.name,
            "base_commit": task.base_commit,
            "problem_hash": text_hash(task.problem_statement),
        }
        trajectory = None
        if own.tests_dir is not None:
            status["source"] = "given"
            files, reason = given_tests(Path(own.tests_dir), task.instance_id, own.tests)
        elif config.explorer.model_commands and ctx.explorer_model is not None:
            from agentic_rubrics.pipeline.verifiers.tests_writing import write_tests

            status["source"] = f"writer:{config.explorer.kind}"
            files, reason, trajectory, turns = await write_tests(task, ctx)
            status["turns"] = turns
        else:
            status["source"] = "none"
            files, reason = {}, "no_test_writer"
        if files:
            runner = await tree.runner(files)
            if runner is None:
                files, reason = {}, tree.problem or "no_repository"
            else:
                validation = await validate(
                    runner, own.tests.base_runs, task.instance_id, ctx.redact
                )
                status.update(validation=validation.model_dump(mode="json", by_alias=True))
                if tree.approximate is not None:
                    status.update(approximate_tree=tree.approximate)
        if files:
            status.update(status="ok", files=sorted(files), hash=files_hash(files))
        else:
            status.update(status="failed", reason=reason)
        status["seconds"] = round(time.monotonic() - started, 3)
        return ArtifactRecord(
            instance_id=task.instance_id,
            verifier=self.name,
            folder=SPEC.folder,
            files=files,
            status=ArtifactStatus.model_validate(status),
            trajectory=trajectory,
            trajectory_file=trajectory_file(SPEC, task.instance_id),
        )

    async def _grade(
        self, task: Task, ctx: RunContext, artifact: ArtifactRecord, tree: TaskTree
    ) -> Graded:
        """Every candidate run against the validated script (or ``None`` with the reason for all)."""
        ids = [c.id for c in task.candidates]
        status = artifact.status
        assert isinstance(status, ArtifactStatus)  # a verifier's own status, not a rubric's
        validation = status.validation
        reason = status.reason if status.status != "ok" else None
        if reason is None and (validation is None or validation.status != "valid"):
            reason = validation.reason if validation is not None else "not_validated"
        graded = Graded()
        if validation is not None:
            measured = [r.cpu_seconds for r in validation.base_runs if r.cpu_seconds is not None]
            graded.cost["tests_validation"] = {
                "runs": len(validation.base_runs),
                "cpu_seconds": round(sum(measured), 4),
            }
        runner = await tree.runner(artifact.files) if reason is None else None
        if reason is None and runner is None:
            reason = tree.problem or "no_repository"
        if reason is not None or validation is None or runner is None:
            graded.baselines[FEATURE] = {
                "status": "missing",
                "reason": reason,
                "pass_rate": dict.fromkeys(ids),
                "reasons": dict.fromkeys(ids, reason),
            }
            return graded
        patches: dict[str, str] = {}
        groups: dict[str, list[str]] = {}
        for c in task.candidates:
            key = patch_hash(c.patch)
            groups.setdefault(key, []).append(c.id)
            patches.setdefault(key, c.patch)
        own = settings(ctx).tests
        grades = await grade(
            runner,
            patches,
            groups,
            validation,
            reruns=own.reruns,
            instance_id=task.instance_id,
            redact=ctx.redact,
        )
        return _graded(task, grades, graded, approximate=tree.approximate is not None)


def _graded(task: Task, grades: Grades, graded: Graded, *, approximate: bool = False) -> Graded:
    """The grades as the task's record holds them (``approximate``: on a release sdist standing in
    for the base commit, each row and the record say so)."""
    if approximate:
        grades.rows = [r.model_copy(update={"approximate_tree": True}) for r in grades.rows]
    graded.baselines[FEATURE] = {
        "status": "graded",
        "reason": None,
        "pass_rate": grades.pass_rate,
        "reasons": grades.reasons,
        "infra": grades.infra,
        "counted": len(grades.counted),
        "excluded": grades.excluded,
        **({"approximate_tree": True} if approximate else {}),
    }
    where = f"{FEATURE}/{safe_name(task.instance_id)}/outcomes.jsonl"
    graded.files[where] = "".join(
        json.dumps(row.to_json(), sort_keys=True, ensure_ascii=False) + "\n" for row in grades.rows
    )
    graded.cost["tests_grading"] = {
        "runs": grades.runs,
        "candidates": len(task.candidates),
        "cpu_seconds": round(grades.cpu_seconds, 4),
        "seconds": round(grades.seconds, 4),
        "unmeasured_runs": grades.unmeasured_runs,
    }
    return graded
