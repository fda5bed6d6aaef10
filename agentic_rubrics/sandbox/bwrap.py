"""The isolated local sandbox, on bubblewrap: the default wherever it works.

A sandbox is two layers:

- a **holder** (:mod:`agentic_rubrics.sandbox.holder`): a private mount namespace that lives as long as
  the sandbox, with a tmpfs of a fixed size. The workspace at ``/workspace`` is an overlay whose lower
  layer is the repository (read-only) and whose upper layer is in that tmpfs, so every byte a command
  writes — in the workspace or in its home — counts against one cap, and writes persist from one
  command to the next;
- one **bubblewrap** per command, started inside the holder's namespace: fresh user, pid, network
  (only a private loopback), ipc and uts namespaces; every capability dropped; an unprivileged uid
  inside, and — when the library runs as root — an unprivileged host user too (``nobody``), so that
  no command is ever root on the host, and the process limit (RLIMIT_NPROC, which root ignores) holds;
  no further user namespaces; the system folders read-only, a read-only root, a private ``/tmp`` and
  ``/dev/shm`` of capped size; a cleared environment (no API keys). A timeout kills the command's whole
  pid namespace.

Nothing else of the host is mounted: not the user's home, not the project, not the hidden tests beside a
bundled repository.
"""

from __future__ import annotations

import errno
import functools
import logging
import posixpath
import shutil
import subprocess
import tempfile
from pathlib import Path

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.protocols import CommandResult
from agentic_rubrics.sandbox.holder import HOST_UID, Holder, host_user, reachable
from agentic_rubrics.sandbox.local import WorkspaceCopy, clean_env, run_capped

log = logging.getLogger(__name__)

WORKSPACE = "/workspace"
HOME = "/home/sandbox"
SANDBOX_UID = 1000
"""The uid (and gid) commands have inside the sandbox: not root, and no capability."""
# read-only system folders: enough for a shell, coreutils, grep, find, git and Debian's python3
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/etc")
_SHM_BYTES = 64 << 20
MIB = 1 << 20
# Numerical libraries start a pool of one thread per core, each with its own stack and buffer:
# `import numpy` (OpenBLAS, 40 MiB of address space a thread) takes 140 MiB on 2 cores and 2.6 GiB on
# 64, past the memory limit, and scipy or scikit-learn load a second pool (5.2 GiB, 127 threads). With
# four threads a pool: 220 MiB for numpy, 560 MiB for scikit-learn, whatever the machine.
POOL_THREADS = {"OPENBLAS_NUM_THREADS": "4", "OMP_NUM_THREADS": "4", "MKL_NUM_THREADS": "4"}

# runs as the command's first process: the limits first (they cannot be raised again: raising a hard
# limit needs a capability the sandbox does not have), then the model's command
_WRAPPER = 'ulimit -c 0 && ulimit -u "$1" && ulimit -v "$2" || exit 126; exec bash -c "$3"'


def _mounts() -> list[str]:
    args: list[str] = []
    for folder in _SYSTEM:
        path = Path(folder)
        if path.is_symlink():  # merged /usr: /bin -> usr/bin
            args += ["--symlink", str(path.readlink()), folder]
        elif path.is_dir():
            args += ["--ro-bind", folder, folder]
    return args


def bwrap_argv(
    workspace: Path, home: Path, *, max_tmp_bytes: int, read_only: dict[str, Path] | None = None
) -> list[str]:
    """The bubblewrap command line (the wrapper's arguments follow: process limit, memory, command);
    ``read_only``: more host folders, each bound read-only at its path inside (a test's staging)."""
    env = {**clean_env(Path(HOME)), **POOL_THREADS}
    argv = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--unshare-user"]
    argv += ["--disable-userns", "--uid", str(SANDBOX_UID), "--gid", str(SANDBOX_UID)]
    argv += ["--cap-drop", "ALL", "--hostname", "sandbox", *_mounts()]
    argv += ["--proc", "/proc", "--dev", "/dev"]
    argv += ["--size", str(min(_SHM_BYTES, max_tmp_bytes)), "--tmpfs", "/dev/shm"]
    argv += ["--remount-ro", "/dev", "--size", str(max_tmp_bytes), "--tmpfs", "/tmp"]
    argv += ["--bind", str(workspace), WORKSPACE, "--bind", str(home), HOME]
    for inside, host in (read_only or {}).items():
        argv += ["--ro-bind", str(host), inside]
    argv += ["--remount-ro", "/", "--chdir", WORKSPACE, "--clearenv"]
    for key, value in env.items():
        argv += ["--setenv", key, value]
    return [*argv, "bash", "-c", _WRAPPER, "sandbox"]


@functools.lru_cache(maxsize=64)
def _warn_unreachable(tree: Path) -> None:
    log.warning(
        "the sandbox's unprivileged host user (uid %d) cannot reach %s: each sandbox copies the"
        " tree instead of laying its writable layer over it (slower on big repositories); keep"
        " the repository cache in a folder every user may walk through (--repo-cache)",
        HOST_UID,
        tree,
    )


def _missing_tools() -> str | None:
    for tool, package in (("bwrap", "bubblewrap"), ("unshare", "util-linux")):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (apt-get install -y {package})"
    if shutil.which("nsenter") is None:
        return "nsenter is not installed (apt-get install -y util-linux)"
    return None


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Why bubblewrap cannot run here (``None`` when it can): probed once per process."""
    missing = _missing_tools()
    if missing is not None:
        return missing
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "repo").mkdir()
        try:
            sandbox = BubblewrapSandbox(Path(tmp) / "repo", _probe=True)
        except SandboxError as exc:
            return str(exc)
        try:
            done = subprocess.run(
                sandbox.argv("touch probe && ulimit -u"),
                capture_output=True,
                text=True,
                timeout=20,
                cwd="/",
                **host_user(),
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap failed to start: {exc}"
        finally:
            sandbox.holder.stop()
            shutil.rmtree(sandbox._tmp, ignore_errors=True)
    if done.returncode != 0 or done.stdout.strip() != str(sandbox.max_processes):
        return f"bubblewrap cannot create namespaces here: {(done.stderr or done.stdout).strip()[:300]}"
    return None


class BubblewrapSandbox(WorkspaceCopy):
    """Commands run isolated by bubblewrap over a throwaway copy of ``repo_dir`` (``/workspace``).

    Args:
        repo_dir: the repository (copied once; the copy is the overlay's read-only lower layer).
        shared: ``repo_dir`` is a tree no one writes to (a cached export at a base commit, no
            ``.git``): it is the overlay's lower layer as it is, so nothing is copied. Its files keep
            their modes (the cache's are read-only): commands read them and write new files at the
            workspace's top, in ``/tmp`` and in their home; changing a repository file needs a
            ``chmod`` first (as the owner) or fails where the tree belongs to another user.
        max_write_bytes: what commands may write in all, workspace and home together.
        max_tmp_bytes: the size of each command's private ``/tmp``.
        max_processes: processes (and threads) one command may have at once.
        max_memory_bytes: address space of each of its processes (``ulimit -v``): an allocation past
            it fails (``MemoryError``, ``malloc`` returning NULL). A command's total is at most
            ``max_processes`` times this (only a cgroup bounds a sum, and creating one needs a
            privilege the library does not assume).
        read_only: host folders bound read-only inside, by their path inside (they must be readable
            by the sandbox's host user).
    """

    kind = "bubblewrap"
    isolated = True

    def __init__(
        self,
        repo_dir: Path,
        *,
        copy_git: bool = False,
        shared: bool = False,
        max_write_bytes: int = 256 * MIB,
        max_tmp_bytes: int = 256 * MIB,
        max_processes: int = 256,
        max_memory_bytes: int = 2048 * MIB,
        read_only: dict[str, Path] | None = None,
        _probe: bool = False,
    ) -> None:
        if not _probe and (problem := bwrap_problem()) is not None:
            raise SandboxError(problem)
        if shared and not reachable(repo_dir):
            _warn_unreachable(repo_dir)
            shared = False
        super().__init__(repo_dir, copy_git=copy_git, copy=not shared)
        self.max_processes = max_processes
        self.max_memory_bytes = max_memory_bytes
        self._max_tmp_bytes = max_tmp_bytes
        try:
            self.holder = Holder(self._tmp, self.root, size=max_write_bytes, own_lower=not shared)
        except SandboxError:
            shutil.rmtree(self._tmp, ignore_errors=True)
            raise
        self._bwrap = bwrap_argv(
            self.holder.workspace,
            self.holder.home,
            max_tmp_bytes=max_tmp_bytes,
            read_only=read_only,
        )
        self.workdir = WORKSPACE

    def argv(self, command: str) -> list[str]:
        """The whole command line that runs ``command`` in this sandbox."""
        memory = str(self.max_memory_bytes // 1024)  # ulimit -v counts KiB
        return [*self.holder.enter(), *self._bwrap, str(self.max_processes), memory, command]

    async def run(
        self, command: str, *, timeout: float = 30.0, max_output: int = 20_000
    ) -> CommandResult:
        """Run a shell command inside the sandbox, in ``/workspace``."""
        return await run_capped(
            self.argv(command),
            cwd=Path("/"),
            env=self.env,
            timeout=timeout,
            max_output=max_output,
            **host_user(),
        )

    async def read_file(self, path: str, *, max_bytes: int = 200_000) -> str:
        """Read a file of the workspace as commands see it, cut at ``max_bytes``."""
        full = posixpath.normpath(posixpath.join(WORKSPACE, path))
        if full != WORKSPACE and not full.startswith(WORKSPACE + "/"):
            raise SandboxError(f"path {path!r} is outside the repository")
        try:
            data = self.holder.read(full[len(WORKSPACE) :], max_bytes)
        except OSError as exc:
            if exc.errno == errno.EXDEV:
                raise SandboxError(f"path {path!r} is outside the repository") from exc
            raise SandboxError(f"cannot read {path!r}: {exc.strerror}") from exc
        return data.decode("utf-8", errors="replace")

    async def close(self) -> None:
        """Stop the holder (its tmpfs goes with it) and delete the copy."""
        import asyncio

        await asyncio.to_thread(self.holder.stop)
        await super().close()
