"""A test script executed against one candidate, in a bubblewrap sandbox over the task's tree.

The task's tree (a cached export, or its ``repo_path``) is copied once per task (:class:`PreparedTree`:
writable by the sandbox's user, as the repository's files must be for a patch), and that copy is the
overlay's lower layer of every candidate's sandbox: nothing is copied per candidate. Inside the sandbox, the candidate is applied like the SWE-bench harness (``git
apply``, then ``patch --batch --fuzz=5 -p1``), the test files are copied into ``agentic_rubrics_tests/``
and a fresh pytest runs them (no plugin autoload, no cache, no bytecode, captured output not shown), its
report written to the run's own ``/tmp`` (apart from the tree's capped layer, which a test may fill) and
read back as one line per test (``PASSED <node id>`` …) and a tail. Every
limit of the sandbox holds: no network, no capability, an unprivileged uid, a process limit, an address
space per process, a capped writable layer and ``/tmp``, and a timeout that kills the whole pid namespace.

A candidate patch can still add a ``conftest.py`` that changes outcomes, as it can under the SWE-bench
harness: tests run the code as the candidate leaves it.
"""

from __future__ import annotations

import asyncio
import os
import re
import shlex
import shutil
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentic_rubrics.exceptions import SandboxError

TEST_DIR = "agentic_rubrics_tests"
"""Where the test files go in the candidate's tree."""
STAGE = "/stage"
"""Where the candidate's patch and the test files are bound read-only inside the sandbox."""
Status = Literal["passed", "failed", "error", "skipped", "xfailed", "xpassed"]
_LINE = re.compile(r"^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (\S+)(?: - ([^\n]*))?", re.M)
_STATUS: dict[str, Status] = {
    "PASSED": "passed",
    "FAILED": "failed",
    "ERROR": "error",
    "SKIPPED": "skipped",
    "XFAIL": "xfailed",
    "XPASS": "xpassed",
}
_SCRIPT = """set -u
cd /workspace
cp -r {stage}/tests {dir} 2>/dev/null || {{ echo "@@STAGE failed"; exit 0; }}
applied=none
if [ -s {stage}/candidate.diff ]; then
  if git apply --whitespace=nowarn {stage}/candidate.diff >/dev/null 2>&1; then applied=git_apply
  elif patch --batch --fuzz=5 -p1 -i {stage}/candidate.diff >/dev/null 2>&1; then applied=patch_fuzz
  else echo "@@APPLY failed"; exit 0
  fi
fi
echo "@@APPLY $applied"
PYTHONDONTWRITEBYTECODE=1 PYTEST_DISABLE_PLUGIN_AUTOLOAD=1 {python} -m pytest -q -rA --tb=short \\
  --show-capture=no -p no:cacheprovider --durations=0 --durations-min=0 --rootdir=/workspace {dir} \
  > /tmp/pytest.out 2>&1
echo "@@EXIT $?"
times > /tmp/times.out 2>/dev/null; echo "@@CPU $(tail -n 1 /tmp/times.out 2>/dev/null)"
grep -E '^(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) |^[0-9.]+s (setup|call|teardown) ' /tmp/pytest.out \
  | head -n 20000 | cut -c1-400
echo "@@TAIL"
tail -c {tail} /tmp/pytest.out
"""


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
    ``stage_failed``, ``sandbox_error``; ``None`` when pytest reported."""
    excerpt: str = ""
    """The tail of pytest's output (bounded)."""
    seconds: float = 0.0
    """Wall time of the whole run."""
    timings: dict[str, float] = field(default_factory=dict)
    durations: dict[str, float] = field(default_factory=dict)
    """Node id -> seconds of its setup, call and teardown, as pytest timed them."""
    cpu_seconds: float | None = None
    """CPU time (user and system) of everything the run's shell waited for: ``git apply`` and pytest
    with its children (``None``: killed before it could say)."""
    """``prepare_ms`` (staging and the sandbox's start), ``run_ms`` (apply and pytest), ``close_ms``."""

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


def _stage(patch: str, tests: dict[str, bytes]) -> Path:
    """A folder the sandbox's host user may read: the patch and the test files."""
    stage = Path(tempfile.mkdtemp(prefix="agentic-rubrics-stage-"))
    stage.chmod(0o755)
    (stage / "candidate.diff").write_text(patch, encoding="utf-8", errors="surrogateescape")
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


_CPU = re.compile(r"^@@CPU (\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$", re.M)


def cpu_seconds(output: str) -> float | None:
    """The children's user + system seconds bash's ``times`` printed after pytest (``None``: none)."""
    found = _CPU.search(output.partition("\n@@TAIL\n")[0])
    if found is None:
        return None
    um, us, sm, ss = found.groups()
    return round(int(um) * 60 + float(us) + int(sm) * 60 + float(ss), 4)


def parse(output: str) -> tuple[str | None, int | None, dict[str, Status], str]:
    """The apply method, pytest's exit code, each test's status and the tail, from the run's output."""
    applied: str | None = None
    exit_code: int | None = None
    for line in output.splitlines():
        if line.startswith("@@APPLY "):
            applied = None if line[8:].strip() == "failed" else line[8:].strip()
        elif line.startswith("@@EXIT "):
            value = line[7:].strip()
            exit_code = int(value) if value.isdigit() else None
    head, _, tail = output.partition("\n@@TAIL\n")
    outcomes = {m.group(2): _STATUS[m.group(1)] for m in _LINE.finditer(head)}
    return applied, exit_code, outcomes, tail


_DURATION = re.compile(r"^([0-9.]+)s (?:setup|call|teardown) +(\S+)", re.M)


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


async def run_tests(
    tree: Path,
    patch: str,
    tests: dict[str, bytes],
    *,
    python: str = "/usr/bin/python3",
    limits: ExecLimits | None = None,
) -> ExecRun:
    """Apply ``patch`` over ``tree`` (a :class:`PreparedTree`'s path: never modified) in a sandbox and
    run ``tests`` there."""
    from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox

    limits = limits or ExecLimits()
    start = time.perf_counter()
    stage = _stage(patch, tests)
    try:
        sandbox = await asyncio.to_thread(
            BubblewrapSandbox,
            tree,
            shared=True,
            max_write_bytes=limits.max_write_mib << 20,
            max_tmp_bytes=limits.max_tmp_mib << 20,
            max_processes=limits.max_processes,
            max_memory_bytes=limits.max_memory_mib << 20,
            read_only={STAGE: stage},
        )
    except SandboxError:
        shutil.rmtree(stage, ignore_errors=True)
        raise
    prepared = time.perf_counter()
    script = _SCRIPT.format(
        stage=STAGE, dir=TEST_DIR, python=shlex.quote(python), tail=limits.excerpt_chars
    )
    try:
        done = await sandbox.run(script, timeout=limits.timeout_s, max_output=400_000)
    finally:
        ran = time.perf_counter()
        await sandbox.close()
        shutil.rmtree(stage, ignore_errors=True)
    applied, exit_code, outcomes, tail = parse(done.output)
    run = ExecRun(applied, outcomes, messages(done.output), exit_code, excerpt=tail)
    run.cpu_seconds, run.durations = cpu_seconds(done.output), durations(done.output)
    if done.timed_out:
        run.reason = "timeout"
    elif "@@STAGE failed" in done.output:
        run.reason = "stage_failed"
    elif applied is None and "@@APPLY failed" in done.output:
        run.reason = "patch_does_not_apply"
    elif exit_code is None:
        run.reason = "sandbox_error"
    elif not outcomes:
        run.reason = "no_tests_collected"
    end = time.perf_counter()
    run.seconds = round(end - start, 4)
    run.timings = {
        "prepare_ms": round((prepared - start) * 1000, 2),
        "run_ms": round((ran - prepared) * 1000, 2),
        "close_ms": round((end - ran) * 1000, 2),
    }
    return run
