"""Sandboxes: where exploration commands run. Each implements the ``Sandbox`` protocol.

- ``bubblewrap``: isolated (no network, read-only system, no capability, an unprivileged uid, writes
  capped in a tmpfs overlay over a throwaway copy at /workspace, a process limit); the default wherever
  it works.
- ``local-copy``: a throwaway copy, not isolated; fine for the static explorer's own commands.
- ``swerex-local`` / ``swerex-remote`` / ``swerex-docker`` / ``swerex-modal``: SWE-ReX deployments.

``auto`` picks bubblewrap when it works, else falls back to ``local-copy`` for the static explorer.
Model-chosen commands never run unisolated without ``allow_unisolated`` (``--unsafe-local-sandbox``),
and every such run says so.

Each configuration (a :class:`~agentic_rubrics.sandbox.base.SandboxSpec`) says whether it needs the
task's repository on this machine (``needs_repo``) and isolates commands (``isolated``), and opens its
sandbox (``open``): a new backend is its configuration class, added to :data:`SandboxConfig`, and its
module.
"""

from __future__ import annotations

import asyncio
import functools
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, ClassVar, Literal

from pydantic import Field

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox.base import SandboxSpec, Where
from agentic_rubrics.sandbox.local import LocalCopySandbox, WorkspaceCopy
from agentic_rubrics.sandbox.swerex import (
    SweRexLocalConfig,
    SweRexModalConfig,
    SweRexRemoteConfig,
)
from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig
from agentic_rubrics.setting_effects import SPEED

if TYPE_CHECKING:
    from agentic_rubrics.protocols import Sandbox

__all__ = [
    "AutoConfig",
    "BubblewrapConfig",
    "LocalCopyConfig",
    "LocalCopySandbox",
    "SandboxConfig",
    "SandboxSpec",
    "Where",
    "WorkspaceCopy",
    "open_sandbox",
]


class _Limits(SandboxSpec):
    """What a bubblewrap sandbox lets commands use (hard limits, enforced by the kernel)."""

    max_write_mib: int = Field(default=256, ge=1)
    """MiB that commands may write in all, workspace and home together (a tmpfs of that size)."""
    max_tmp_mib: int = Field(default=256, ge=1)
    """MiB of each command's private ``/tmp`` (a tmpfs of that size, emptied after the command)."""
    max_processes: int = Field(default=256, ge=8)
    """Processes and threads one command may have at once (a fork bomb stops there)."""
    max_memory_mib: Annotated[int, SPEED] = Field(default=2048, ge=64)
    """MiB of address space each process of a command may have (``ulimit -v``); an allocation past it
    fails. Address space, not memory used; with 64 cores reported: numpy 220 MiB, scikit-learn 560 MiB
    (their thread pools held to four threads, ``bwrap.POOL_THREADS``: else 2.6 and 5.2 GiB), git grep
    over sympy 1.5 GiB (64 threads), node 711 MiB; a JVM reserves a quarter of the machine's memory
    plus 1 GiB of class space: ``java`` needs 4096 here (24 GiB machine), or ``-Xmx512m
    -XX:CompressedClassSpaceSize=128m``. Per process: a command may hold up to ``max_processes``
    times it. Not hashed (like a timeout, it changes only what a runaway command gets): earlier run
    folders resume under it."""


class BubblewrapConfig(_Limits):
    """The isolated local sandbox (fails when bubblewrap cannot create namespaces)."""

    type: Literal["bubblewrap"] = "bubblewrap"
    """Discriminator."""

    async def start(self, where: Where) -> Sandbox:
        """A bubblewrap sandbox over the task's repository (copied, or overlaid when shared)."""
        from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox

        assert where.repo_path is not None  # open() checked needs_repo
        make = functools.partial(
            BubblewrapSandbox,
            where.repo_path,
            shared=where.shared_tree,
            max_write_bytes=self.max_write_mib << 20,
            max_tmp_bytes=self.max_tmp_mib << 20,
            max_processes=self.max_processes,
            max_memory_bytes=self.max_memory_mib << 20,
        )
        return await asyncio.to_thread(make)


class LocalCopyConfig(SandboxSpec):
    """A throwaway copy with no isolation."""

    isolated: ClassVar[bool] = False
    type: Literal["local-copy"] = "local-copy"
    """Discriminator."""

    async def start(self, where: Where) -> Sandbox:
        """A throwaway copy of the task's repository."""
        assert where.repo_path is not None  # open() checked needs_repo
        return await asyncio.to_thread(LocalCopySandbox, where.repo_path)


class AutoConfig(_Limits):
    """bubblewrap where it works; otherwise local-copy for the static explorer only."""

    type: Literal["auto"] = "auto"
    """Discriminator."""

    async def open(self, where: Where) -> Sandbox:
        """The bubblewrap sandbox where bubblewrap works; else a local copy, unless a model chooses
        the commands and unisolated runs were not allowed."""
        from agentic_rubrics.sandbox.bwrap import bwrap_problem

        if where.repo_path is None:
            raise SandboxError(f"the {self.kind} sandbox needs the task's repo_path")
        problem = await asyncio.to_thread(bwrap_problem)
        if problem is None:
            return await BubblewrapConfig(**self.model_dump(exclude={"type"})).open(where)
        if where.model_commands and not where.allow_unisolated:
            raise SandboxError(
                f"no isolated sandbox: {problem}. Model-chosen commands would run unisolated on this"
                " machine; pass --unsafe-local-sandbox to allow it, or choose a swerex deployment"
            )
        return await LocalCopyConfig().open(where)


SandboxConfig = Annotated[
    AutoConfig
    | BubblewrapConfig
    | LocalCopyConfig
    | SweRexLocalConfig
    | SweRexRemoteConfig
    | SweRexDockerConfig
    | SweRexModalConfig,
    Field(discriminator="type"),
]
"""Where exploration commands run; chosen by ``type``."""


async def open_sandbox(
    config: SandboxSpec,
    *,
    instance_id: str,
    repo_path: str | None,
    model_commands: bool,
    allow_unisolated: bool = False,
    shared_tree: bool = False,
    base_commit: str = "",
) -> Sandbox:
    """``config.open`` for one task (see :class:`~agentic_rubrics.sandbox.base.Where`).

    Raises:
        SandboxError: it cannot be created, or it would run model commands unisolated unasked.
    """
    where = Where(
        instance_id=instance_id,
        repo_path=Path(repo_path) if repo_path else None,
        base_commit=base_commit,
        shared_tree=shared_tree,
        model_commands=model_commands,
        allow_unisolated=allow_unisolated,
    )
    return await config.open(where)
