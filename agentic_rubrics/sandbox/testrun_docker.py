"""A task's candidates' tests in docker containers: one prepared image per task, each candidate in a
container of its own from it, K at a time where cores allow.

The task's image is prepared once (:func:`prepare_task`): a container started from it, its history
cleaned (``clean_history``), the environment read (conda's ``testbed`` activated, or the image's own),
then committed as a labelled image of this run. Each candidate then gets a new container from that
image (nothing one candidate's tests write is ever seen by another's), its network cut when
``no_network``, the patch, test patch, path lists and test files written through the runtime, and the
shared test script of :func:`~agentic_rubrics.sandbox.testrun.script` run as it is (the candidate
applied like the harness, its test infrastructure put back, then the tests added: see
:mod:`~agentic_rubrics.sandbox.testscript`).

Limits are the container's: ``memory_mib`` (swap included), ``pids_limit``, ``cpus``, and the
timeout, past which the container is killed (every process in it; SWE-ReX's own timeout stops only the
command's shell). A run that cannot give outcomes is an :class:`~agentic_rubrics.sandbox.testrun.ExecRun`
with a reason — ``timeout``, ``oom`` (the kernel killed a process at the memory limit),
``unparsable_output``, or the :class:`~agentic_rubrics.sandbox.docker_cli.DockerError` code
(``docker_unavailable``, ``image_missing``, ``container_failed``, ``runtime_lost`` …) — never an
exception: the caller goes on with the next candidate.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import posixpath
import secrets
import time
from dataclasses import dataclass

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.protocols import CommandResult
from agentic_rubrics.sandbox.base import Where
from agentic_rubrics.sandbox.docker_cli import DockerError, docker, label_args, track, untrack
from agentic_rubrics.sandbox.docker_container import ContainerDeployment
from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig, prepare_container
from agentic_rubrics.sandbox.testrun import (
    ExecLimits,
    ExecRun,
    RunCommand,
    outcome,
    refused,
    script,
)
from agentic_rubrics.sandbox.testscript import plan, staged, tree_reader
from agentic_rubrics.test_infra import GRADED_FOLDER

STAGE_ROOT = "/tmp"
PREPARED_LABEL = "agentic_rubrics.prepared"
"""The label of a task's prepared image (removed with the task)."""
_OOM = (
    "grep -h '^oom_kill ' /sys/fs/cgroup/memory/memory.oom_control /sys/fs/cgroup/memory.events"
    " 2>/dev/null | head -n 1 | cut -d' ' -f2"
)


@dataclass(frozen=True)
class PreparedTask:
    """A task's image, prepared once for all its candidates."""

    image: str
    """The committed image (history cleaned)."""
    env: dict[str, str]
    """The environment every command gets."""
    seconds: float
    """What preparing took."""


async def prepare_task(config: SweRexDockerConfig, where: Where) -> PreparedTask:
    """Start the task's image once, clean its history and read its environment, and commit it.

    Raises:
        SandboxError: the image, the container or a step failed (a DockerError says which).
    """
    start = time.perf_counter()
    setup = config.model_copy(update={"no_network": False, "network": "internal"})
    deployment = setup.deployment(where.instance_id)
    try:
        await deployment.start()
        env, _ = await prepare_container(
            setup, deployment, instance_id=where.instance_id, base_commit=where.base_commit
        )
        image = f"agentic-rubrics/prepared:{deployment.container_name.lower()}"
        changes = [f"LABEL {PREPARED_LABEL}=1", *[f"LABEL {a}" for a in label_args()[1::2]]]
        args = ["commit", *[x for c in changes for x in ("--change", c)]]
        await asyncio.to_thread(docker, [*args, deployment.container_name, image], timeout=600)
        track(image=image)
    finally:
        await deployment.stop()
    return PreparedTask(image, env, round(time.perf_counter() - start, 3))


async def remove_prepared(task: PreparedTask) -> None:
    """Remove a task's prepared image (never raises: a left image is swept later)."""
    with contextlib.suppress(DockerError):
        await asyncio.to_thread(docker, ["rmi", "-f", task.image], timeout=120)
        untrack(image=task.image)


async def run_candidates_docker(
    config: SweRexDockerConfig,
    where: Where,
    patches: dict[str, str],
    tests: dict[str, bytes],
    *,
    python: str = "python",
    limits: ExecLimits | None = None,
    test_patch: str = "",
    command: RunCommand | None = None,
    parallel: int | None = None,
    folder: str = GRADED_FOLDER,
) -> dict[str, ExecRun]:
    """Each candidate's run (``patches``: candidate id -> patch), in containers of their own from one
    prepared image, ``parallel`` at a time (default: this machine's cores). Never raises for a
    docker or runtime failure: the runs say why (module docstring)."""
    limits = limits or ExecLimits()
    try:
        task = await prepare_task(config, where)
    except SandboxError as exc:
        return {cid: failed_run(exc) for cid in patches}
    gate = asyncio.Semaphore(parallel or os.cpu_count() or 1)

    async def one(patch: str) -> ExecRun:
        async with gate:
            return await run_in_container(
                config, where, task, patch, tests, python, limits, test_patch, command, folder
            )

    try:
        runs = await asyncio.gather(*(one(p) for p in patches.values()))
    finally:
        await remove_prepared(task)
    return dict(zip(patches, runs, strict=True))


def failed_run(exc: SandboxError, seconds: float = 0.0) -> ExecRun:
    """The run of a candidate whose container failed."""
    reason = exc.reason if isinstance(exc, DockerError) else "sandbox_error"
    return ExecRun(applied=None, reason=reason, excerpt=str(exc)[-1500:], seconds=seconds)


async def run_in_container(
    config: SweRexDockerConfig,
    where: Where,
    task: PreparedTask,
    patch: str,
    tests: dict[str, bytes],
    python: str,
    limits: ExecLimits,
    test_patch: str,
    command: RunCommand | None,
    folder: str = GRADED_FOLDER,
) -> ExecRun:
    """One candidate's run in a new container of the prepared image (never raises SandboxError;
    ``folder``: where the test files go in the repository, :mod:`~agentic_rubrics.sandbox.testlayout`)."""
    from agentic_rubrics.sandbox.swerex_docker import cut_network

    read_base = tree_reader(where.repo_path) if where.repo_path is not None else None
    run_plan = plan(patch, graded=bool(tests), test_patch=test_patch, read_base=read_base)
    if (refusal := refused(run_plan)) is not None:
        return refusal
    start = time.perf_counter()
    deployment = ContainerDeployment(config.container_spec(where.instance_id, task.image))
    timings: dict[str, float] = {}
    try:
        await deployment.start()
        timings["start_ms"] = round((time.perf_counter() - start) * 1000, 2)
        if config.no_network:
            await cut_network(config, deployment)
        stage = posixpath.join(STAGE_ROOT, f"agentic-rubrics-stage-{secrets.token_hex(8)}")
        await _stage(deployment, stage, staged(patch, test_patch, run_plan), tests)
        prepared = time.perf_counter()
        text = script(
            tests,
            python,
            limits,
            command,
            stage=stage,
            workdir=config.repo_dir,
            log=f"{stage}/tests.log",
            keep=f"{stage}/keep",
            folder=folder,
        )
        done = await _execute(deployment, text, config.repo_dir, task.env, limits.timeout_s)
        ran = time.perf_counter()
        oom = not done.timed_out and await _oom_killed(deployment)
    except SandboxError as exc:
        await deployment.stop()
        return failed_run(exc, round(time.perf_counter() - start, 4))
    await deployment.stop()
    run = outcome(done, command)
    run.infra = list(run_plan.infra)
    if oom:
        run.reason = "oom"
    elif run.reason == "sandbox_error":  # the script never said how the tests ended
        run.reason = "unparsable_output"
    return _timed(run, timings, start, prepared, ran)


def _timed(run: ExecRun, timings: dict[str, float], *marks: float) -> ExecRun:
    """``run`` with its wall time and each phase's (``marks``: started, prepared, ran)."""
    start, prepared, ran = marks
    end = time.perf_counter()
    run.seconds = round(end - start, 4)
    run.timings = timings | {
        "prepare_ms": round((prepared - start) * 1000, 2),
        "run_ms": round((ran - prepared) * 1000, 2),
        "close_ms": round((end - ran) * 1000, 2),
    }
    return run


async def _stage(
    deployment: ContainerDeployment,
    stage: str,
    files_staged: dict[str, bytes],
    tests: dict[str, bytes],
) -> None:
    from swerex.runtime.abstract import WriteFileRequest

    files = {
        f"{stage}/{name}": data.decode("utf-8", "surrogateescape")
        for name, data in files_staged.items()
    }
    for name, data in tests.items():
        if "/" in name or name.startswith("."):
            raise SandboxError(f"test file name {name!r} is not a plain file name")
        files[f"{stage}/tests/{name}"] = data.decode("utf-8", "surrogateescape")
    for path, text in files.items():
        try:
            await asyncio.wait_for(
                deployment.runtime.write_file(WriteFileRequest(path=path, content=text)), 60
            )
        except Exception as exc:
            raise DockerError(f"cannot write {path}: {exc!r}", reason="runtime_lost") from None


async def _execute(
    deployment: ContainerDeployment, text: str, cwd: str, env: dict[str, str], timeout: float
) -> CommandResult:
    """The script's run; past ``timeout`` the container is killed (every process in it)."""
    from swerex.runtime.abstract import Command

    request = Command(
        command=["bash", "-c", text],
        shell=False,
        timeout=timeout,
        cwd=cwd,
        env=env,
        merge_output_streams=True,
    )
    try:
        response = await asyncio.wait_for(deployment.runtime.execute(request), timeout + 2)
    except TimeoutError:
        await asyncio.to_thread(deployment.kill)
        return CommandResult(exit_code=None, output="", timed_out=True)
    except Exception as exc:
        if type(exc).__name__ == "CommandTimeoutError":
            await asyncio.to_thread(deployment.kill)
            return CommandResult(exit_code=None, output="", timed_out=True)
        state = await asyncio.to_thread(deployment.state)
        reason = "oom" if state.get("OOMKilled") else "runtime_lost"
        raise DockerError(f"the runtime stopped answering: {exc!r}", reason=reason) from None
    output = response.stdout + (response.stderr or "")
    return CommandResult(exit_code=response.exit_code, output=output[:400_000])


async def _oom_killed(deployment: ContainerDeployment) -> bool:
    """Whether the kernel killed a process of the container at its memory limit."""
    from swerex.runtime.abstract import Command

    request = Command(command=["sh", "-c", _OOM], shell=False, timeout=30)
    try:
        response = await asyncio.wait_for(deployment.runtime.execute(request), 40)
    except Exception:
        return bool((await asyncio.to_thread(deployment.state)).get("OOMKilled"))
    value = response.stdout.strip()
    return value.isdigit() and int(value) > 0


__all__ = [
    "PreparedTask",
    "failed_run",
    "prepare_task",
    "remove_prepared",
    "run_candidates_docker",
    "run_in_container",
]
