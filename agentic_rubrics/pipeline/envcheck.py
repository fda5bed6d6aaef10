"""``env-check``: can this machine run each SWE-bench instance's own tests?

For every instance: its tree at the base commit (once, :class:`~agentic_rubrics.sandbox.testrun.PreparedTree`),
and the files its test patch touches run with the harness's runner
(:mod:`~agentic_rubrics.sandbox.testlogs`) twice: with the gold patch, where FAIL_TO_PASS must pass,
and with none, where they must not. Each run is in the harness's order
(:mod:`~agentic_rubrics.sandbox.testscript`): the patch applied, the test infrastructure it changed
put back, then the test patch applied over the base version of the files it touches. An instance whose
two runs say so is ``runnable``; any other gets the first reason that explains it (:data:`REASONS`).
Nothing here calls a model. A FAIL_TO_PASS test passes as the harness's ``test_passed`` says: passed
or xfailed (skipped, xpassed, absent: not); a name is looked up as the runner prints it
(:func:`~agentic_rubrics.sandbox.testlogs.statuses`). A run whose log names no test status at all,
under a runner other than pytest, is ``unparsable_output``: said, not guessed.

A tree that is an approximate one (:mod:`~agentic_rubrics.datasets.sdist_trees`: a release sdist
standing in for a repository not to be had, ``approximate.json`` beside it) gives its row
``approximate_tree: true`` and the sdist's name, version and sha256 (``tree_source``); only such a row
that is ``runnable`` says the tree may stand in for that instance.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.swebench_tests import TestedInstance
from agentic_rubrics.exceptions import RepoError, SandboxError
from agentic_rubrics.sandbox.docker_cli import DOCKER_REASONS
from agentic_rubrics.sandbox.swerex import SweRexConfig
from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig
from agentic_rubrics.sandbox.testenv import EnvBuildError, EnvSpec, Interpreter
from agentic_rubrics.sandbox.testrun import ExecLimits, ExecRun, RunCommand

SCHEMA = "agentic-rubrics/env-check/1"
REASONS = {
    "runnable": "FAIL_TO_PASS pass with the gold patch and fail without it",
    "no_repository": "the repository or its base commit is not to be had",
    "unsupported_runner": "the repository's test runner is not supported",
    "env_build_failed": "the environment's spec could not be installed",
    "no_fail_to_pass": "the instance names no FAIL_TO_PASS test",
    "missing_dependency": "a module the tests import is not installed",
    "import_error": "an import failed for another reason",
    "collection_error": "the runner could not collect the tests",
    "timeout": "the tests ran past the time limit",
    "gold_does_not_apply": "the gold patch does not apply to the tree",
    "test_patch_does_not_apply": "the test patch does not apply to the tree",
    "fails_with_gold": "FAIL_TO_PASS tests ran and did not pass with the gold patch",
    "passes_without_fix": "FAIL_TO_PASS tests passed with no patch",
    "sandbox_error": "the sandbox could not run the tests",
    "unparsable_output": "the runner ran but its output names no test status the parser reads",
    "docker_unavailable": "no docker command, or its daemon does not answer",
    "docker_failed": "a docker command failed (its message is in the detail)",
    "image_missing": "the instance's image is not on this machine and was not pulled",
    "container_failed": "the container exited, or its runtime never answered",
    "runtime_lost": "the container's runtime stopped answering during the run",
    "oom": "a process of the container was killed by its memory limit",
    "network_refused": "the network cut was refused: the container shares this machine's network",
}
"""Every reason an instance's row may give, and what it means."""
_PASS = ("passed", "xfailed")  # swebench/harness/grading.py: test_passed
_DOCKER = frozenset(DOCKER_REASONS)  # the codes of a container's failure
_MISSING = re.compile(r"No module named '?([\w.]+)")
_IMPORT = re.compile(r"ImportError: ([^\n]{0,160})")
_SAID = re.compile(r"^E\s+(\S[^\n]*)", re.M)
_COLLECT = re.compile(
    r"ERROR collecting|errors? during collection|ImportError while loading conftest"
)


@dataclass
class CheckSite:
    """Where the instances' tests run: locally (a named Python, or spec-built environments), or on
    a SWE-ReX deployment."""

    python: str = "/usr/bin/python3"
    """The interpreter (locally: a path; on a deployment: a command in its PATH)."""
    specs: dict[str, EnvSpec] = field(default_factory=dict)
    """Spec-built environments, by ``owner/name@version``, ``owner/name`` or ``*`` (first match)."""
    env_cache: Path | None = None
    """Where spec-built environments are kept."""
    swerex: SweRexConfig | None = None
    """Run on this deployment instead of locally."""
    limits: ExecLimits = field(default_factory=lambda: ExecLimits(excerpt_chars=6000))

    def spec(self, instance: TestedInstance) -> EnvSpec | None:
        for key in (f"{instance.repo}@{instance.version}", instance.repo, "*"):
            if key in self.specs:
                return self.specs[key]
        return None

    def describe(self) -> dict[str, Any]:
        """What the report says of the site (no local paths but the interpreter's)."""
        if self.swerex is not None:
            return {"kind": self.swerex.kind, "python": self.python}
        specs = {k: v.model_dump(exclude={"timeout_s"}) for k, v in self.specs.items()}
        return {"kind": "bubblewrap", "python": self.python, "specs": specs}


@dataclass
class CheckRow:
    """One instance's answer."""

    instance_id: str
    repo: str
    version: str
    runner: str
    runnable: bool
    reason: str
    detail: str = ""
    gold: dict[str, Any] = field(default_factory=dict)
    none: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    approximate_tree: bool = False
    """The tree was a release sdist standing in for the base commit (never the base commit itself)."""
    tree_source: dict[str, Any] = field(default_factory=dict)
    """An approximate tree's ``approximate.json``: the sdist, its version and sha256, the rule, the
    patches taken back out."""


def _found(runner: str, run: ExecRun, names: list[str]) -> dict[str, str]:
    from agentic_rubrics.sandbox.testlogs import statuses

    return dict(statuses(runner, run.outcomes, names))  # type: ignore[arg-type]


def _summary(run: ExecRun, names: list[str], runner: str = "pytest") -> dict[str, Any]:
    found = _found(runner, run, names)
    statuses = Counter(found.get(n, "missing") for n in names)
    return {
        "reason": run.reason,
        "exit_code": run.exit_code,
        "fail_to_pass": dict(sorted(statuses.items())),
        "tests_reported": len(run.outcomes),
        "seconds": run.seconds,
    }


def why(run: ExecRun, runner: str = "pytest") -> tuple[str, str] | None:
    """Why a run could not run its tests (a reason and a detail), from its reason and its log."""
    if run.reason in ("timeout", "test_patch_does_not_apply", "sandbox_error", "stage_failed"):
        return ("sandbox_error" if run.reason == "stage_failed" else run.reason), ""
    if run.reason in _DOCKER:  # a container's failure, said by its code
        return run.reason, " ".join(run.excerpt.split())[-160:]
    if run.reason == "patch_does_not_apply":
        return "gold_does_not_apply", ""
    text = run.excerpt
    if match := _MISSING.search(text):
        return "missing_dependency", match.group(1)[:120]
    if match := _IMPORT.search(text):
        return "import_error", match.group(1).strip()[:160]
    if _COLLECT.search(text) or (run.reason == "no_tests_collected" and run.exit_code in (2, 4)):
        said = _SAID.search(text)
        return "collection_error", said.group(1).strip()[:160] if said else ""
    if runner != "pytest" and run.reason == "no_tests_collected":
        tail = " ".join(text.split())[-160:]
        return "unparsable_output", f"exit {run.exit_code}: {tail}"
    return None


def classify(instance: TestedInstance, gold: ExecRun, none: ExecRun) -> tuple[bool, str, str]:
    """Runnable, the reason and a detail, from the gold run and the run with no patch."""
    from agentic_rubrics.sandbox.testlogs import runner_for

    names, runner = instance.fail_to_pass, runner_for(instance.repo)
    with_gold, without = _found(runner, gold, names), _found(runner, none, names)
    gold_ok = all(with_gold.get(n) in _PASS for n in names)
    none_fails = not any(without.get(n) in _PASS for n in names)
    if gold_ok and none_fails:
        return True, "runnable", ""
    if not gold_ok:
        # a run that reported no test at all, for no reason of its own: its output was not read
        said = [line.strip() for line in gold.excerpt.splitlines() if line.strip()]
        last = said[-1][:160] if said else ""  # what the runner said last (a crash at start-up?)
        unread = ("unparsable_output", last) if not gold.outcomes else ("fails_with_gold", "")
        reason, detail = why(gold, runner) or unread
        if reason == "fails_with_gold":
            failing = [n for n in names if with_gold.get(n) not in _PASS]
            detail = f"{len(failing)} of {len(names)} not passed, e.g. {failing[0][:160]}"
        return False, reason, detail
    return False, "passes_without_fix", ""


async def check_instance(
    instance: TestedInstance, tree: Path | None, site: CheckSite, interpreter: Interpreter | None
) -> CheckRow:
    """Run one instance's FAIL_TO_PASS with the gold patch and with none (``tree``: a prepared tree
    for a local site, the task's tree for a deployment that needs one)."""
    from agentic_rubrics.sandbox.testlogs import (
        command,
        directives,
        run_command,
        runner_for,
    )

    runner = runner_for(instance.repo)
    row = CheckRow(instance.instance_id, instance.repo, instance.version, runner, False, "")
    if runner == "unsupported":
        row.reason = "unsupported_runner"
        return row
    if not instance.fail_to_pass:
        row.reason = "no_fail_to_pass"
        return row
    python = interpreter.python if interpreter else site.python
    harness = run_command(runner, command(runner, python, directives(instance.test_patch)))
    runs = await _runs(instance, tree, site, interpreter, python, harness)
    row.runnable, row.reason, row.detail = classify(instance, runs["gold"], runs["none"])
    row.gold = _summary(runs["gold"], instance.fail_to_pass, runner)
    row.none = _summary(runs["none"], instance.fail_to_pass, runner)
    return row


async def _runs(
    instance: TestedInstance,
    tree: Path | None,
    site: CheckSite,
    interpreter: Interpreter | None,
    python: str,
    run_command: RunCommand,
) -> dict[str, ExecRun]:
    """The gold run and the run with no patch, where the site runs them."""
    from agentic_rubrics.sandbox.base import Where
    from agentic_rubrics.sandbox.testrun import run_tests
    from agentic_rubrics.sandbox.testrun_swerex import run_tests_swerex

    runs: dict[str, ExecRun] = {}
    if isinstance(site.swerex, SweRexDockerConfig):
        runs = await _in_containers(instance, site.swerex, python, site.limits, run_command)
    for name, patch in (("gold", instance.gold_patch), ("none", "")):
        if name in runs:
            continue
        if site.swerex is not None:
            where = Where(instance.instance_id, tree, base_commit=instance.base_commit)
            runs[name] = await run_tests_swerex(
                site.swerex,
                where,
                patch,
                {},
                python=python,
                limits=site.limits,
                test_patch=instance.test_patch,
                command=run_command,
            )
        else:
            assert tree is not None
            runs[name] = await run_tests(
                tree,
                patch,
                {},
                python=python,
                limits=site.limits,
                test_patch=instance.test_patch,
                command=run_command,
                read_only=interpreter.read_only if interpreter else None,
            )
    return runs


async def _in_containers(
    instance: TestedInstance,
    config: SweRexDockerConfig,
    python: str,
    limits: ExecLimits,
    command: RunCommand,
) -> dict[str, ExecRun]:
    """Both runs in docker: one prepared image, each run in a container of its own, one at a time; a
    container's failure (the daemon gone, the memory limit, output not read) is the run's reason."""
    from agentic_rubrics.sandbox.base import Where
    from agentic_rubrics.sandbox.testrun_docker import run_candidates_docker

    return await run_candidates_docker(
        config,
        Where(instance.instance_id, None, base_commit=instance.base_commit),
        {"gold": instance.gold_patch, "none": ""},
        {},
        python=python,
        limits=limits,
        test_patch=instance.test_patch,
        command=command,
        parallel=1,
    )


def check_instances(
    instances: list[TestedInstance],
    trees: Callable[[TestedInstance], Path | None],
    site: CheckSite,
    *,
    progress: Callable[[CheckRow], None] | None = None,
) -> list[CheckRow]:
    """Every instance's row, in order (``trees``: an instance's tree at its base commit, or ``None``)."""
    from agentic_rubrics.datasets.sdist_trees import approximate_source
    from agentic_rubrics.sandbox.built_files import add_built_files
    from agentic_rubrics.sandbox.testenv import build_env, named_interpreter
    from agentic_rubrics.sandbox.testrun import PreparedTree

    local_python = None if site.swerex is not None else named_interpreter(site.python)
    rows = []
    for instance in instances:
        start = time.perf_counter()
        row = CheckRow(instance.instance_id, instance.repo, instance.version, "", False, "")
        try:
            tree = trees(instance)
        except RepoError as exc:
            tree, row.detail = None, str(exc)[:300]
        if tree is not None and (source := approximate_source(tree)) is not None:
            row.approximate_tree, row.tree_source = True, source
        needs_tree = site.swerex is None or site.swerex.needs_repo
        if tree is None and needs_tree:
            row.reason = "no_repository"
        elif site.swerex is not None:
            row = _marked(_run(check_instance(instance, tree, site, None), row), row)
        else:
            assert tree is not None and local_python is not None
            prepared = PreparedTree(tree)
            try:
                interpreter: Interpreter | None = local_python
                if (spec := site.spec(instance)) is not None:
                    assert site.env_cache is not None
                    interpreter = build_env(
                        spec,
                        prepared.path,
                        cache_dir=site.env_cache,
                        repo=instance.repo,
                        repo_version=instance.version,
                    )
                    add_built_files(interpreter.tree_files, prepared.path)
                row = _marked(
                    _run(check_instance(instance, prepared.path, site, interpreter), row), row
                )
            except EnvBuildError as exc:
                row.reason, row.detail = "env_build_failed", str(exc)[-300:]
            finally:
                prepared.close()
        row.seconds = round(time.perf_counter() - start, 2)
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def _marked(result: CheckRow, row: CheckRow) -> CheckRow:
    result.approximate_tree, result.tree_source = row.approximate_tree, row.tree_source
    return result


def _run(job: Any, row: CheckRow) -> CheckRow:
    try:
        result: CheckRow = asyncio.run(job)
    except SandboxError as exc:
        row.reason = getattr(exc, "reason", "sandbox_error")  # a DockerError's code
        row.reason = row.reason if row.reason in REASONS else "sandbox_error"
        row.detail = str(exc)[:300]
        return row
    return result
