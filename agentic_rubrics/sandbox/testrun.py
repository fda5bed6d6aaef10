"""A test script executed against one candidate, in a bubblewrap sandbox over the task's tree.

The task's tree (a cached export, or its ``repo_path``) is copied once per task (:class:`PreparedTree`:
writable by the sandbox's user, as the repository's files must be for a patch), and that copy is the
overlay's lower layer of every candidate's sandbox: nothing is copied per candidate. Inside the sandbox
runs the script of :mod:`~agentic_rubrics.sandbox.testscript`: the candidate applied like the SWE-bench
harness (``git apply``, then ``patch --batch --fuzz=5 -p1``), the test infrastructure it changed
(:mod:`agentic_rubrics.test_infra`: conftests, pytest's config, start-up files) put back to the base
version, then the test files copied into ``agentic_rubrics_tests/`` (or the test patch applied over the
base version of its files) and a fresh pytest run (no plugin autoload, no cache, no bytecode, pytest's
variables unset, captured output not shown), its report written to the run's own ``/tmp`` (apart from the
tree's capped layer, which a test may fill) and read back as one line per test (``PASSED <node id>`` …)
and a tail. A candidate touching the graded folder is refused before any sandbox starts
(``tampers_with_tests``). Every limit of the sandbox holds: no network, no capability, an unprivileged
uid, a process limit, an address space per process, a capped writable layer and ``/tmp``, and a timeout
that kills the whole pid namespace.

What a candidate's code does when the tests import it still runs in the tests' process (it could patch
pytest's internals on import), as under the SWE-bench harness: the guard is against changing how tests
are found, configured and loaded, not against code under test."""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.protocols import CommandResult
from agentic_rubrics.sandbox.testscript import (
    STAGE,
    TAMPERS,
    RunPlan,
    plan,
    script_text,
    staged,
    tree_reader,
)
from agentic_rubrics.test_infra import GRADED_FOLDER, InfraKind

TEST_DIR = GRADED_FOLDER
"""Where the test files go in the candidate's tree (:data:`~agentic_rubrics.test_infra.GRADED_FOLDER`)."""
Status = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
_TIMES = re.compile(
    r"^@@TIMES\n(\d+)m([\d.]+)s (\d+)m([\d.]+)s\n(\d+)m([\d.]+)s (\d+)m([\d.]+)s$", re.M
)
_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)(?: - ([^\n]*))?", re.M)
_DURATION = re.compile(r"^([0-9.]+)s (?:setup|call|teardown) +(\S+)", re.M)
_STATUS: dict[str, Status] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "xfailed",
    "XPASS": "xpassed",
}
STATUS_WORDS = tuple(_STATUS)
"""The words pytest's ``-rA`` summary starts a test's line with."""
_PYTEST = (
    "{{ _ar_pytest() {{ PYTHONDONTWRITEBYTECODE=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {python} -m pytest"
    ' -q -rA --tb=short --show-capture=no -p no:cacheprovider --durations=0 "$@"'
    " --rootdir={root} {dir}; }}; _ar_pytest --durations-min=0; _ar_rc=$?;"
    " if [ $_ar_rc -eq 4 ]; then _ar_pytest; _ar_rc=$?; fi; (exit $_ar_rc); }}"
)
"""The library's own pytest run: every test's duration (``--durations-min=0``), and, where the
tree's pytest refuses that option (before 6.2: a usage error, exit 4, as in pytest-dev's own
instances, whose pytest is the tree's), the same run without it (durations under 5 ms then hidden)."""


def parse_pytest_lines(lines: str) -> dict[str, Status]:
    """Node id -> status, from pytest's ``-rA`` summary lines (the harness's ``parse_log_pytest``;
    ``SKIPPED [n] file:line: reason``, skips grouped by place, names no test and is left out)."""
    return {
        m.group(2): _STATUS[m.group(1)]
        for m in _LINE.finditer(lines)
        if not m.group(2).startswith("[")
    }


def pytest_not_loaded(name: str) -> bool:
    """pytest reports a module it could not collect under the file's node id (no ``::`` test)."""
    return "::" not in name


@dataclass(frozen=True)
class RunCommand:
    """What runs in the tree once the candidate (and any test patch) is applied, and how it is read."""

    command: str
    """The shell command (in the tree's root; its output is the log)."""
    lines: str = "^(" + "|".join(STATUS_WORDS) + ") "
    """The extended regex (``grep -E``) of the log's lines that carry a test's status."""
    parse: Callable[[str], dict[str, Status]] = parse_pytest_lines
    """Test name -> status, from those lines."""
    not_loaded: Callable[[str], bool] = pytest_not_loaded
    """Whether a name ``parse`` gave is a test module that did not load (no test of it ran)."""


PYTEST_LINES = "^(" + "|".join(STATUS_WORDS) + ") |^[0-9.]+s (setup|call|teardown) "
"""The library's own pytest run: each test's status line and its durations (``--durations=0``)."""


@dataclass(frozen=True)
class ExecLimits:
    """What one run of the tests may use (each a hard limit of the sandbox)."""

    timeout_s: float = 120.0
    """Seconds for applying and running the tests; past it the whole pid namespace is killed."""
    max_processes: int = 256
    """Processes and threads at once (a fork bomb stops there)."""
    max_memory_mib: int = 2048
    """Address space of each process."""
    max_write_mib: int = 256
    """What the tests and the patch may write in the tree and the home, together."""
    max_tmp_mib: int = 64
    """Each run's private ``/tmp``."""
    excerpt_chars: int = 1500
    """The tail of pytest's output kept with the outcome."""


@dataclass
class ExecRun:
    """One run of the tests on one tree: applied, and each test's status."""

    applied: str | None
    """``git_apply``, ``patch_fuzz``, ``none`` (an empty patch: the base tree) or ``None`` (it did not apply)."""
    outcomes: dict[str, Status] = field(default_factory=dict)
    """Node id -> status, as pytest reported it."""
    messages: dict[str, str] = field(default_factory=dict)
    """Node id -> the message pytest's summary gave a test that did not pass (``OSError: ...``)."""
    exit_code: int | None = None
    """pytest's exit status (``None``: it did not run, or it was killed)."""
    reason: str | None = None
    """Why there are no outcomes: ``patch_does_not_apply``, ``timeout``, ``no_tests_collected``,
    ``stage_failed``, ``test_patch_does_not_apply``, ``tampers_with_tests``, ``sandbox_error``;
    ``None`` when pytest reported."""
    excerpt: str = ""
    """The tail of pytest's output (bounded)."""
    seconds: float = 0.0
    """Wall time of the whole run."""
    cpu_s: float | None = None
    """CPU-seconds inside the sandbox (the script's shell and every child it reaped: apply, the
    interpreter, the tests), from bash's ``times``; ``None`` when the script did not get there."""
    durations: dict[str, float] = field(default_factory=dict)
    """Node id -> seconds of its setup, call and teardown, as pytest timed them."""
    timings: dict[str, float] = field(default_factory=dict)
    """``prepare_ms`` (staging and the sandbox's start), ``run_ms`` (apply and pytest), ``close_ms``."""
    infra: list[InfraKind] = field(default_factory=list)
    """The kinds of test infrastructure the candidate changes (:mod:`agentic_rubrics.test_infra`),
    neutralised before the tests ran."""
    not_loaded: list[str] = field(default_factory=list)
    """Names in ``outcomes`` that are test modules that did not load, as the runner reports them
    (:attr:`RunCommand.not_loaded`)."""

    @property
    def cpu_seconds(self) -> float | None:
        """:attr:`cpu_s` (the name the tests verifier's records use)."""
        return self.cpu_s

    @property
    def passed(self) -> int:
        return sum(1 for s in self.outcomes.values() if s in ("passed", "xfailed"))

    @property
    def failed(self) -> int:
        return sum(1 for s in self.outcomes.values() if s in ("failed", "error", "xpassed"))


class PreparedTree:
    """One task's tree, copied once and made writable by the sandbox's user: every candidate's sandbox
    lays its writable layer over it (``path``); removed by :meth:`close`."""

    def __init__(self, tree: Path) -> None:
        from agentic_rubrics.sandbox.holder import give_away
        from agentic_rubrics.sandbox.local import copy_tree

        self._tmp = Path(tempfile.mkdtemp(prefix="agentic-rubrics-tree-"))
        self._tmp.chmod(0o755)
        self.path = self._tmp / "tree"
        try:
            copy_tree(tree, self.path)
            for folder, dirs, files in os.walk(self.path):
                for name in dirs + files:
                    entry = Path(folder, name)
                    if not entry.is_symlink():
                        entry.chmod(entry.stat().st_mode | 0o600 | (0o100 if entry.is_dir() else 0))
            self.path.chmod(0o755)
            give_away(self.path)
        except BaseException:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise

    def close(self) -> None:
        """Remove the copy."""
        shutil.rmtree(self._tmp, ignore_errors=True)


def stage_files(
    patch: str, tests: dict[str, bytes], test_patch: str = "", run_plan: RunPlan | None = None
) -> Path:
    """A folder the sandbox's host user may read: the patch, the test patch, the paths to put back
    and the diff's paths (:func:`~agentic_rubrics.sandbox.testscript.staged`), and the test files."""
    stage = Path(tempfile.mkdtemp(prefix="agentic-rubrics-stage-"))
    stage.chmod(0o755)
    run_plan = run_plan or plan(patch, graded=bool(tests), test_patch=test_patch)
    for name, data in staged(patch, test_patch, run_plan).items():
        (stage / name).write_bytes(data)
    folder = stage / "tests"
    folder.mkdir(mode=0o755)
    for name, data in tests.items():
        target = folder / name
        if target.resolve().parent != folder.resolve() or name.startswith("."):
            raise SandboxError(f"test file name {name!r} is not a plain file name")
        target.write_bytes(data)
    for path in stage.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return stage


def parse(
    output: str, read: Callable[[str], dict[str, Status]] = parse_pytest_lines
) -> tuple[str | None, int | None, dict[str, Status], str]:
    """The apply method, the tests' exit code, each test's status and the tail, from the run's output."""
    applied: str | None = None
    exit_code: int | None = None
    for line in output.splitlines():
        if line.startswith("@@APPLY "):
            said = line[8:].strip()
            applied = None if said in ("failed", "unlisted") else said
        elif line.startswith("@@EXIT "):
            value = line[7:].strip()
            exit_code = int(value) if value.isdigit() else None
    head, _, tail = output.partition("\n@@TAIL\n")
    return applied, exit_code, read(head), tail


def cpu_seconds(output: str) -> float | None:
    """The CPU-seconds bash's ``times`` reported after the tests (shell and children, user and sys)."""
    match = _TIMES.search(output)
    if match is None:
        return None
    parts = match.groups()
    return round(sum(float(parts[i]) * 60 + float(parts[i + 1]) for i in range(0, 8, 2)), 4)


def durations(output: str) -> dict[str, float]:
    """Node id -> its setup, call and teardown seconds together (pytest's ``--durations``)."""
    out: dict[str, float] = {}
    for m in _DURATION.finditer(output.partition("\n@@TAIL\n")[0]):
        try:
            out[m.group(2)] = round(out.get(m.group(2), 0.0) + float(m.group(1)), 4)
        except ValueError:  # not a number after all ("1.2.3s")
            continue
    return out


def messages(output: str) -> dict[str, str]:
    """Node id -> the message on its summary line (``FAILED id - OSError: ...``), where there is one."""
    head = output.partition("\n@@TAIL\n")[0]
    return {m.group(2): m.group(3)[:300] for m in _LINE.finditer(head) if m.group(3)}


def script(
    tests: dict[str, bytes],
    python: str,
    limits: ExecLimits,
    command: RunCommand | None = None,
    variables: dict[str, str] | None = None,
    *,
    stage: str = STAGE,
    workdir: str = "/workspace",
    log: str = "/tmp/pytest.out",
    keep: str = "/tmp/agentic-rubrics-keep",
    folder: str = TEST_DIR,
) -> str:
    """The shell script one run is (:mod:`~agentic_rubrics.sandbox.testscript`: the staged files at
    ``stage``, the tree at ``workdir``, the tests' output in ``log``, the base copies in ``keep``,
    the test files in ``folder``)."""
    if command is None:
        pytest = _PYTEST.format(python=shlex.quote(python), dir=TEST_DIR, root=shlex.quote(workdir))
        command = RunCommand(pytest, lines=PYTEST_LINES)
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in (variables or {}).items())
    return script_text(
        command.command,
        command.lines,
        tail=limits.excerpt_chars,
        tests=bool(tests),
        stage=stage,
        workdir=workdir,
        log=log,
        keep=keep,
        exports=exports,
        folder=folder,
    )


def refused(run_plan: RunPlan) -> ExecRun | None:
    """The run of a candidate refused before anything runs (``None``: it runs)."""
    if run_plan.refused is None:
        return None
    return ExecRun(applied=None, reason=run_plan.refused, infra=list(run_plan.infra))


def outcome(done: CommandResult, command: RunCommand | None = None) -> ExecRun:
    """One run's result from the script's output, read as ``command`` says (the library's own
    pytest command when ``None``)."""
    read = command.parse if command is not None else parse_pytest_lines
    not_loaded = command.not_loaded if command is not None else pytest_not_loaded
    applied, exit_code, outcomes, tail = parse(done.output, read)
    run = ExecRun(applied=applied, outcomes=outcomes, exit_code=exit_code, excerpt=tail)
    run.not_loaded = sorted(name for name in outcomes if not_loaded(name))
    run.cpu_s = cpu_seconds(done.output)
    run.messages, run.durations = messages(done.output), durations(done.output)
    if done.timed_out:
        run.reason = "timeout"
    elif "@@STAGE failed" in done.output:
        run.reason = "stage_failed"
    elif "@@APPLY unlisted" in done.output:
        run.reason = TAMPERS
    elif applied is None and "@@APPLY failed" in done.output:
        run.reason = "patch_does_not_apply"
    elif "@@TESTPATCH failed" in done.output:
        run.reason = "test_patch_does_not_apply"
    elif exit_code is None:
        run.reason = "sandbox_error"
    elif not outcomes:
        run.reason = "no_tests_collected"
    return run


async def run_tests(
    tree: Path,
    patch: str,
    tests: dict[str, bytes],
    *,
    python: str = "/usr/bin/python3",
    limits: ExecLimits | None = None,
    test_patch: str = "",
    command: RunCommand | None = None,
    read_only: dict[str, Path] | None = None,
    variables: dict[str, str] | None = None,
    folder: str = TEST_DIR,
) -> ExecRun:
    """Apply ``patch`` (then ``test_patch``) over ``tree`` (a :class:`PreparedTree`'s path: never
    modified) in a sandbox and run ``tests`` there with ``python`` (or ``command``, with the tests in
    place); ``read_only``: host folders the sandbox sees read-only (an environment), ``variables``: its
    environment variables; ``folder``: where ``tests`` go in the tree."""
    from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox

    limits = limits or ExecLimits()
    start = time.perf_counter()
    run_plan = plan(patch, graded=bool(tests), test_patch=test_patch, read_base=tree_reader(tree))
    if (refusal := refused(run_plan)) is not None:
        return refusal
    stage = stage_files(patch, tests, test_patch, run_plan)
    try:
        sandbox = await asyncio.to_thread(
            BubblewrapSandbox,
            tree,
            shared=True,
            max_write_bytes=limits.max_write_mib << 20,
            max_tmp_bytes=limits.max_tmp_mib << 20,
            max_processes=limits.max_processes,
            max_memory_bytes=limits.max_memory_mib << 20,
            read_only={STAGE: stage, **(read_only or {})},
        )
    except SandboxError:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    prepared = time.perf_counter()
    text = script(tests, python, limits, command, variables, folder=folder)
    try:
        done = await sandbox.run(text, timeout=limits.timeout_s, max_output=400_000)
    finally:
        ran = time.perf_counter()
        await sandbox.close()
        shutil.rmtree(stage, ignore_errors=True)
    run = outcome(done, command)
    run.infra = list(run_plan.infra)
    end = time.perf_counter()
    run.seconds = round(end - start, 4)
    run.timings = {
        "prepare_ms": round((prepared - start) * 1000, 2),
        "run_ms": round((ran - prepared) * 1000, 2),
        "close_ms": round((end - ran) * 1000, 2),
    }
    return run
