"""The tests verifier's execution: a script validated on the base tree, then run on every candidate.

- **Validation** (:func:`validate`): the script runs ``base_runs`` times on the base tree (no patch).
  It is ``excluded`` — every candidate of the task ``missing`` with the reason — when a run ends
  without outcomes (``timeout``, ``sandbox_error``), when its tests cannot be collected
  (``tests_not_collected``: no test, or a module that does not import), when its tests fail only
  because a sandbox limit stopped them (``disk_limit``, ``network``, ``write_outside_tree``,
  ``memory_limit``, ``process_limit``: said by the error pytest reports), or when it passes there
  (``tests_pass_on_base``: it carries no signal). A test whose outcome differs between the base runs
  is left out (``flaky``); so is one stopped by a limit.
- **Grading** (:func:`grade`): each distinct patch runs in its own overlay of the prepared tree, or
  in docker (``tests.docker``) in a container of its own from the task's prepared image
  (1 + ``reruns`` times; a run without outcomes is not run again), applied before the tests are
  added, its test infrastructure put back to the base (:mod:`~agentic_rubrics.sandbox.testscript`).
  A test whose outcome flips between runs of one tree is left out for every candidate (``flaky``). A
  candidate's score is the share of the counted tests that pass as the SWE-bench harness counts them
  (:func:`passes`): a test that failed on the base tree passes when passed or xfailed (skipped,
  xpassed, absent: not); one that passed there is kept when passed, xfailed or skipped. A patch that
  does not apply scores 0 (``patch_does_not_apply``, the judge's gate), so does one that tampers with
  the tests (``tampers_with_tests``: it touches the graded folder, or its apply wrote a start-up file
  its diff does not name), and one whose tree does not collect the tests (``tests_not_collected``); a
  run stopped by a limit or the timeout gives no score (``None`` with the reason), and the run goes
  on.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.runfolder.verifier_rows import EXCERPT_CHARS, TestRunRow, TestValidation
from agentic_rubrics.sandbox.docker_cli import DOCKER_REASONS
from agentic_rubrics.sandbox.testrun import ExecLimits, ExecRun, run_tests
from agentic_rubrics.sandbox.testscript import TAMPERS

# As the SWE-bench harness grades (swebench/harness/grading.py): ``test_passed`` is PASSED or XFAIL;
# ``test_maintained`` (PASS_TO_PASS) adds SKIPPED; ``test_failed`` is FAILED, ERROR, SKIPPED or a test
# absent from the log. XPASS is no status its pytest parser (log_parsers/python.py) reads, so an
# xpassed test is absent there: failed.
PASSING = frozenset({"passed", "xfailed"})
"""Outcomes that pass a test that fails on the base tree (the harness's FAIL_TO_PASS)."""
MAINTAINED = PASSING | {"skipped"}
"""Outcomes that keep a test that passed (or was skipped) on the base tree (its PASS_TO_PASS)."""
NO_OUTCOME = frozenset({"timeout", "sandbox_error", "stage_failed", *DOCKER_REASONS})
"""Run reasons that leave no outcome to read: the tree gets no score (a container's failure, its
memory limit ``oom`` included, is one)."""
REFUSED = frozenset({"patch_does_not_apply", TAMPERS})
"""Run reasons that score 0: the patch does not apply, or it tampers with the tests."""
_LIMITS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("disk_limit", re.compile(r"\[Errno (28|122)\]")),
    ("write_outside_tree", re.compile(r"\[Errno 30\]")),
    ("network", re.compile(r"\[Errno (99|101|111|113|-2|-3)\]|gaierror")),
    ("memory_limit", re.compile(r"MemoryError|\[Errno 12\]")),
    ("process_limit", re.compile(r"\[Errno 11\]|BlockingIOError")),
)
"""A sandbox limit a test ran into, told by the error pytest reported for it."""

Runner = Callable[[str], Awaitable[ExecRun]]
"""Runs the script with one patch applied (``""``: the base tree)."""


def limit_hit(run: ExecRun, test: str) -> str | None:
    """The sandbox limit that stopped one test, if its error says so: pytest's summary line for it,
    or, for a runner that prints no per-test summary (sympy's bin/test, Django's: names without
    pytest's ``::``), the tail of the run's output (a limit named there leaves every failing test of
    the run without a score, never a 0 the sandbox caused)."""
    if run.outcomes.get(test) in MAINTAINED:
        return None
    message = run.messages.get(test, "") if "::" in test else run.excerpt
    return next((reason for reason, pattern in _LIMITS if pattern.search(message)), None)


def collected(run: ExecRun) -> bool:
    """Whether the runner collected the script's tests: some outcome, and no module that did not
    load (each runner reports one its own way: :attr:`~agentic_rubrics.sandbox.testrun.RunCommand.not_loaded`)."""
    return bool(run.outcomes) and not run.not_loaded


def run_row(
    done: ExecRun, instance_id: str, redact: Callable[[Any], Any], **where: Any
) -> TestRunRow:
    """One run as its row (its output's tail redacted and bounded)."""
    return TestRunRow(
        instance_id=instance_id,
        applied=done.applied,
        exit_code=done.exit_code,
        reason=done.reason,
        outcomes=dict(done.outcomes),
        durations={t: d for t, d in done.durations.items() if t in done.outcomes},
        seconds=max(done.seconds, 0.0),
        cpu_seconds=done.cpu_seconds,
        excerpt=str(redact(done.excerpt))[-EXCERPT_CHARS:],
        infra=list(done.infra),
        **where,
    )


def _flips(runs: list[ExecRun]) -> set[str]:
    """Tests whose outcome differs between runs of one tree (only runs that gave outcomes)."""
    read = [r for r in runs if r.reason not in NO_OUTCOME and collected(r)]
    if len(read) < 2:
        return set()
    tests = set().union(*(r.outcomes for r in read))
    return {t for t in tests if len({_class(r.outcomes.get(t)) for r in read}) > 1}


def _class(status: str | None) -> str:
    """A test's outcome as grading tells it apart: passed, skipped, or not (failed, absent)."""
    return "passed" if status in PASSING else "skipped" if status == "skipped" else "failed"


def passes(status: str | None, maintained: bool) -> bool:
    """Whether a test's status on a candidate's tree counts as a pass: for a test that passed (or
    was skipped) on the base tree, kept (passed, xfailed, skipped); for one that failed there, passed
    or xfailed only. A test that did not run (deselected, not collected) is absent: never a pass."""
    return status in (MAINTAINED if maintained else PASSING)


async def _safe(runner: Runner, patch: str) -> ExecRun:
    try:
        return await runner(patch)
    except SandboxError as exc:  # the sandbox would not start: this tree has no score
        return ExecRun(applied=None, reason="sandbox_error", excerpt=str(exc)[-EXCERPT_CHARS:])


async def validate(
    runner: Runner, runs: int, instance_id: str, redact: Callable[[Any], Any]
) -> TestValidation:
    """The script checked on the base tree (see the module's docstring)."""
    base: list[ExecRun] = []
    for _ in range(runs):
        base.append(await _safe(runner, ""))
        if base[-1].reason in NO_OUTCOME:
            break  # a script that hangs on the base tree is not run again
    rows = [run_row(r, instance_id, redact, run=n) for n, r in enumerate(base)]
    first = base[0]

    def excluded(reason: str, **more: Any) -> TestValidation:
        return TestValidation(status="excluded", reason=reason, base_runs=rows, **more)

    if first.reason in NO_OUTCOME:
        return excluded(first.reason or "sandbox_error")
    if not collected(first) or any(not collected(r) for r in base):
        return excluded("tests_not_collected")
    left_out = dict.fromkeys(sorted(_flips(base)), "flaky")
    for test in first.outcomes:
        hit = next((h for r in base if (h := limit_hit(r, test))), None)
        if hit is not None and test not in left_out:
            left_out[test] = hit
    counted = [t for t in first.outcomes if t not in left_out]
    if not counted:
        reasons = sorted(set(left_out.values()))
        reason = "all_tests_flaky" if reasons == ["flaky"] else reasons[-1]
        return excluded(reason, excluded=left_out)
    if all(first.outcomes[t] in MAINTAINED for t in counted):
        return excluded("tests_pass_on_base", tests=counted, excluded=left_out)
    return TestValidation(status="valid", tests=counted, excluded=left_out, base_runs=rows)


@dataclass
class Grades:
    """Every candidate's pass rate (``None``: no score) and reason, the runs, and what they cost."""

    pass_rate: dict[str, float | None] = field(default_factory=dict)
    reasons: dict[str, str | None] = field(default_factory=dict)
    infra: dict[str, list[str]] = field(default_factory=dict)
    excluded: dict[str, str] = field(default_factory=dict)
    counted: list[str] = field(default_factory=list)
    rows: list[TestRunRow] = field(default_factory=list)
    cpu_seconds: float = 0.0
    seconds: float = 0.0
    runs: int = 0
    unmeasured_runs: int = 0


def _score(
    run: ExecRun, counted: list[str], maintained: frozenset[str]
) -> tuple[float | None, str | None]:
    if run.reason in REFUSED:
        return 0.0, run.reason
    if run.reason in NO_OUTCOME:
        return None, run.reason
    hit = next((h for t in counted if (h := limit_hit(run, t))), None)
    if hit is not None:
        return None, hit
    if not collected(run):
        return 0.0, "tests_not_collected"
    passed = sum(1 for t in counted if passes(run.outcomes.get(t), t in maintained))
    return passed / len(counted), None


async def grade(
    runner: Runner,
    patches: dict[str, str],
    groups: dict[str, list[str]],
    validation: TestValidation,
    *,
    reruns: int,
    instance_id: str,
    redact: Callable[[Any], Any],
) -> Grades:
    """Each candidate graded (``patches``: patch hash -> patch; ``groups``: patch hash -> the ids of
    the candidates with that patch, run once for all of them)."""

    async def runs_of(patch: str) -> list[ExecRun]:
        done = [await _safe(runner, patch)]
        while len(done) <= reruns and done[0].reason is None and collected(done[0]):
            done.append(await _safe(runner, patch))
        return done

    keys = list(patches)
    found = await asyncio.gather(*(runs_of(patches[k]) for k in keys))
    out = Grades()
    flaky: set[str] = set()
    for key, runs in zip(keys, found, strict=True):
        flaky |= _flips(runs)
        for n, run in enumerate(runs):
            out.rows.append(
                run_row(
                    run, instance_id, redact, candidate_id=groups[key][0], patch_hash=key, run=n
                )
            )
            out.runs += 1
            out.seconds += run.seconds
            if run.cpu_seconds is None:
                out.unmeasured_runs += 1
            else:
                out.cpu_seconds += run.cpu_seconds
    out.excluded = {**validation.excluded, **dict.fromkeys(sorted(flaky), "flaky")}
    out.counted = [t for t in validation.tests if t not in out.excluded]
    base = validation.base_runs[0].outcomes if validation.base_runs else {}
    maintained = frozenset(t for t in out.counted if base.get(t) in MAINTAINED)
    for key, runs in zip(keys, found, strict=True):
        if out.counted:
            value, reason = _score(runs[0], out.counted, maintained)
        else:
            value, reason = None, "all_tests_flaky"
        for cid in groups[key]:
            out.pass_rate[cid], out.reasons[cid] = value, reason
            out.infra[cid] = list(runs[0].infra)
    return out


def limits_of(config: Any) -> ExecLimits:
    """The sandbox limits a :class:`~agentic_rubrics.pipeline.verifiers.TestsConfig` sets."""
    return ExecLimits(
        timeout_s=config.timeout_s,
        max_processes=config.max_processes,
        max_memory_mib=config.max_memory_mib,
        max_write_mib=config.max_write_mib,
        excerpt_chars=EXCERPT_CHARS,
    )


def runner_for(
    tree: Any,
    files: dict[str, str],
    config: Any,
    slot: Any,
    interpreter: Any = None,
    layout: Any = None,
) -> Runner:
    """A :data:`Runner` over a prepared tree: each run takes one of the run's sandbox slots;
    ``interpreter`` (:class:`~agentic_rubrics.sandbox.testenv.Interpreter`): the Python and the
    host folders the sandbox sees read-only (``config.python`` alone without it); ``layout``
    (:class:`~agentic_rubrics.sandbox.testlayout.Layout`): where the files go and the runner that
    runs them (pytest at the root without it)."""
    from agentic_rubrics.sandbox.testlayout import LAYOUTS

    layout = layout or LAYOUTS["pytest"]
    given = {**layout.extra, **files}
    tests = {name: text.encode("utf-8", "surrogateescape") for name, text in given.items()}
    limits = limits_of(config)
    python = interpreter.python if interpreter is not None else config.python
    read_only = interpreter.read_only if interpreter is not None else None
    command = layout.command(python, sorted(given))

    async def run(patch: str) -> ExecRun:
        async with slot():
            return await run_tests(
                tree,
                patch,
                tests,
                python=python,
                limits=limits,
                read_only=read_only,
                command=command,
                folder=layout.folder,
            )

    return run


class TaskContainers:
    """A task's image in docker, prepared once for every run of its tests
    (:func:`~agentic_rubrics.sandbox.testrun_docker.prepare_task`: history cleaned, environment read,
    committed), each run in a container of its own from it; removed by :meth:`close`."""

    def __init__(self, config: Any, where: Any) -> None:
        self.config, self.where = config, where
        self.task: Any = None
        self.failure: SandboxError | None = None
        self._lock = asyncio.Lock()

    async def prepared(self) -> Any:
        """The prepared image (raises the preparation's :class:`SandboxError`, once and after)."""
        from agentic_rubrics.sandbox.testrun_docker import prepare_task

        async with self._lock:
            if self.task is None and self.failure is None:
                try:
                    self.task = await prepare_task(self.config, self.where)
                except SandboxError as exc:
                    self.failure = exc
            if self.failure is not None:
                raise self.failure
            return self.task

    async def close(self) -> None:
        from agentic_rubrics.sandbox.testrun_docker import remove_prepared

        if self.task is not None:
            await remove_prepared(self.task)
            self.task = None


def docker_runner_for(
    containers: TaskContainers, files: dict[str, str], config: Any, slot: Any, layout: Any = None
) -> Runner:
    """A :data:`Runner` in docker (``config.docker``'s image, the tests run with its ``python``):
    each run a container of its own from the task's prepared image, taking one of the run's sandbox
    slots; a container that fails gives a run with the reason (never raises)."""
    from agentic_rubrics.sandbox.testlayout import LAYOUTS
    from agentic_rubrics.sandbox.testrun_docker import failed_run, run_in_container

    layout = layout or LAYOUTS["pytest"]
    given = {**layout.extra, **files}
    tests = {name: text.encode("utf-8", "surrogateescape") for name, text in given.items()}
    limits = limits_of(config)
    command = layout.command("python", sorted(given))

    async def run(patch: str) -> ExecRun:
        try:  # before a slot: runs waiting on the one preparation hold none
            task = await containers.prepared()
        except SandboxError as exc:
            return failed_run(exc)
        async with slot():
            return await run_in_container(
                containers.config,
                containers.where,
                task,
                patch,
                tests,
                "python",
                limits,
                "",
                command,
                layout.folder,
            )

    return run
