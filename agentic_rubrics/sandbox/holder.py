"""The holder of a bubblewrap sandbox: a mount namespace with a capped writable layer.

Each command of the bubblewrap sandbox is a fresh bubblewrap, so nothing a command mounts outlives it.
What must outlive it — the files the agent writes, such as ``rubrics.yaml`` — lives here: a process that
owns a private user and mount namespace, in which a tmpfs of ``size`` bytes is mounted, and over the
repository an overlay whose upper layer is in that tmpfs. Commands are started inside this namespace
(``nsenter``) and bind its workspace, so what they write lands in the tmpfs and cannot exceed ``size``.
The repository below stays untouched.

The holder lives until :meth:`Holder.stop`, or until this process dies: it waits on a pipe from us.
When the library runs as root, the holder and every command run as :data:`HOST_UID` instead, so that no
model-chosen command is root on the host (and process limits, which root ignores, apply).

This layout is the one a read-only repository needs: a later lower layer can be any read-only tree.
"""

from __future__ import annotations

import errno
import os
import posixpath
import select
import stat
import subprocess
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import SandboxError

HOST_UID = 65534
"""``nobody``: the host user commands run as when the library itself runs as root."""

_START_SECONDS = 20.0

# $1 size in bytes, $2 the tmpfs, $3 the read-only lower layer, $4 the workspace mount point
_HOLD = """set -e
mount -t tmpfs -o "size=$1,mode=0755,nosuid,nodev" agentic-rubrics "$2"
mkdir "$2/upper" "$2/work" "$2/home"
mount -t overlay overlay -o "lowerdir=$3,upperdir=$2/upper,workdir=$2/work" "$4"
echo ready
read -r _ || true
"""


def host_user() -> dict[str, Any]:
    """Subprocess arguments that drop root to :data:`HOST_UID` (nothing when not root)."""
    if os.geteuid() != 0:
        return {}
    return {"user": HOST_UID, "group": HOST_UID, "extra_groups": []}


def give_away(root: Path) -> None:
    """Hand a tree to :data:`HOST_UID` (when root): the holder must read it, commands write over it."""
    if os.geteuid() != 0:
        return
    os.chown(root, HOST_UID, HOST_UID)
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            os.lchown(Path(folder, name), HOST_UID, HOST_UID)


def reachable(tree: Path) -> bool:
    """Whether the holder can use ``tree`` as it is: always when not root; when root, whether
    :data:`HOST_UID` may walk every folder down to it and read it (``/root/...`` it may not)."""
    if os.geteuid() != 0:
        return True
    path = tree.resolve()
    for folder in [*reversed(path.parents), path]:
        try:
            info = folder.stat()
        except OSError:
            return False
        need = 0o005 if folder == path else 0o001  # others: search on the way, read at the end
        if info.st_uid != HOST_UID and info.st_mode & need != need:
            return False
    return True


class Holder:
    """The namespace holding one sandbox's writable layer (``workspace`` and ``home``)."""

    def __init__(self, tmp: Path, lower: Path, *, size: int, own_lower: bool = True) -> None:
        """``own_lower``: ``lower`` is this sandbox's own copy, handed to :data:`HOST_UID` when
        running as root; a shared tree is only read (see :func:`reachable`)."""
        if size < 1 << 20:
            raise SandboxError(f"the sandbox's write cap must be at least 1 MiB, got {size} bytes")
        cap, self.workspace = tmp / "cap", tmp / "workspace"
        self.home = cap / "home"  # inside the holder's namespace
        cap.mkdir()
        self.workspace.mkdir()
        if os.geteuid() == 0:
            tmp.chmod(0o711)  # HOST_UID must reach the copy and the mount points
            if own_lower:
                give_away(lower)
            for folder in (cap, self.workspace):
                os.chown(folder, HOST_UID, HOST_UID)
        argv = ["unshare", "--user", "--map-root-user", "--mount", "--propagation", "private"]
        argv += [
            "--",
            "sh",
            "-c",
            _HOLD,
            "sh",
            str(size),
            str(cap),
            str(lower),
            str(self.workspace),
        ]
        try:
            self._proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd="/",
                env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
                **host_user(),
            )
        except OSError as exc:
            raise SandboxError(f"cannot start the sandbox's holder: {exc}") from exc
        assert self._proc.stdout is not None
        ready, _, _ = select.select([self._proc.stdout], [], [], _START_SECONDS)
        line = self._proc.stdout.readline() if ready else b""
        if line.strip() != b"ready":
            assert self._proc.stderr is not None
            if self._proc.poll() is None:  # no answer in time: stop it, then read what it said
                self._proc.kill()
                self._proc.wait()
            err = self._proc.stderr.read().decode(errors="replace").strip()[:300]
            self.stop()
            raise SandboxError(
                "cannot give the sandbox a capped writable layer (a user and mount namespace with"
                f" tmpfs and overlay): {err or 'no answer'}"
            )
        self.pid = self._proc.pid

    def enter(self) -> list[str]:
        """The command-line prefix that runs a program inside the holder's namespaces."""
        return [
            "nsenter",
            f"--target={self.pid}",
            "--user",
            "--mount",
            "--preserve-credentials",
            "--",
        ]

    def read(self, relative: str, max_bytes: int) -> bytes:
        """The first ``max_bytes`` of a workspace file, as commands see it, read from this process.

        Through ``/proc/<holder>/root`` (the holder's view of the file system). Symbolic links are
        followed by hand, inside the workspace only: one that leaves it (``x -> /etc/shadow``) is
        refused, since this process may read what the sandbox may not. No command runs while a tool
        reads (each command's processes end with it), so nothing can swap a path in between.

        Raises:
            OSError: unreadable, missing, a folder, or a link out of the workspace (``EXDEV``).
        """
        base = f"/proc/{self.pid}/root{self.workspace}"
        parts = [p for p in relative.split("/") if p not in ("", ".")]
        resolved: list[str] = []
        hops = 0
        while parts:
            name = parts.pop(0)
            if name == "..":
                if resolved:
                    resolved.pop()
                continue
            candidate = "/".join([base, *resolved, name])
            if not stat.S_ISLNK(os.lstat(candidate).st_mode):
                resolved.append(name)
                continue
            hops += 1
            target = str(Path(candidate).readlink())
            if hops > 40:
                raise OSError(errno.ELOOP, "too many levels of symbolic links")
            if target.startswith("/"):
                inside = posixpath.normpath(target)
                if inside != "/workspace" and not inside.startswith("/workspace/"):
                    raise OSError(errno.EXDEV, "a link out of the workspace")
                resolved, parts = [], inside.split("/")[2:] + parts
            else:
                parts = target.split("/") + parts
        fd = os.open("/".join([base, *resolved]), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                raise OSError(errno.EISDIR, "not a regular file")
            chunks, size = [], 0
            while size < max_bytes and (chunk := os.read(fd, min(1 << 20, max_bytes - size))):
                chunks.append(chunk)
                size += len(chunk)
            return b"".join(chunks)
        finally:
            os.close(fd)

    def stop(self) -> None:
        """End the holder; its tmpfs and overlay go with its namespace."""
        proc = self._proc
        if proc.poll() is None:
            try:
                assert proc.stdin is not None
                proc.stdin.close()
                proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                proc.kill()
                proc.wait()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
