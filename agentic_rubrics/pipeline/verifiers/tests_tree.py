"""Where a task's tests run for the ``tests`` verifier: its tree copied once with the Python its spec
builds (bubblewrap), or its image prepared once in docker (``tests.docker``), shared by the script's
validation and every candidate's run."""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import RepoError, SandboxError
from agentic_rubrics.pipeline.context import SANDBOX_SLOT, RunContext
from agentic_rubrics.pipeline.verifiers.tests_grading import (
    Runner,
    TaskContainers,
    docker_runner_for,
    runner_for,
)
from agentic_rubrics.sandbox.base import Where
from agentic_rubrics.sandbox.built_files import add_built_files
from agentic_rubrics.sandbox.testenv import EnvBuildError
from agentic_rubrics.sandbox.testlayout import layout_for
from agentic_rubrics.types import Task

log = logging.getLogger(__name__)


def interpreter_for(task: Task, ctx: RunContext, tree: Path, config: Any) -> Any:
    """The Python the task's tests run with: the venv of the first spec whose key (``owner/name@
    version``, ``owner/name``, ``*``) matches the task, built once per (repository, version) and
    cached; else ``tests.python`` as it is."""
    from agentic_rubrics.sandbox.testenv import build_env, named_interpreter

    specs = config.env_specs or {}
    for key in (f"{task.repo}@{task.version}", task.repo, "*"):
        if key in specs:
            if config.env_cache is not None:
                cache = Path(config.env_cache)
            else:
                from agentic_rubrics.datasets.repos_config import default_cache_dir

                cache = Path(ctx.config.repos.cache_dir or default_cache_dir()).parent / "envs"
            repo = task.repo or task.instance_id
            return build_env(
                specs[key], tree, cache_dir=cache, repo=repo, repo_version=task.version
            )
    return named_interpreter(config.python)


class TaskTree:
    """The task's tree copied once (:class:`~agentic_rubrics.sandbox.testrun.PreparedTree`), or its
    image prepared once in docker (``tests.docker``), shared by the script's validation and every
    candidate's run; removed when the task's verifier is done."""

    def __init__(self, task: Task, ctx: RunContext, config: Any) -> None:
        self.task, self.ctx, self.config = task, ctx, config
        self.containers: TaskContainers | None = None
        self.prepared: Any = None
        self.problem: str | None = None
        self.interpreter: Any = None
        self.approximate: dict[str, Any] | None = None
        """``approximate.json`` of a tree that is a release sdist standing in for the base commit."""

    async def env(self) -> Any:
        """The task's :class:`~agentic_rubrics.sandbox.testenv.Interpreter` (its spec's venv, built
        or cached, or the named Python), or ``None`` with :attr:`problem` (``env_build_failed``)."""
        path = await self.path()
        if path is None or self.interpreter is not None or self.problem is not None:
            return self.interpreter
        try:
            self.interpreter = await asyncio.to_thread(
                interpreter_for, self.task, self.ctx, path, self.config
            )
            await asyncio.to_thread(add_built_files, self.interpreter.tree_files, path)
        except EnvBuildError as exc:
            log.warning("%s: test environment: %s", self.task.instance_id, str(exc)[-300:])
            self.problem = "env_build_failed"
        except SandboxError as exc:
            log.warning("%s: test interpreter: %s", self.task.instance_id, str(exc)[-300:])
            self.problem = "interpreter_unusable"
        return self.interpreter

    async def path(self) -> Path | None:
        from agentic_rubrics.sandbox.testrun import PreparedTree

        if self.prepared is None and self.problem is None:
            try:
                tree = await asyncio.to_thread(self.ctx.repository, self.task)
            except RepoError as exc:
                self.problem = f"no_repository:{exc.reason}"
                return None
            if tree is None:
                self.problem = "no_repository"
                return None
            from agentic_rubrics.datasets.sdist_trees import approximate_source

            self.approximate = approximate_source(tree.path)
            self.prepared = await asyncio.to_thread(PreparedTree, tree.path)
        return None if self.prepared is None else Path(self.prepared.path)

    async def runner(self, files: dict[str, str]) -> Runner | None:
        """The runs of ``files`` where the task's tests run (``None`` with :attr:`problem`)."""
        slot = lambda: self.ctx.limiter.slot(SANDBOX_SLOT)  # noqa: E731
        own, layout = self.config, layout_for(self.task.repo)
        if (docker := own.docker_config()) is not None:
            if self.containers is None:
                base = await self.base_tree()
                where = Where(self.task.instance_id, base, base_commit=self.task.base_commit)
                self.containers = TaskContainers(docker, where)
            return docker_runner_for(self.containers, files, own, slot, layout)
        path = await self.path()
        interpreter = await self.env()
        if path is None or interpreter is None:
            return None
        return runner_for(path, files, own, slot, interpreter, layout)

    async def base_tree(self) -> Path | None:
        """The task's tree on this machine when one is to be had, else ``None`` (never a reason to
        fail): a run in docker reads a config file's base text there to tell which section a
        candidate's hunk edits, as a run in bubblewrap does."""
        try:
            tree = await asyncio.to_thread(self.ctx.repository, self.task)
        except RepoError:
            return None
        return None if tree is None else tree.path

    async def close(self) -> None:
        if self.containers is not None:
            await self.containers.close()
        if self.prepared is not None:
            await asyncio.to_thread(self.prepared.close)
