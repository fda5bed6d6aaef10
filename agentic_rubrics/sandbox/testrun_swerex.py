"""The same test run as :func:`~agentic_rubrics.sandbox.testrun.run_tests`, on a SWE-ReX deployment.

Any :class:`~agentic_rubrics.sandbox.swerex.SweRexConfig` serves: ``swerex-docker`` runs SWE-bench's
per-instance image (``swebench/sweb.eval.x86_64.<id with __ as _1776_>:latest``, the repository at
``/testbed``, the harness's ``testbed`` conda environment activated once, the network cut), and
``swerex-remote``, ``swerex-modal`` or ``swerex-local`` whatever their configuration says. One
deployment per run: the candidate is applied to the deployment's own tree, which is thrown away with it
(a container per candidate, as the harness does). The patch, the test patch, the path lists and the
test files are written through the runtime (``write_file``) into a staging folder, the script is the
bubblewrap run's (:mod:`~agentic_rubrics.sandbox.testscript`: the candidate applied like the harness,
its test infrastructure put back, then the tests added), and its output is read the same way.

The limits that hold are the deployment's: the timeout kills the command (SWE-ReX's), and memory,
processes and network are the container's (``docker_args``, ``no_network``); ``swerex-local`` isolates
nothing (a throwaway copy of the tree on this machine).
"""

from __future__ import annotations

import contextlib
import posixpath
import secrets
import shlex
import time

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox.base import Where
from agentic_rubrics.sandbox.swerex import SweRexConfig, SweRexSandbox
from agentic_rubrics.sandbox.testrun import (
    TEST_DIR,
    ExecLimits,
    ExecRun,
    RunCommand,
    outcome,
    refused,
    script,
)
from agentic_rubrics.sandbox.testscript import plan, staged, tree_reader

STAGE_ROOT = "/tmp"
"""Where a run's staging folder is made in the deployment."""


async def run_tests_swerex(
    config: SweRexConfig,
    where: Where,
    patch: str,
    tests: dict[str, bytes],
    *,
    python: str = "python",
    limits: ExecLimits | None = None,
    test_patch: str = "",
    command: RunCommand | None = None,
) -> ExecRun:
    """Apply ``patch`` (then ``test_patch``) in a new deployment of ``config`` for ``where`` and run
    ``tests`` there with ``python`` (or ``command``); the deployment is stopped after.

    Raises:
        SandboxError: the deployment cannot start, or the staged files cannot be written.
    """
    limits = limits or ExecLimits()
    read_base = tree_reader(where.repo_path) if where.repo_path is not None else None
    run_plan = plan(patch, graded=bool(tests), test_patch=test_patch, read_base=read_base)
    if (refusal := refused(run_plan)) is not None:
        return refusal
    start = time.perf_counter()
    sandbox = await config.open(where)
    assert isinstance(sandbox, SweRexSandbox)
    stage = posixpath.join(STAGE_ROOT, f"agentic-rubrics-stage-{secrets.token_hex(8)}")
    try:
        await _stage(sandbox, stage, staged(patch, test_patch, run_plan), tests)
        prepared = time.perf_counter()
        text = script(
            tests,
            python,
            limits,
            command,
            stage=stage,
            workdir=sandbox.workdir,
            log=f"{stage}/tests.log",
            keep=f"{stage}/keep",
        )
        done = await sandbox.run(text, timeout=limits.timeout_s, max_output=400_000)
        ran = time.perf_counter()
    finally:
        await _unstage(sandbox, stage)
        await sandbox.close()
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


async def _unstage(sandbox: SweRexSandbox, stage: str) -> None:
    """Remove the staging folder: a deployment that outlives the run (``swerex-local`` on this
    host's ``/tmp``, a ``swerex-remote`` server) would keep it. Best effort: a deployment that cannot
    run it any more is being thrown away."""
    with contextlib.suppress(SandboxError):
        await sandbox.run(f"rm -rf -- {shlex.quote(stage)}", timeout=60.0)


async def _stage(
    sandbox: SweRexSandbox, stage: str, files: dict[str, bytes], tests: dict[str, bytes]
) -> None:
    """The staged files and the tests written through the runtime."""
    for name, data in files.items():
        await sandbox.write_file(f"{stage}/{name}", data.decode("utf-8", "surrogateescape"))
    for name, data in tests.items():
        if "/" in name or name.startswith("."):
            raise SandboxError(f"test file name {name!r} is not a plain file name")
        await sandbox.write_file(f"{stage}/tests/{name}", data.decode("utf-8", "surrogateescape"))


__all__ = ["STAGE_ROOT", "TEST_DIR", "run_tests_swerex"]
