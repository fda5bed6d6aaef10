"""One container with SWE-ReX's runtime in it, started by the library itself and reached without a
published port: what the ``swerex-docker`` sandbox runs its commands in.

SWE-ReX's own ``DockerDeployment`` publishes the runtime's port (``-p PORT:8000``), which works on
docker's default bridge only: published ports are not forwarded on an ``--internal`` network, and are
discarded with host networking. So the container is started here (``docker run -d``, labelled,
limited) and its runtime reached through SWE-ReX's ``RemoteRuntime`` at the address each mode gives:

- ``internal`` (the default): a network of its own made with ``docker network create --internal`` (no
  NAT, no route out of this machine), the runtime at the container's address on it, port 8000;
- ``bridge``: docker's default bridge (outbound NAT: the network cut must follow), the container's
  address on the bridge;
- ``host``: this machine's network namespace, the runtime on ``127.0.0.1`` at a free port. The network
  cut must never run there (it would cut this machine's network): :func:`refuse_host_namespace`.

The image says where its runtime is (label ``agentic_rubrics.runtime``, set by
:mod:`~agentic_rubrics.sandbox.docker_images`); an image without it gets SWE-ReX's standalone Python
built in (``python_standalone_dir``: SWE-ReX's own Dockerfile, which downloads Python: a machine with
the internet), or runs ``swerex-remote`` from its PATH.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import secrets
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentic_rubrics.sandbox.docker_cli import (
    DockerError,
    docker,
    label_args,
    sweep_stale,
    track,
    untrack,
)

log = logging.getLogger(__name__)
NetworkMode = Literal["internal", "bridge", "host"]
RUNTIME_LABEL = "agentic_rubrics.runtime"
"""The image label naming its ``swerex-remote`` executable."""
PYTHON_LABEL = "agentic_rubrics.python"
"""The image label naming a Python the network cut can run on (3.7 or later)."""
_NAME = re.compile(r"[^a-z0-9_.-]+")


@dataclass(frozen=True)
class ContainerSpec:
    """How one container is started."""

    image: str
    network: NetworkMode = "internal"
    memory_mib: int | None = None
    pids_limit: int | None = None
    cpus: float | None = None
    docker_args: tuple[str, ...] = ()
    runtime_port: int = 8000
    startup_timeout: float = 120.0
    pull: Literal["never", "always", "missing"] = "missing"
    python_standalone_dir: str | None = None
    name_hint: str = "task"
    extra_labels: dict[str, str] = field(default_factory=dict)


def free_port() -> int:
    """A TCP port free on 127.0.0.1 now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def image_labels(image: str) -> dict[str, str] | None:
    """The image's labels (``None``: no such image here)."""
    try:
        out = docker(["image", "inspect", "--format", "{{json .Config.Labels}}", image], timeout=30)
    except DockerError as exc:
        if exc.reason == "docker_unavailable":
            raise
        return None
    labels = json.loads(out or "null")
    return dict(labels) if isinstance(labels, dict) else {}


def ensure_image(spec: ContainerSpec) -> tuple[str, str, str]:
    """The image to run (pulled or built when needed), its runtime's command and a Python in it.

    Raises:
        DockerError: ``image_missing`` (absent and not pulled), ``env_build_failed`` (SWE-ReX's
            standalone Python could not be built), ``docker_unavailable``.
    """
    labels = image_labels(spec.image)
    if spec.pull == "always" or (labels is None and spec.pull == "missing"):
        try:
            docker(["pull", spec.image], timeout=1800, what=f"pulling {spec.image}")
        except DockerError as exc:
            if exc.reason == "docker_unavailable":
                raise
            raise DockerError(str(exc), reason="image_missing") from None
        labels = image_labels(spec.image)
    if labels is None:
        raise DockerError(f"image {spec.image} is not on this machine", reason="image_missing")
    if RUNTIME_LABEL in labels:
        return spec.image, labels[RUNTIME_LABEL], labels.get(PYTHON_LABEL, "python3")
    if spec.python_standalone_dir is None:
        return spec.image, "swerex-remote", "python3"
    return _standalone(spec.image, spec.python_standalone_dir)


def _standalone(image: str, folder: str) -> tuple[str, str, str]:
    """SWE-ReX's derived image: its standalone Python with swe-rex under ``folder``."""
    from swerex.deployment.docker import DockerDeployment

    dockerfile = DockerDeployment(image=image, python_standalone_dir=folder).glibc_dockerfile
    runtime, python = f"{folder}/python3.11/bin/swerex-remote", f"{folder}/python3.11/bin/python3"
    args = ["build", "-q", "--network", "host", "--build-arg", f"BASE_IMAGE={image}"]
    args += ["--label", f"{RUNTIME_LABEL}={runtime}", "--label", f"{PYTHON_LABEL}={python}", "-"]
    try:
        image_id = docker(args, stdin=dockerfile.encode(), timeout=3600, what="building swe-rex")
    except DockerError as exc:
        if exc.reason == "docker_unavailable":
            raise
        raise DockerError(str(exc), reason="env_build_failed") from None
    return image_id.splitlines()[-1], runtime, python


class ContainerDeployment:
    """SWE-ReX's deployment interface (``start``, ``stop``, ``runtime``) over a container started here."""

    def __init__(self, spec: ContainerSpec) -> None:
        self.spec = spec
        slug = _NAME.sub("-", spec.name_hint.lower())[:40].strip("-.") or "task"
        self.container_name = f"agentic-rubrics-{slug}-{secrets.token_hex(4)}"
        self.network = ""
        self.python = "python3"
        """A Python of the image (the network cut runs on it)."""
        self.image = spec.image
        """The image really run (SWE-ReX's derived one, for an image without a runtime)."""
        self._runtime: Any = None

    @property
    def runtime(self) -> Any:
        """SWE-ReX's ``RemoteRuntime`` (after :meth:`start`)."""
        if self._runtime is None:
            raise DockerError("the container is not started", reason="container_failed")
        return self._runtime

    def run_argv(self, image: str, runtime: str, host: str, port: int, token: str) -> list[str]:
        """The ``docker run`` arguments."""
        spec = self.spec
        argv = ["run", "-d", "--init", "--name", self.container_name, *label_args()]
        for key, value in spec.extra_labels.items():
            argv += ["--label", f"{key}={value}"]
        argv += ["--network", self.network or spec.network, "--cap-drop", "NET_RAW"]
        if spec.memory_mib is not None:  # swap included: the limit is the memory there is
            argv += ["--memory", f"{spec.memory_mib}m", "--memory-swap", f"{spec.memory_mib}m"]
        if spec.pids_limit is not None:
            argv += ["--pids-limit", str(spec.pids_limit)]
        if spec.cpus is not None:
            argv += ["--cpus", f"{spec.cpus:g}"]
        argv += [*spec.docker_args, image, runtime, "--host", host, "--port", str(port)]
        return [*argv, "--auth-token", token]

    async def start(self) -> None:
        """Start the container and wait for its runtime (bounded by ``startup_timeout``).

        Raises:
            DockerError: the daemon, the image, or the container failed (its reason says which).
        """
        await asyncio.to_thread(sweep_stale)
        self.image, runtime, self.python = await asyncio.to_thread(ensure_image, self.spec)
        if self.spec.network == "internal":
            self.network = self.container_name
            track(network=self.network)
            args = ["network", "create", "--internal", *label_args(), self.network]
            await asyncio.to_thread(docker, args, timeout=60)
        if self.spec.network == "host":
            host, port = "127.0.0.1", free_port()
        else:
            host, port = "0.0.0.0", self.spec.runtime_port
        token = secrets.token_hex(16)
        track(container=self.container_name)
        argv = self.run_argv(self.image, runtime, host, port, token)
        await asyncio.to_thread(docker, argv, timeout=120, what=f"starting {self.spec.image}")
        address = host if self.spec.network == "host" else await self._address()
        await self._connect(address, port, token)

    async def _address(self) -> str:
        fmt = "{{json .NetworkSettings.Networks}}"
        out = await asyncio.to_thread(docker, ["inspect", "--format", fmt, self.container_name])
        networks = json.loads(out or "{}") or {}
        want = self.network or self.spec.network
        entry: dict[str, Any] = networks.get(want) or next(iter(networks.values()), {})
        address = str((entry or {}).get("IPAddress") or "")
        if not address:
            raise DockerError(
                f"{self.container_name}: no address on network {want}", reason="container_failed"
            )
        return address

    async def _connect(self, address: str, port: int, token: str) -> None:
        from swerex.runtime.remote import RemoteRuntime

        runtime = RemoteRuntime(host=f"http://{address}", port=port, auth_token=token, timeout=5)
        deadline = time.monotonic() + self.spec.startup_timeout
        while True:
            try:
                if await asyncio.wait_for(runtime.is_alive(timeout=2), 5):
                    self._runtime = runtime
                    return
            except Exception:  # not up yet: connection refused, reset, timeout
                pass
            state = await asyncio.to_thread(self.state)
            if not state.get("Running"):
                logs = await asyncio.to_thread(self.logs)
                raise DockerError(
                    f"{self.container_name} exited before its runtime answered"
                    f" (exit {state.get('ExitCode')}): {logs}",
                    reason="oom" if state.get("OOMKilled") else "container_failed",
                )
            if time.monotonic() > deadline:
                raise DockerError(
                    f"{self.container_name}: runtime did not answer in"
                    f" {self.spec.startup_timeout:g} s",
                    reason="container_failed",
                )
            await asyncio.sleep(0.1)

    def state(self) -> dict[str, Any]:
        """The container's ``State`` (``{}`` when it cannot be read)."""
        try:
            out = docker(["inspect", "--format", "{{json .State}}", self.container_name])
        except DockerError:
            return {}
        state = json.loads(out or "{}")
        return state if isinstance(state, dict) else {}

    def logs(self) -> str:
        """The last lines the container printed."""
        try:
            return docker(["logs", "--tail", "20", self.container_name])[-800:]
        except DockerError as exc:
            return str(exc)[-300:]

    def kill(self) -> None:
        """Kill the container now (a timeout): every process in it stops."""
        with contextlib.suppress(DockerError):
            docker(["kill", self.container_name], timeout=30)

    async def stop(self) -> None:
        """Close the runtime's session, remove the container and its network; never raises."""
        from agentic_rubrics.sandbox.docker_cli import remove

        if self._runtime is not None:
            with contextlib.suppress(Exception):  # the runtime may be gone with the container
                await asyncio.wait_for(self._runtime.close(), 10)
            self._runtime = None
        networks = [self.network] if self.network else []
        problems = await asyncio.to_thread(remove, [self.container_name], networks)
        if not problems:
            untrack(container=self.container_name, network=self.network)
        for problem in problems:  # left for the next run's sweep or clean-containers
            log.warning("cannot remove: %s", problem)


def refuse_host_namespace(container: str) -> None:
    """Raise unless ``container`` has a network namespace of its own: the network cut deletes every
    route of the namespace it runs in, and in this machine's it would cut this machine off.

    Both the container's network mode and, when its process is visible here, its namespace itself
    (``/proc/<pid>/ns/net`` against this process's) are compared.

    Raises:
        DockerError: ``network_refused``, before anything runs in the container.
    """
    fmt = "{{.HostConfig.NetworkMode}} {{.State.Pid}}"
    mode, _, pid = docker(["inspect", "--format", fmt, container]).partition(" ")
    if mode == "host" or mode.startswith("container:"):
        raise DockerError(
            f"refusing to cut the network of {container}: it uses network mode {mode!r}, this"
            " machine's own network (use network: internal)",
            reason="network_refused",
        )
    try:
        theirs = Path(f"/proc/{int(pid)}/ns/net").stat().st_ino
        ours = Path("/proc/self/ns/net").stat().st_ino
    except (ValueError, OSError):
        return  # a daemon on another machine: its namespaces are not this machine's
    if theirs == ours:
        raise DockerError(
            f"refusing to cut the network of {container}: its network namespace is this machine's",
            reason="network_refused",
        )
