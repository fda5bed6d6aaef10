"""The protocols the stages implement and take: a Model, a Sandbox, a Judge.

The ground floor: every stage may import it, it imports only the vocabulary (``types``, ``payloads``).
The package root hands these names on (``agentic_rubrics.Model``) as part of the public face.
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

from agentic_rubrics.payloads import CommandResult, Completion
from agentic_rubrics.types import Rubric, Verdict

__all__ = ["Judge", "Model", "Sandbox"]


@runtime_checkable
class Model(Protocol):
    """An async chat-completion model (a litellm model string behind it, or a scripted fake)."""

    name: str
    """The model identifier recorded beside every verdict it gives."""

    async def complete(self, messages: list[dict[str, Any]], **params: Any) -> Completion:
        """Answer one chat; ``params`` are passed through (temperature, max_tokens, ...)."""
        ...


@runtime_checkable
class Sandbox(Protocol):
    """A place to run read-only exploration commands against a repository at its base commit."""

    kind: str
    """What it is (``bubblewrap``, ``local-copy``, ``swerex-docker`` …), recorded with a rubric."""
    workdir: str
    """Where commands start: the repository's root as commands see it (``/workspace``,
    ``/testbed`` or a host path)."""

    async def run(
        self, command: str, *, timeout: float = 30.0, max_output: int = 20_000
    ) -> CommandResult:
        """Run a shell command; kill it after ``timeout`` seconds; cut output at ``max_output`` chars."""
        ...

    async def read_file(self, path: str, *, max_bytes: int = 200_000) -> str:
        """Read a repository-relative file as text (cut at ``max_bytes``)."""
        ...

    async def close(self) -> None:
        """Release the sandbox and everything it created."""
        ...


@runtime_checkable
class Judge(Protocol):
    """Gives one verdict per rubric item for one candidate; never a score it did not derive."""

    name: str
    """What decided the verdicts, recorded in every record (e.g. ``checks``)."""

    async def judge(
        self,
        *,
        instance_id: str,
        issue: str,
        rubric: Rubric,
        candidate_id: str,
        patch: str,
        repeat: int = 0,
    ) -> list[Verdict]:
        """Exactly one verdict per rubric item, each ``judged``, ``checked`` or ``missing``."""
        ...
