"""What every sandbox configuration carries: whether it needs the task's repository on this machine,
whether it isolates commands, and how it opens a sandbox for one task (``open``).

A backend is one configuration class (a member of :data:`~agentic_rubrics.sandbox.SandboxConfig`,
chosen by its ``type``) and the module that implements its sandbox; nothing else names it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from pydantic import BaseModel, ConfigDict

from agentic_rubrics.exceptions import SandboxError

if TYPE_CHECKING:
    from agentic_rubrics.protocols import Sandbox

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Where:
    """One task's sandbox: where its repository is and who chooses the commands."""

    instance_id: str
    """The task (names containers and images, and the log lines)."""
    repo_path: Path | None
    """The task's repository on this machine (``None``: none at hand)."""
    base_commit: str = ""
    """The commit a ``swerex-docker`` image's repository must be at (unchecked when empty)."""
    shared_tree: bool = False
    """``repo_path`` is a read-only tree no one writes to (a cached export): bubblewrap lays its
    writable layer over it instead of copying it."""
    model_commands: bool = False
    """A model chooses the commands (the agent explorer): an unisolated sandbox needs
    ``allow_unisolated``."""
    allow_unisolated: bool = False
    """Let a model's commands run unisolated (``--unsafe-local-sandbox``)."""


class SandboxSpec(BaseModel):
    """A sandbox configuration: a pydantic model with a ``type`` discriminator and what it implies."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    needs_repo: ClassVar[bool] = True
    """Commands run on a copy (or an overlay) of the task's repository on this machine."""
    isolated: ClassVar[bool] = True
    """Commands cannot reach this machine's files, network or processes."""

    @property
    def kind(self) -> str:
        """The backend's name (its ``type``)."""
        return str(getattr(self, "type", type(self).__name__))

    async def open(self, where: Where) -> Sandbox:
        """The started sandbox for one task.

        Raises:
            SandboxError: it needs a repository and there is none, it would run a model's commands
                unisolated unasked, or it cannot be created.
        """
        if self.needs_repo and where.repo_path is None:
            raise SandboxError(f"the {self.kind} sandbox needs the task's repo_path")
        if not self.isolated and where.model_commands:
            if not where.allow_unisolated:
                raise SandboxError(
                    f"the {self.kind} sandbox is not isolated; pass --unsafe-local-sandbox to let a"
                    " model run commands in it"
                )
            log.warning(
                "UNISOLATED: %s: model-chosen commands run on this machine as this user (%s)",
                where.instance_id,
                self.kind,
            )
        return await self.start(where)

    async def start(self, where: Where) -> Sandbox:
        """Create and start the sandbox (``open`` has checked the repository and the isolation)."""
        raise NotImplementedError
