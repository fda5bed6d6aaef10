"""The isolated local sandbox, on bubblewrap: the default wherever it works.

Each command runs in fresh namespaces (no network: only a private loopback), with the system folders
mounted read-only, a private ``/tmp``, and a throwaway copy of the repository as the only writable
place, at ``/workspace``. Nothing else of the host is mounted: not the user's home, not the project,
not the hidden tests beside a bundled repository. The environment is cleared (no API keys).
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox.local import WorkspaceCopy, clean_env, run_capped
from agentic_rubrics.types import CommandResult

WORKSPACE = "/workspace"
# read-only system folders: enough for a shell, coreutils, grep, find, git and Debian's python3
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")


def _mounts() -> list[str]:
    args: list[str] = []
    for folder in _SYSTEM:
        path = Path(folder)
        if path.is_symlink():  # merged /usr: /bin -> usr/bin
            args += ["--symlink", str(path.readlink()), folder]
        elif path.is_dir():
            args += ["--ro-bind", folder, folder]
    return args


def bwrap_argv(workspace: Path, home: Path) -> list[str]:
    """The bubblewrap command line that runs ``bash -c COMMAND`` (append the command)."""
    env = clean_env(Path(WORKSPACE) / ".home")
    env["HOME"] = "/home/sandbox"
    argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--hostname", "sandbox"]
    argv += _mounts()
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    argv += ["--bind", str(workspace), WORKSPACE, "--bind", str(home), "/home/sandbox"]
    argv += ["--chdir", WORKSPACE, "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return [*argv, "bash", "-c"]


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot run here (``None`` when it can): probed once per process."""
    if shutil.which("bwrap") is None:
        return "bubblewrap is not installed (apt-get install -y bubblewrap)"
    with tempfile.TemporaryDirectory() as tmp:
        ws, home = Path(tmp) / "ws", Path(tmp) / "home"
        ws.mkdir()
        home.mkdir()
        try:
            done = subprocess.run(
                [*bwrap_argv(ws, home), "true"], capture_output=True, text=True, timeout=20
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap failed to start: {exc}"
    if done.returncode != 0:
        return f"bubblewrap cannot create namespaces here: {done.stderr.strip()[:300]}"
    return None


class BubblewrapSandbox(WorkspaceCopy):
    """Commands run isolated by bubblewrap in a throwaway copy of ``repo_dir`` (``/workspace``)."""

    kind = "bubblewrap"
    isolated = True

    def __init__(self, repo_dir: Path, *, copy_git: bool = False) -> None:
        problem = bwrap_problem()
        if problem is not None:
            raise SandboxError(problem)
        super().__init__(repo_dir, copy_git=copy_git)
        self._argv = bwrap_argv(self.root, self._tmp / "home")
        self.workdir = WORKSPACE

    async def run(
        self, command: str, *, timeout: float = 30.0, max_output: int = 20_000
    ) -> CommandResult:
        """Run a shell command inside the sandbox, in ``/workspace``."""
        return await run_capped(
            [*self._argv, command],
            cwd=self.root,
            env=self.env,
            timeout=timeout,
            max_output=max_output,
        )
