"""Worker processes that cannot start stop the run and say why, whichever pool they belong to.

Every pool the package starts (the post-image analysis's, litellm's) uses ``spawn``, whose workers import
the parent's main module again. Each test runs a real script as its own process, as users run theirs:
``-c`` or pytest's own main module would not be imported again.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentic_rubrics.worker_processes import MAIN_REIMPORTED, start_failure

from .conftest import git

# a guarded script whose workers die while importing it, for a reason of its own (exit code 3)
DIES_AT_IMPORT = """
import asyncio, multiprocessing, sys
from pathlib import Path
from agentic_rubrics.rubric.postimage import worker

if multiprocessing.current_process().name != "MainProcess":
    sys.exit(3)  # only in a worker: say, a module the worker's environment lacks

if __name__ == "__main__":
    asyncio.run(worker.analyze_in_worker(Path(sys.argv[1]), sys.argv[2]))
"""

# an unguarded script whose explorer's model runs in litellm workers (processes: 2)
AGENT_UNGUARDED = """
import json, sys
from pathlib import Path
import agentic_rubrics as ar
from agentic_rubrics.pipeline.config import load_config

tasks = ar.write_tasks_jsonl(Path("all.jsonl"))
one = Path("one.jsonl")
one.write_text(tasks.read_text().splitlines()[0] + "\\n")
model = {"model": "openai/nothing", "api_base": "http://127.0.0.1:9/v1", "processes": 2,
         "max_retries": 0, "timeout": 5}
config = load_config(None, {
    "explorer": {"kind": "agent", "model": model, "sandbox": {"type": "local-copy"},
                 "allow_unisolated": True},
    "bootstrap_resamples": 0, "plots": False,
})
report = ar.run(one, Path("out"), config)
print(json.dumps(report["rubrics"]["failed"]))
"""

# an unguarded script whose auto policy decides to start litellm workers
AUTO_UNGUARDED = """
import asyncio, time
from agentic_rubrics.llm.pool_auto import AutoPool

auto = AutoPool(8, cpus=2, min_calls=2, every=1, saturation=0.0)
for _ in range(3):
    auto.record(0.5)
assert auto.pool is not None
try:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if auto.ready_pool() is not None:
            print("a worker started")
            break
        time.sleep(0.1)
    else:
        print("no worker started: calls went on in this process")
finally:  # as a run's model door does: the pool's pipes closed, whatever happened
    asyncio.run(auto.pool.close())
"""


def _run(script: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(script), *args],
        cwd=script.parent,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _last_line(done: subprocess.CompletedProcess[str]) -> str:
    lines = done.stderr.strip().splitlines()
    return lines[-1] if lines else ""


def test_analysis_workers_that_die_at_start_for_another_cause_are_not_blamed_on_the_guard(
    tmp_path: Path,
) -> None:
    """The script is guarded; its workers die anyway (exit code 3): the error gives that code and
    points at the worker's own error, and does not claim the script ran its job again."""
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "m.py").write_text("a = 1\n")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    patch = "--- a/m.py\n+++ b/m.py\n@@ -1 +1 @@\n-a = 1\n+a = 2\n"
    script = tmp_path / "guarded.py"
    script.write_text(DIES_AT_IMPORT)
    done = _run(script, str(repo), patch)
    assert done.returncode != 0
    error = _last_line(done)
    assert error.startswith("agentic_rubrics.exceptions.WorkerStartError: "), done.stderr
    assert "died while starting, before running anything (exit code 3)" in error
    assert "calls agentic_rubrics" not in error and "run the whole job again" not in error
    assert f"imports the script {script} again first" in error  # where to look, as a possibility


def test_model_workers_that_cannot_start_stop_the_run_instead_of_failing_rubrics(
    tmp_path: Path,
) -> None:
    """An unguarded script whose explorer's model runs in worker processes: every worker imports
    the script, which calls ``ar.run`` again. ``ar.run`` raises, naming cause and fix; before, the
    calls went on in the parent and the run ended with exit code 0."""
    script = tmp_path / "agent.py"
    script.write_text(AGENT_UNGUARDED)
    done = _run(script)
    assert done.returncode != 0, done.stdout
    error = _last_line(done)
    assert error.startswith("agentic_rubrics.exceptions.WorkerStartError: "), done.stderr
    assert error.startswith(
        "agentic_rubrics.exceptions.WorkerStartError: litellm's worker processes"
    )
    assert f"imports the script {script} again" in error and "calls agentic_rubrics" in error
    assert 'if __name__ == "__main__":' in error and f"exit code {MAIN_REIMPORTED}" in error
    assert "RunFolderBusy" not in done.stderr  # no worker got as far as the run folder


def test_auto_model_workers_that_cannot_start_stop_the_run(tmp_path: Path) -> None:
    """``processes="auto"`` starts its workers mid-run: if none can start, it says so instead of
    going on in this process without a word."""
    script = tmp_path / "auto.py"
    script.write_text(AUTO_UNGUARDED)
    done = _run(script)
    assert done.returncode != 0, done.stdout
    error = _last_line(done)
    assert error.startswith("agentic_rubrics.exceptions.WorkerStartError: "), done.stderr
    assert "calls agentic_rubrics" in error and 'if __name__ == "__main__":' in error


@pytest.mark.parametrize(
    ("codes", "said"),
    [
        ([MAIN_REIMPORTED, -15], f"they stopped instead (exit code {MAIN_REIMPORTED})"),
        ([1], "died while starting, before running anything (exit code 1)"),
        ([-9], "(killed by SIGKILL)"),
        ([], "(exit status unknown)"),
    ],
)
def test_the_start_failure_says_what_the_exit_codes_say(codes: list[int], said: str) -> None:
    text = start_failure("the workers", codes)
    assert text.startswith("the workers ") and said in text
    assert ("calls agentic_rubrics" in text) == (MAIN_REIMPORTED in codes)


def test_a_worker_s_mark_names_the_cause_when_its_exit_code_came_too_late() -> None:
    """On a loaded machine the worker that stopped as the main module's re-import may not be reaped
    when the parent reads exit codes (it saw only SIGTERM or nothing): the mark it left says it."""
    from agentic_rubrics.worker_processes import _mark

    mark = _mark(os.getpid())
    mark.touch()
    try:
        text = start_failure("the workers", [-15])
    finally:
        leftover = mark.exists()
        mark.unlink(missing_ok=True)
    assert "calls agentic_rubrics" in text and not leftover
    assert "calls agentic_rubrics" not in start_failure("the workers", [-15])  # read once
