"""The ``docker`` command line as the library calls it: bounded calls, located errors with reason codes,
and the label every container and network it makes carries, so that none is ever left behind.

Every container and network is labelled ``agentic_rubrics=1`` and ``agentic_rubrics.owner=<boot>:<pid>``
(the machine's boot id and the process that made it). A process removes its own when their task ends,
and, when it is interrupted, on SIGINT, SIGTERM and at exit (:func:`track`). What a process killed with
SIGKILL left is removed by the next process that starts a container (:func:`sweep_stale`: owners of this
boot whose pid is gone) or by ``agentic-rubrics clean-containers``.

The CLI honours ``DOCKER_HOST``: the daemon may listen on any socket.
"""

from __future__ import annotations

import atexit
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Final

from agentic_rubrics.exceptions import SandboxError

log = logging.getLogger(__name__)

LABEL: Final = "agentic_rubrics"
"""The label on every container and network the library makes (value ``1``)."""
OWNER_LABEL: Final = "agentic_rubrics.owner"
"""Which process made it: ``<boot id>:<pid>``."""
DOCKER_REASONS: Final[dict[str, str]] = {
    "docker_unavailable": "no docker command, or its daemon does not answer",
    "docker_failed": "a docker command failed (its message is in the detail)",
    "image_missing": "the image is not on this machine and pulling it was not allowed or failed",
    "env_build_failed": "an image (base or environment) could not be built",
    "container_failed": "the container exited, or its runtime never answered",
    "network_refused": "the network cut was refused: the container shares this machine's network",
    "oom": "a process of the container was killed by its memory limit",
    "runtime_lost": "the container's runtime stopped answering during a command",
    "unparsable_output": "the run's output could not be read (no exit status, no outcome)",
}
"""Why a docker sandbox could not give a result: the ``reason`` of a :class:`DockerError`."""
_UNAVAILABLE = (
    "Cannot connect to the Docker daemon",
    "Is the docker daemon running",
    "error during connect",
    "connection refused",
    "no such file or directory",
)


class DockerError(SandboxError):
    """A docker call failed; ``reason`` is a code of :data:`DOCKER_REASONS`."""

    def __init__(self, message: str, *, reason: str) -> None:
        assert reason in DOCKER_REASONS, reason
        self.reason = reason
        super().__init__(message)


def docker(
    args: list[str], *, timeout: float = 60.0, stdin: bytes | None = None, what: str = ""
) -> str:
    """Run ``docker ARGS`` and return its stdout (stripped).

    Raises:
        DockerError: ``docker_unavailable`` (no docker, or no daemon answering), ``docker_failed``
            (any other failure, or past ``timeout``).
    """
    what = what or f"docker {args[0]}"
    try:
        done = subprocess.run(
            ["docker", *args],
            input=stdin,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except FileNotFoundError:
        raise DockerError(
            f"{what}: no docker command on PATH", reason="docker_unavailable"
        ) from None
    except subprocess.TimeoutExpired:
        raise DockerError(f"{what}: no answer in {timeout:g} s", reason="docker_failed") from None
    err = done.stderr.decode("utf-8", "replace").strip()
    if done.returncode != 0:
        unavailable = any(marker in err for marker in _UNAVAILABLE) and "daemon" in err.lower()
        reason = "docker_unavailable" if unavailable else "docker_failed"
        raise DockerError(f"{what} failed (exit {done.returncode}): {err[-600:]}", reason=reason)
    return done.stdout.decode("utf-8", "replace").strip()


def daemon_problem() -> str | None:
    """Why no docker daemon can be used here (``None``: its server answers)."""
    try:
        docker(["version", "--format", "{{.Server.Version}}"], timeout=20)
    except DockerError as exc:
        return str(exc)
    return None


def boot_id() -> str:
    """This machine's boot (a pid is only meaningful within one boot)."""
    try:
        return Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()[:36]
    except OSError:
        return "unknown"


def owner() -> str:
    """This process, as the owner label says it."""
    return f"{boot_id()}:{os.getpid()}"


def label_args() -> list[str]:
    """The ``--label`` arguments of everything this process makes."""
    return ["--label", f"{LABEL}=1", "--label", f"{OWNER_LABEL}={owner()}"]


def owner_alive(value: str) -> bool:
    """Whether the process an owner label names still runs (on another boot: it cannot)."""
    boot, _, pid = value.rpartition(":")
    if boot != boot_id() or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _listed(kind: str) -> list[tuple[str, str]]:
    """(name, owner) of every labelled container or network."""
    fmt = f'{{{{.Names}}}}\t{{{{.Label "{OWNER_LABEL}"}}}}'
    if kind == "network":
        fmt = fmt.replace(".Names", ".Name")
        args = ["network", "ls", "--filter", f"label={LABEL}", "--format", fmt]
    elif kind == "image":  # only the prepared images of a run: base and environment images stay
        # `image ls` has no .Label (docker 28: "can't evaluate field Label"): the owners by inspect
        args = ["image", "ls", "--filter", f"label={LABEL}.prepared", "--format", "{{.ID}}"]
        ids = list(dict.fromkeys(docker(args, timeout=30).split()))
        if not ids:
            return []
        fmt = f'{{{{index .RepoTags 0}}}}\t{{{{index .Config.Labels "{OWNER_LABEL}"}}}}'
        args = ["image", "inspect", "--format", fmt, *ids]
    else:
        args = ["ps", "-a", "--filter", f"label={LABEL}", "--format", fmt]
    out = docker(args, timeout=30)
    rows = [line.split("\t") for line in out.splitlines() if line.strip()]
    return [(row[0], row[1] if len(row) > 1 else "") for row in rows]


def remove(
    containers: list[str], networks: list[str], images: tuple[str, ...] | list[str] = ()
) -> list[str]:
    """Remove containers (killed first), then networks and images; what could not be, with why."""
    problems = []
    for name in containers:
        try:
            docker(["rm", "-f", "-v", name], timeout=60)
        except DockerError as exc:
            if "No such container" not in str(exc):
                problems.append(f"container {name}: {exc}")
    for name in networks:
        try:
            docker(["network", "rm", name], timeout=60)
        except DockerError as exc:
            if "No such network" not in str(exc) and "not found" not in str(exc):
                problems.append(f"network {name}: {exc}")
    for name in images:
        try:
            docker(["rmi", "-f", name], timeout=120)
        except DockerError as exc:
            if "No such image" not in str(exc):
                problems.append(f"image {name}: {exc}")
    return problems


def clean(*, everything: bool = False) -> tuple[list[str], list[str], list[str]]:
    """Remove the labelled containers, networks and prepared images whose owner is gone
    (``everything``: all of them, whoever made them). Returns (containers, networks, problems).

    One with the label and no owner is left alone: the library gives an owner to everything it
    starts, and an image built here carries the label to whatever runs from it — ``docker build``'s
    own step containers among them, which a sweep by another process would kill mid-build."""

    def gone(owner_label: str) -> bool:
        return everything or (bool(owner_label) and not owner_alive(owner_label))

    containers = [n for n, o in _listed("container") if gone(o)]
    networks = [n for n, o in _listed("network") if gone(o)]
    images = [n for n, o in _listed("image") if gone(o)]
    return containers, networks, remove(containers, networks, images)


_swept = threading.Event()


def sweep_stale() -> None:
    """Once per process, before its first container: remove what dead processes left (never raises:
    a sweep that cannot run must not stop the run)."""
    if _swept.is_set():
        return
    _swept.set()
    try:
        containers, networks, problems = clean()
    except DockerError as exc:
        log.warning("cannot look for containers left by earlier runs: %s", exc)
        return
    if containers or networks:
        log.warning("removed %d container(s) left by earlier runs", len(containers))
    for problem in problems:
        log.warning("cannot remove what an earlier run left: %s", problem)


class _Tracked:
    """The containers and networks this process has running: removed on SIGINT, SIGTERM and exit."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.containers: dict[str, None] = {}
        self.networks: dict[str, None] = {}
        self.images: dict[str, None] = {}
        self.installed = False
        self.previous: dict[int, Callable[[int, FrameType | None], object] | int | None] = {}

    def add(self, *, container: str = "", network: str = "", image: str = "") -> None:
        with self.lock:
            for kept, name in ((self.containers, container), (self.networks, network)):
                if name:
                    kept[name] = None
            if image:
                self.images[image] = None
            if not self.installed:
                self.installed = True
                atexit.register(self.remove_all)
                if threading.current_thread() is threading.main_thread():
                    for signum in (signal.SIGINT, signal.SIGTERM):
                        self.previous[signum] = signal.getsignal(signum)
                        signal.signal(signum, self.on_signal)

    def discard(self, *, container: str = "", network: str = "", image: str = "") -> None:
        with self.lock:
            self.containers.pop(container, None)
            self.networks.pop(network, None)
            self.images.pop(image, None)

    def remove_all(self) -> None:
        with self.lock:
            containers, networks = list(self.containers), list(self.networks)
            images = list(self.images)
            for kept in (self.containers, self.networks, self.images):
                kept.clear()
        if containers or networks or images:
            for problem in remove(containers, networks, images):
                log.warning("cannot remove on exit: %s", problem)

    def on_signal(self, signum: int, frame: FrameType | None) -> None:
        self.remove_all()
        previous = self.previous.get(signum)
        if callable(previous):
            previous(signum, frame)
            return
        if previous == signal.SIG_IGN:
            return
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)


TRACKED = _Tracked()
"""This process's containers and networks (:func:`track`)."""


def track(*, container: str = "", network: str = "", image: str = "") -> None:
    """Remember a container, network or prepared image until :func:`untrack`: removed if the process
    is interrupted or exits first (handlers installed with the first one, from the main thread)."""
    TRACKED.add(container=container, network=network, image=image)


def untrack(*, container: str = "", network: str = "", image: str = "") -> None:
    """Forget a container, network or image (removed, or handed on)."""
    TRACKED.discard(container=container, network=network, image=image)
