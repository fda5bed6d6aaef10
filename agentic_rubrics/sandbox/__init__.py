"""Sandboxes: where exploration commands run. Each implements the ``Sandbox`` protocol.

- ``bubblewrap``: isolated (no network, read-only system, no capability, an unprivileged uid, writes
  capped in a tmpfs overlay over a throwaway copy at /workspace, a process limit); the default wherever
  it works.
- ``local-copy``: a throwaway copy, not isolated; fine for the static explorer's own commands.
- ``swerex-local`` / ``swerex-remote`` / ``swerex-docker`` / ``swerex-modal``: SWE-ReX deployments.

``auto`` picks bubblewrap when it works, else falls back to ``local-copy`` for the static explorer.
Model-chosen commands never run unisolated without ``allow_unisolated`` (``--unsafe-local-sandbox``),
and every such run says so.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox.local import LocalCopySandbox, WorkspaceCopy
from agentic_rubrics.sandbox.swerex import (
    SweRexDockerConfig,
    SweRexLocalConfig,
    SweRexModalConfig,
    SweRexRemoteConfig,
)

__all__ = [
    "BubblewrapConfig",
    "LocalCopyConfig",
    "LocalCopySandbox",
    "SandboxConfig",
    "WorkspaceCopy",
    "open_sandbox",
]

log = logging.getLogger(__name__)


class _Limits(BaseModel):
    """What a bubblewrap sandbox lets commands use (hard limits, enforced by the kernel)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    max_write_mib: int = Field(default=256, ge=1)
    """MiB that commands may write in all, workspace and home together (a tmpfs of that size)."""
    max_tmp_mib: int = Field(default=256, ge=1)
    """MiB of each command's private ``/tmp`` (a tmpfs of that size, emptied after the command)."""
    max_processes: int = Field(default=256, ge=8)
    """Processes and threads one command may have at once (a fork bomb stops there)."""

    def limits(self) -> dict[str, int]:
        """The keyword arguments of :class:`~agentic_rubrics.sandbox.bwrap.BubblewrapSandbox`."""
        return {
            "max_write_bytes": self.max_write_mib << 20,
            "max_tmp_bytes": self.max_tmp_mib << 20,
            "max_processes": self.max_processes,
        }


class AutoConfig(_Limits):
    """bubblewrap where it works; otherwise local-copy for the static explorer only."""

    type: Literal["auto"] = "auto"
    """Discriminator."""


class BubblewrapConfig(_Limits):
    """The isolated local sandbox (fails when bubblewrap cannot create namespaces)."""

    type: Literal["bubblewrap"] = "bubblewrap"
    """Discriminator."""


class LocalCopyConfig(BaseModel):
    """A throwaway copy with no isolation."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    type: Literal["local-copy"] = "local-copy"
    """Discriminator."""


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

_NEEDS_REPO = ("auto", "bubblewrap", "local-copy", "swerex-local")


async def open_sandbox(
    config: Any,
    *,
    instance_id: str,
    repo_path: str | None,
    model_commands: bool,
    allow_unisolated: bool = False,
    shared_tree: bool = False,
    base_commit: str = "",
) -> Any:
    """Create and start the sandbox a configuration names, for one task.

    ``shared_tree``: ``repo_path`` is a read-only tree no one writes to (a cached export): the
    bubblewrap sandbox lays its writable layer over it instead of copying it.

    ``model_commands``: a model chooses the commands (the agent explorer), so an unisolated sandbox
    needs ``allow_unisolated``. ``base_commit``: the commit a ``swerex-docker`` image's repository
    must be at (unchecked when empty).

    Raises:
        SandboxError: it cannot be created, or it would run model commands unisolated unasked.
    """
    import asyncio
    import functools

    from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox, bwrap_problem

    kind = config.type
    if kind in _NEEDS_REPO and not repo_path:
        raise SandboxError(f"the {kind} sandbox needs the task's repo_path")
    if kind == "auto":
        problem = await asyncio.to_thread(bwrap_problem)
        if problem is None:
            kind = "bubblewrap"
        elif model_commands and not allow_unisolated:
            raise SandboxError(
                f"no isolated sandbox: {problem}. Model-chosen commands would run unisolated on this"
                " machine; pass --unsafe-local-sandbox to allow it, or choose a swerex deployment"
            )
        else:
            kind = "local-copy"
    unisolated = kind in ("local-copy", "swerex-local")
    if unisolated and model_commands:
        if not allow_unisolated:
            raise SandboxError(
                f"the {kind} sandbox is not isolated; pass --unsafe-local-sandbox to let a model run"
                " commands in it"
            )
        log.warning(
            "UNISOLATED: %s: model-chosen commands run on this machine as this user (%s)",
            instance_id,
            kind,
        )
    if kind == "bubblewrap":
        assert repo_path is not None
        return await asyncio.to_thread(
            functools.partial(
                BubblewrapSandbox, Path(repo_path), shared=shared_tree, **config.limits()
            )
        )
    if kind == "local-copy":
        assert repo_path is not None
        return await asyncio.to_thread(LocalCopySandbox, Path(repo_path))
    from agentic_rubrics.sandbox.swerex import SweRexSandbox

    sandbox = SweRexSandbox(
        config,
        instance_id=instance_id,
        repo_path=Path(repo_path) if repo_path else None,
        base_commit=base_commit,
    )
    try:
        return await sandbox.start()
    except BaseException:
        await sandbox.close()
        raise
