"""The post-image analysis runs in a worker process: the event loop keeps turning while it works, a worker
that runs too long is stopped, one that dies is reported, and a tree that could not be had is a gap the
next run retries (a run with no repository configured is not)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentic_rubrics.judge.judges import ChecksJudge
from agentic_rubrics.pipeline.verifiers.rubric_judging import judge_task
from agentic_rubrics.rubric.checks_repo import RepoAnalyses, decide
from agentic_rubrics.rubric.file import parse_rubric
from agentic_rubrics.rubric.postimage import analyze_patch, worker
from agentic_rubrics.runfolder.retry import transient_verdict
from agentic_rubrics.types import Candidate, Check, Task

from .conftest import git

MakeRepo = Callable[[dict[str, bytes | str]], tuple[Path, Callable[..., str]]]

MOD = "def helper(x):\n    return x + 1\n\n\ndef other():\n    return helper(2)\n"
RUBRIC = """\
metadata: {task_summary: t, underlying_bug: b}
axes:
  file_change_rubrics: []
  spec_alignment_rubrics: []
  integrity_rubrics:
    - {id: IN1, description: Applies to the base tree, weight: 3, gate: true, check: {applies: true}}
  runtime_rubrics:
    - {id: RT1, description: Defines what it uses, weight: 3, check: {no_new_undefined_names: true}}
"""


def _patch(git_repo: MakeRepo) -> tuple[Path, str]:
    repo, diff = git_repo({"pkg/__init__.py": "", "pkg/mod.py": MOD})
    (repo / "pkg" / "mod.py").write_text(MOD.replace("return x + 1", "return x + missing_name"))
    patch = diff()
    git(repo, "reset", "-q", "--hard")  # the tree stays at its base commit
    return repo, patch


def _check(spec: dict[str, object]) -> Check:
    return Check.model_validate(spec)


def test_the_analysis_runs_in_a_worker_while_the_event_loop_keeps_turning(
    git_repo: MakeRepo,
) -> None:
    repo, patch = _patch(git_repo)

    async def main() -> tuple[bool, object]:
        call = asyncio.create_task(RepoAnalyses(repo).analysis(patch))
        await asyncio.sleep(0)  # the call's first step runs here
        # in the event loop's thread the whole analysis would have run in that one step
        waiting = not call.done()
        return waiting, await call

    waiting, result = asyncio.run(main())
    assert waiting
    assert result == analyze_patch(repo, patch).model_copy(update={"timings": result.timings})
    assert decide(_check({"no_new_undefined_names": True}), result).value == 0


def test_a_worker_past_its_time_limit_is_stopped_and_the_next_analysis_works(
    git_repo: MakeRepo,
) -> None:
    repo, patch = _patch(git_repo)

    async def main() -> tuple[object, object, object]:
        # a worker cannot even start in a millisecond: the call times out
        late = await worker.analyze_in_worker(repo, patch, timeout_s=0.001)
        stopped = worker._pool
        fresh = await worker.analyze_in_worker(repo, patch)
        return late, stopped, fresh

    late, stopped, fresh = asyncio.run(main())
    assert late.reasons == ("analysis_timeout",)
    assert stopped is None  # the timed-out pool was dropped
    got = decide(_check({"applies": True}), late)
    assert (got.value, got.reason, got.detail) == (None, "check_error", "analysis_timeout")
    assert fresh.applied and "analysis_timeout" not in fresh.reasons


def test_a_worker_that_dies_is_reported_not_guessed(git_repo: MakeRepo) -> None:
    repo, patch = _patch(git_repo)

    async def main() -> object:
        worker.shutdown()
        await worker.analyze_in_worker(repo, patch, timeout_s=120)  # the pool has started
        pool = worker._pool
        processes = dict(getattr(pool, "_processes", None) or {})
        assert processes
        for process in processes.values():  # its worker dies (out of memory, a crash in C code)
            process.kill()
            process.join(30)
        return await worker.analyze_in_worker(repo, patch + "\n", timeout_s=120)

    result = asyncio.run(main())
    assert result.reasons == ("analysis_crashed",)
    got = decide(_check({"parses": True}), result)
    assert (got.value, got.reason, got.detail) == (None, "check_error", "analysis_crashed")


@pytest.mark.parametrize(
    ("unavailable", "retried"),
    [("fetch_failed", True), ("timeout", True), ("invalid_repo", False), (None, False)],
)
def test_a_tree_that_could_not_be_had_is_retried_on_resume_and_none_configured_is_not(
    unavailable: str | None, retried: bool
) -> None:
    rubric, _ = parse_rubric(RUBRIC, "rubrics.yaml")
    task = Task(
        instance_id="t-1",
        problem_statement="helper is wrong",
        candidates=[Candidate(id="a", patch="--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n")],
    )
    judged = judge_task(
        task,
        rubric,
        ChecksJudge(),
        repeats=1,
        concurrency=2,
        repository=RepoAnalyses(None, unavailable=unavailable),
    )
    rows = [v.to_row() for v in asyncio.run(judged)]
    assert {(r["reason"], r.get("detail")) for r in rows} == {("no_repository", unavailable)}
    assert all(transient_verdict(r) is retried for r in rows)


def test_a_call_whose_worker_was_stopped_for_another_patch_runs_again(git_repo: MakeRepo) -> None:
    repo, patch = _patch(git_repo)

    async def main() -> tuple[object, object]:
        worker.shutdown()
        # the patient call starts first, on the same pool the impatient one then times out on
        patient = asyncio.create_task(worker.analyze_in_worker(repo, patch, timeout_s=120))
        await asyncio.sleep(0)
        late = await worker.analyze_in_worker(repo, patch, timeout_s=0.001)
        return late, await patient

    late, patient = asyncio.run(main())
    assert late.reasons == ("analysis_timeout",)
    assert patient.applied and not {"analysis_crashed", "analysis_timeout"} & set(patient.reasons)


KILLED_PARENT = """
import asyncio, os, sys, time
from pathlib import Path
from agentic_rubrics.rubric.postimage import worker

if __name__ == "__main__":
    result = asyncio.run(worker.analyze_in_worker(Path(sys.argv[1]), sys.argv[2]))
    print(" ".join(str(p) for p in worker._pool._processes), flush=True)
    time.sleep(600)
"""


def test_workers_end_when_the_process_that_started_them_is_killed(
    git_repo: MakeRepo, tmp_path: Path
) -> None:
    import os
    import signal
    import subprocess
    import sys

    repo, patch = _patch(git_repo)
    script = tmp_path / "parent.py"
    script.write_text(KILLED_PARENT)
    with subprocess.Popen(
        [sys.executable, str(script), str(repo), patch], stdout=subprocess.PIPE, text=True
    ) as parent:
        assert parent.stdout is not None
        pids = [int(p) for p in parent.stdout.readline().split()]
        assert pids  # the analysis ran in a worker process
        parent.send_signal(signal.SIGKILL)  # no clean-up runs in the parent

    def alive(pid: int) -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        # a zombie is dead: its parent (now init, or this test's process) has not reaped it yet
        stat = Path(f"/proc/{pid}/stat")
        return stat.exists() and stat.read_text().split(") ")[-1][:1] != "Z"

    deadline = time.monotonic() + 60
    while any(alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not any(alive(p) for p in pids)
