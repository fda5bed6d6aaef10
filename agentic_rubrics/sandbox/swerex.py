"""Sandboxes on SWE-ReX deployments: local, remote (a ``swerex-remote`` server), docker and modal.

Docker and modal run SWE-bench's per-instance images, with the repository at ``/testbed`` at the task's
base commit; a docker container is prepared before the agent's first command (network cut, history
removed, conda's ``testbed`` environment: :mod:`~agentic_rubrics.sandbox.swerex_docker`). ``swerex-local`` runs commands on this machine with no isolation (only a throwaway copy of
the repository), so model-chosen commands need an explicit flag there. SWE-ReX's local runtime blocks
the event loop, so its calls run in a thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import posixpath
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeVar

from pydantic import Field

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.protocols import CommandResult
from agentic_rubrics.sandbox.base import SandboxSpec, Where
from agentic_rubrics.sandbox.local import TRUNCATION_MARKER, WorkspaceCopy, clean_env

if TYPE_CHECKING:
    from agentic_rubrics.protocols import Sandbox

T = TypeVar("T")
log = logging.getLogger(__name__)
__all__ = [
    "SweRexConfig",
    "SweRexLocalConfig",
    "SweRexModalConfig",
    "SweRexRemoteConfig",
    "SweRexSandbox",
    "swebench_image_id",
]


def quiet_swerex() -> None:
    """Before SWE-ReX is first imported: it logs every step at DEBUG to the terminal unless told
    otherwise, and reads the setting when it is imported (nothing is changed when this module is)."""
    os.environ.setdefault("SWE_REX_LOG_STREAM_LEVEL", "WARNING")


def swebench_image_id(instance_id: str) -> str:
    """SWE-bench's image naming: ``django__django-11099`` -> ``django_1776_django-11099``."""
    return instance_id.replace("__", "_1776_").lower()


def _fill(template: str, instance_id: str) -> str:
    return template.format(instance_id=instance_id, swebench_id=swebench_image_id(instance_id))


class SweRexConfig(SandboxSpec):
    """A SWE-ReX deployment: what :class:`SweRexSandbox` asks of its configuration."""

    needs_repo: ClassVar[bool] = False
    blocks_loop: ClassVar[bool] = False
    """Its runtime blocks the event loop (SWE-ReX's local runtime): its calls run in a thread."""

    def deployment(self, instance_id: str) -> Any:
        """SWE-ReX's deployment for one task (not started)."""
        raise NotImplementedError

    def workdir(self, instance_id: str) -> str:
        """Where the repository is for the deployment's commands."""
        raise NotImplementedError

    def argv(self, command: str) -> str | list[str]:
        """How a shell command is run (a string: by the runtime's shell)."""
        return command

    async def prepare(self, deployment: Any, where: Where) -> dict[str, str] | None:
        """What is done after the deployment starts, before any command; the environment commands
        get (``None``: the runtime's own)."""
        return None

    async def stop(self, deployment: Any) -> None:
        """Stop the deployment; stopping a dead deployment must not hide the run's own error."""
        with contextlib.suppress(Exception):
            await deployment.stop()

    async def start(self, where: Where) -> Sandbox:
        """The SWE-ReX sandbox of one task, started (``open`` checked repository and isolation)."""
        sandbox = SweRexSandbox(
            self,
            instance_id=where.instance_id,
            repo_path=where.repo_path if self.needs_repo else None,
            base_commit=where.base_commit,
        )
        try:
            return await sandbox.start()
        except BaseException:
            await sandbox.close()
            raise


class SweRexLocalConfig(SweRexConfig):
    """SWE-ReX's local deployment on a throwaway copy of the task's repository (not isolated)."""

    needs_repo: ClassVar[bool] = True
    isolated: ClassVar[bool] = False
    blocks_loop: ClassVar[bool] = True
    type: Literal["swerex-local"] = "swerex-local"
    """Discriminator."""

    def deployment(self, instance_id: str) -> Any:
        """SWE-ReX's local deployment."""
        quiet_swerex()
        from swerex.deployment.config import LocalDeploymentConfig

        return LocalDeploymentConfig().get_deployment()

    async def stop(self, deployment: Any) -> None:
        """Stop the local runtime (in a thread: it blocks the loop)."""
        with contextlib.suppress(Exception):
            await asyncio.to_thread(lambda: asyncio.run(_awaited(deployment.stop)))


class SweRexRemoteConfig(SweRexConfig):
    """A running ``swerex-remote`` server that holds the repository."""

    type: Literal["swerex-remote"] = "swerex-remote"
    """Discriminator."""
    host: str = "http://127.0.0.1"
    """The server's URL without the port."""
    port: int = Field(gt=0, lt=65536)
    """The server's port."""
    auth_token_env: str = "SWEREX_AUTH_TOKEN"
    """Name of the environment variable holding the server's token (the token is never stored)."""
    repo_dir: str = "/testbed"
    """Where the repository is on the server (``{instance_id}`` is replaced)."""

    def deployment(self, instance_id: str) -> Any:
        """SWE-ReX's remote deployment, with the token read from the environment."""
        quiet_swerex()
        from swerex.deployment.config import RemoteDeploymentConfig

        token = os.environ.get(self.auth_token_env)
        if not token:
            raise SandboxError(f"set {self.auth_token_env} to the swerex-remote server's token")
        return RemoteDeploymentConfig(
            host=self.host, port=self.port, auth_token=token, timeout=30
        ).get_deployment()

    def workdir(self, instance_id: str) -> str:
        """``repo_dir`` for this task."""
        return _fill(self.repo_dir, instance_id)


class SweRexModalConfig(SweRexConfig):
    """A Modal sandbox per task from the same images."""

    type: Literal["swerex-modal"] = "swerex-modal"
    """Discriminator."""
    image: str = "swebench/sweb.eval.x86_64.{swebench_id}:latest"
    """Image name; ``{instance_id}`` and ``{swebench_id}`` are replaced."""
    repo_dir: str = "/testbed"
    """Where the repository is inside the image."""
    startup_timeout: float = Field(default=300.0, gt=0)
    """Seconds to wait for the sandbox's runtime."""

    def deployment(self, instance_id: str) -> Any:
        """SWE-ReX's Modal deployment of this task's image."""
        quiet_swerex()
        from swerex.deployment.config import ModalDeploymentConfig

        return ModalDeploymentConfig(
            image=_fill(self.image, instance_id), startup_timeout=self.startup_timeout
        ).get_deployment()

    def workdir(self, instance_id: str) -> str:
        """``repo_dir`` for this task."""
        return _fill(self.repo_dir, instance_id)


class SweRexSandbox:
    """The ``Sandbox`` protocol over a SWE-ReX deployment."""

    def __init__(
        self,
        config: SweRexConfig,
        *,
        instance_id: str,
        repo_path: Path | None,
        base_commit: str = "",
    ) -> None:
        self.config = config
        self.kind = config.kind
        self.isolated = config.isolated
        self._copy: WorkspaceCopy | None = None
        if config.needs_repo:
            if repo_path is None:
                raise SandboxError(f"{config.kind} needs the task's repo_path")
            self._copy = WorkspaceCopy(repo_path)
            self.workdir = str(self._copy.root)
        else:
            self.workdir = config.workdir(instance_id)
        self._instance_id = instance_id
        self._base_commit = base_commit
        self._deployment: Any = None
        self._env: dict[str, str] | None = clean_env(Path("/tmp"))

    async def _call(self, fn: Callable[[], Awaitable[T]]) -> T:
        if self.config.blocks_loop:
            # the local runtime runs subprocess.run inside its coroutines: keep it off our loop
            return await asyncio.to_thread(lambda: asyncio.run(_awaited(fn)))
        return await fn()

    async def start(self) -> SweRexSandbox:
        """Start the deployment (pull and run a container, connect to a server ...), then what its
        configuration does before any command (a docker container's network, history and conda:
        :func:`~agentic_rubrics.sandbox.swerex_docker.prepare_container`)."""
        try:
            self._deployment = self.config.deployment(self._instance_id)
            await self._call(self._deployment.start)
        except SandboxError:
            raise
        except Exception as exc:
            raise SandboxError(f"{self.kind}: cannot start the deployment: {exc}") from exc
        where = Where(self._instance_id, None, base_commit=self._base_commit)
        env = await self.config.prepare(self._deployment, where)
        if env is not None:
            self._env = env
        return self

    async def run(
        self, command: str, *, timeout: float = 30.0, max_output: int = 20_000
    ) -> CommandResult:
        """Run a shell command in the repository folder of the deployment."""
        from swerex.exceptions import CommandTimeoutError
        from swerex.runtime.abstract import Command

        # SWE-bench's images have dash as /bin/sh; the agent's tool is bash
        argv = self.config.argv(command)
        request = Command(
            command=argv,
            shell=isinstance(argv, str),
            timeout=timeout,
            cwd=self.workdir,
            merge_output_streams=True,
            env=self._env,
        )
        try:
            response = await self._call(lambda: self._deployment.runtime.execute(request))
        except CommandTimeoutError:
            return CommandResult(exit_code=None, output="", timed_out=True)
        except Exception as exc:
            raise SandboxError(f"{self.kind}: command could not run: {exc}") from exc
        output = response.stdout + (response.stderr or "")
        truncated = len(output) > max_output
        if truncated:
            output = output[:max_output] + TRUNCATION_MARKER.format(limit=max_output)
        return CommandResult(exit_code=response.exit_code, output=output, truncated=truncated)

    async def read_file(self, path: str, *, max_bytes: int = 200_000) -> str:
        """Read a file of the repository (relative, or absolute inside the repository folder)."""
        from swerex.runtime.abstract import ReadFileRequest

        full = posixpath.normpath(posixpath.join(self.workdir, path))
        if full != self.workdir and not full.startswith(self.workdir.rstrip("/") + "/"):
            raise SandboxError(f"path {path!r} is outside the repository")
        request = ReadFileRequest(path=full, errors="replace")
        try:
            response = await self._call(lambda: self._deployment.runtime.read_file(request))
        except Exception as exc:
            raise SandboxError(f"cannot read {path!r}: {exc}") from exc
        return str(response.content)[:max_bytes]

    async def write_file(self, path: str, text: str) -> None:
        """Write a text file at an absolute path of the deployment (a test run's staging)."""
        from swerex.runtime.abstract import WriteFileRequest

        request = WriteFileRequest(path=path, content=text)
        try:
            await self._call(lambda: self._deployment.runtime.write_file(request))
        except Exception as exc:
            raise SandboxError(f"{self.kind}: cannot write {path}: {exc}") from exc

    async def close(self) -> None:
        """Stop the deployment and delete any local copy."""
        if self._deployment is not None:
            await self.config.stop(self._deployment)
            # SWE-ReX stops a deployment again when it is garbage-collected, and a stopped remote
            # deployment raises on a second stop: make that second stop a no-op
            self._deployment.stop = _stopped
            self._deployment = None
        if self._copy is not None:
            await self._copy.close()


async def _stopped() -> None:
    return None


async def _awaited(fn: Callable[[], Awaitable[T]]) -> T:
    return await fn()
