"""One trusted program (git apply, GNU patch) run over one folder, with nothing else of the host readable.

The post-image analysis applies a stranger's patch with the harness's own commands. Those programs are
trusted; their input is not: a copy or rename may name ``/etc/shadow`` or ``../../secret`` as its
source, and a repository symlink may point anywhere. So each command runs in a bubblewrap of its own:
the system folders read-only (``/usr``, ``/bin``, ``/lib`` … — never ``/etc`` or a home), the one
folder it works in writable, no network (an empty network namespace), no capability, a fresh pid
namespace, a cleared environment, and kernel limits on the address space (``ulimit -v``) and on the
size of any one file it writes (``ulimit -f``). Anything outside that folder does not exist for it.

Where bubblewrap cannot run (not installed, no user namespaces), :func:`confine_problem` says why; the
caller decides (the analysis refuses to apply unconfined unless told to). Probed once per process.
"""

from __future__ import annotations

import functools
import shutil
import subprocess
import tempfile
from pathlib import Path

_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64")
"""Read-only system folders: enough for git and GNU patch. ``/etc`` is left out on purpose."""
_LIMITS = 'ulimit -c 0 && ulimit -v "$1" && ulimit -f "$2" || exit 126; shift 2; exec "$@"'
"""The command's first process sets its hard limits (a child cannot raise them), then runs it."""
PATH = "/usr/local/bin:/usr/bin:/bin"


def _mounts() -> list[str]:
    args: list[str] = []
    for folder in _SYSTEM:
        path = Path(folder)
        if path.is_symlink():  # merged /usr: /bin -> usr/bin
            args += ["--symlink", str(path.readlink()), folder]
        elif path.is_dir():
            args += ["--ro-bind", folder, folder]
    return args


def confined_argv(
    folder: Path,
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    max_memory_bytes: int,
    max_file_bytes: int,
) -> list[str]:
    """The command line that runs ``argv`` in ``cwd`` (inside ``folder``, the only writable and
    readable folder besides the system's), under the two limits. ``env`` is all it gets."""
    folder = folder.resolve()
    out = ["bwrap", "--die-with-parent", "--new-session", "--unshare-all", "--cap-drop", "ALL"]
    out += [*_mounts(), "--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    out += ["--bind", str(folder), str(folder), "--remount-ro", "/", "--chdir", str(cwd.resolve())]
    out += ["--clearenv"]
    for key, value in env.items():
        out += ["--setenv", key, value]
    limits = [_kib(max_memory_bytes), _kib(max_file_bytes)]
    return [*out, "bash", "-c", _LIMITS, "confined", *limits, *argv]


def _kib(n: int) -> str:
    """``ulimit`` counts KiB (``-v``) and 1 KiB blocks (``-f``, in bash)."""
    return str(max(1, n // 1024))


@functools.lru_cache(maxsize=1)
def confine_problem() -> str | None:
    """Why a confined command cannot run here (``None`` when it can)."""
    if shutil.which("bwrap") is None:
        return "bwrap is not installed (apt-get install -y bubblewrap)"
    with tempfile.TemporaryDirectory(prefix="agentic-rubrics-confine-") as tmp:
        folder = Path(tmp)
        argv = confined_argv(
            folder,
            ["bash", "-c", "echo ok > probe && test ! -e /etc/hostname"],
            cwd=folder,
            env={"PATH": PATH},
            max_memory_bytes=1 << 30,
            max_file_bytes=1 << 20,
        )
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.TimeoutExpired) as exc:
            return f"bubblewrap failed to start: {exc}"
        if done.returncode != 0 or not (folder / "probe").is_file():
            detail = (done.stderr or done.stdout).strip()[:300]
            return f"bubblewrap cannot create namespaces here: {detail}"
    return None
