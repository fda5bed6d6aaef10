"""A local sandbox: commands run in a throwaway copy of the repository, never in the original.

It protects the user's checkout from the explorer's commands (and the explorer from a dirty tree) but
it is not isolation: commands run as the current user, with the network and the rest of the file
system reachable. Use it for the static explorer, whose commands are the library's own; model-chosen
commands belong in an isolated sandbox.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import tempfile
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.protocols import CommandResult

TRUNCATION_MARKER = "\n[... output truncated at {limit} characters ...]\n"
_COPY_IGNORE = shutil.ignore_patterns(
    "__pycache__", "*.pyc", ".pytest_cache", ".mypy_cache", ".tox"
)


def clean_env(home: Path) -> dict[str, str]:
    """The environment commands get: a PATH and a locale, never the caller's variables (API keys)."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "LC_ALL": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
    }


def copy_tree(repo_dir: Path, target: Path, *, copy_git: bool = False) -> None:
    """Copy a repository (links as links; caches, and ``.git`` unless asked, left out).

    Raises:
        SandboxError: the copy failed (naming the folder).
    """

    def ignore(folder: str, names: list[str]) -> set[str]:
        skip = set(_COPY_IGNORE(folder, names))
        return skip if copy_git else skip | ({".git"} & set(names))

    try:
        shutil.copytree(repo_dir, target, symlinks=True, ignore=ignore)
    except OSError as exc:
        raise SandboxError(f"cannot copy {repo_dir}: {exc}") from exc


def resolve_inside(root: Path, path: str) -> Path:
    """``path`` (relative to ``root``) resolved, refusing anything that escapes ``root``."""
    target = (root / path.lstrip("/")).resolve()
    if target != root and root not in target.parents:
        raise SandboxError(f"path {path!r} is outside the repository")
    return target


async def run_capped(
    argv_or_shell: str | list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float,
    max_output: int,
    **popen: Any,
) -> CommandResult:
    """Run a command in its own process group, interleaving stdout and stderr, capped and timed.

    ``popen``: further arguments of the process (e.g. ``user`` and ``group`` to drop root).
    """
    options: dict[str, Any] = {
        **popen,
        "cwd": cwd,
        "env": env,
        "stdin": asyncio.subprocess.DEVNULL,
        "stdout": asyncio.subprocess.PIPE,
        "stderr": asyncio.subprocess.STDOUT,
        "start_new_session": True,  # its own process group, killed whole on timeout
    }
    if isinstance(argv_or_shell, str):
        proc = await asyncio.create_subprocess_shell(argv_or_shell, **options)
    else:
        proc = await asyncio.create_subprocess_exec(*argv_or_shell, **options)
    assert proc.stdout is not None
    chunks: list[bytes] = []
    size = 0
    truncated = False

    async def drain() -> None:
        nonlocal size, truncated
        assert proc.stdout is not None
        while chunk := await proc.stdout.read(65536):
            if size < max_output:
                chunks.append(chunk[: max_output - size])
            if size + len(chunk) > max_output:
                truncated = True  # keep reading so the process never blocks on a full pipe
            size += len(chunk)
        await proc.wait()

    timed_out = False
    try:
        await asyncio.wait_for(drain(), timeout=timeout)
    except TimeoutError:
        timed_out = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
    text = b"".join(chunks).decode("utf-8", errors="replace")
    if truncated:
        text += TRUNCATION_MARKER.format(limit=max_output)
    return CommandResult(
        exit_code=None if timed_out else proc.returncode,
        output=text,
        truncated=truncated,
        timed_out=timed_out,
    )


class WorkspaceCopy:
    """A throwaway copy of a repository (``.git`` left out unless asked): the base of local sandboxes."""

    kind = "copy"
    isolated = False

    def __init__(self, repo_dir: Path, *, copy_git: bool = False, copy: bool = True) -> None:
        if not repo_dir.is_dir():
            raise SandboxError(f"repository folder {repo_dir} does not exist")
        self._tmp = Path(tempfile.mkdtemp(prefix="agentic-rubrics-"))
        if not copy:  # a read-only tree that a layer above keeps untouched (the bubblewrap overlay)
            self.root = repo_dir
            self._finish()
            return
        self.root = self._tmp / "repo"

        try:
            copy_tree(repo_dir, self.root, copy_git=copy_git)
        except SandboxError:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise
        self._finish()

    def _finish(self) -> None:
        (self._tmp / "home").mkdir()
        self.env = clean_env(self._tmp / "home")
        self.workdir = str(self.root)
        """The repository folder as commands see it."""

    def _relative(self, path: str) -> str:
        # an absolute path inside the workspace (as commands print it) names the same file
        if path == self.workdir or path.startswith(self.workdir.rstrip("/") + "/"):
            return path[len(self.workdir) :]
        return path

    async def read_file(self, path: str, *, max_bytes: int = 200_000) -> str:
        """Read a file of the copy (UTF-8, undecodable bytes replaced), cut at ``max_bytes``."""
        target = resolve_inside(self.root, self._relative(path))
        try:
            with target.open("rb") as fh:
                data = fh.read(max_bytes)
        except OSError as exc:
            raise SandboxError(f"cannot read {path!r}: {exc.strerror}") from exc
        return data.decode("utf-8", errors="replace")

    async def close(self) -> None:
        """Delete the copy."""
        await asyncio.to_thread(shutil.rmtree, self._tmp, True)

    async def __aenter__(self) -> WorkspaceCopy:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


class LocalCopySandbox(WorkspaceCopy):
    """Runs commands in a temporary copy of ``repo_dir``, as this user, with no isolation."""

    kind = "local-copy"

    async def run(
        self, command: str, *, timeout: float = 30.0, max_output: int = 20_000
    ) -> CommandResult:
        """Run a shell command with the copy as working directory."""
        return await run_capped(
            command, cwd=self.root, env=self.env, timeout=timeout, max_output=max_output
        )
