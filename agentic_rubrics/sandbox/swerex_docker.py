"""The ``swerex-docker`` sandbox: a container per task from SWE-bench's instance image, or from an image
built here in SWE-bench's layout (:mod:`~agentic_rubrics.sandbox.docker_images`), SWE-ReX's runtime in
it, and what is done before the agent's first command.

The container is started by :class:`~agentic_rubrics.sandbox.docker_container.ContainerDeployment`
(labelled ``agentic_rubrics=1``, removed when the task ends or the run is interrupted, limited by
``memory_mib``, ``pids_limit`` and ``cpus``), on a network of its own made ``--internal`` by default.
Once its runtime answers, :func:`prepare_container`, in order:

1. ``no_network``: refused when the container shares this machine's network namespace (``network:
   host``); else ``docker run --rm --network container:NAME --cap-add NET_ADMIN IMAGE PYTHON -c
   <netcut.py>`` (in the container's network namespace; ``docker exec --privileged`` needs every
   capability, which a machine may not grant) deletes every route but a host route to the gateway (:mod:`~agentic_rubrics.sandbox.netcut`: this machine's
   address, where the runtime's connections come from), then checks the runtime still answers;
2. ``clean_history``: replaces ``/testbed/.git`` by a one-commit history at HEAD, which must be the task's
   base commit when it is known (:mod:`~agentic_rubrics.sandbox.docker_history`), then checks no other
   commit, ref or object is left;
3. ``conda_env``: runs the harness's ``source /opt/miniconda3/bin/activate && conda activate testbed``
   once in bash and gives every command the resulting environment (images built here have no conda:
   ``conda_env: null``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import shlex
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox.base import Where
from agentic_rubrics.sandbox.docker_container import (
    ContainerDeployment,
    ContainerSpec,
    NetworkMode,
    refuse_host_namespace,
)
from agentic_rubrics.sandbox.docker_history import (
    CHECK_HISTORY,
    CLEAN_HISTORY,
    history_problems,
    parse_environment,
)
from agentic_rubrics.sandbox.swerex import SweRexConfig, quiet_swerex, swebench_image_id
from agentic_rubrics.setting_effects import SPEED

log = logging.getLogger(__name__)
__all__ = [
    "CHECK_HISTORY",
    "CLEAN_HISTORY",
    "LOCAL_IMAGE",
    "SWEBENCH_IMAGE",
    "SweRexDockerConfig",
    "history_problems",
    "parse_environment",
    "prepare_container",
    "stop_container",
]

SWEBENCH_IMAGE = "swebench/sweb.eval.x86_64.{swebench_id}:latest"
LOCAL_IMAGE = "agentic-rubrics/sweb.eval.x86_64.{swebench_id}:latest"
"""The images ``agentic-rubrics build-env`` makes, named as SWE-bench names its own."""
NETCUT_SOURCE = (Path(__file__).parent / "netcut.py").read_text(encoding="utf-8")
# added to every command's environment (no pager waits for a terminal, no stray bytecode)
COMMAND_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "PYTHONDONTWRITEBYTECODE": "1"}
_CONDA_ENV = re.compile(r"[A-Za-z0-9_.-]+")
_NET_CAPS = {"NET_ADMIN", "NET_RAW", "ALL", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_ALL"}


def _options(args: list[str], names: tuple[str, ...]) -> list[str]:
    """The values ``args`` gives the options ``names`` (``--name value`` and ``--name=value``)."""
    values = []
    for i, arg in enumerate(args):
        for name in names:
            if arg == name and i + 1 < len(args):
                values.append(args[i + 1])
            elif arg.startswith(name + "="):
                values.append(arg.split("=", 1)[1])
    return values


class SweRexDockerConfig(SweRexConfig):
    """A container per task from an instance image, the repository at ``/testbed``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    needs_repo: ClassVar[bool] = False
    type: Literal["swerex-docker"] = "swerex-docker"
    """Discriminator."""
    image: str = SWEBENCH_IMAGE
    """Image name; ``{instance_id}`` and ``{swebench_id}`` (SWE-bench's spelling of the id: ``__``
    becomes ``_1776_``, lower case) are replaced. Images built here: ``LOCAL_IMAGE``."""
    repo_dir: str = "/testbed"
    """Where the repository is inside the image (an absolute path); commands run there."""
    conda_env: str | None = "testbed"
    """The conda environment activated as SWE-bench's harness does, once at start-up; every command
    gets the resulting environment. ``None``: the container's own environment."""
    conda_root: str = "/opt/miniconda3"
    """Where conda is installed in the image (``source <conda_root>/bin/activate``)."""
    clean_history: bool = True
    """Replace ``<repo_dir>/.git`` by a one-commit history at HEAD (which must be the task's base
    commit when it is known) and check that no other commit, ref or object is left."""
    network: Annotated[NetworkMode, SPEED] = "internal"
    """``internal``: a network of the container's own with no route out of this machine (docker's
    ``--internal``), the runtime reached at the container's address; ``bridge``: docker's default
    bridge (outbound NAT); ``host``: this machine's network namespace (then ``no_network`` must be
    false: the cut would cut this machine's network)."""
    no_network: bool = True
    """After start-up, cut the container's network down to the one address its runtime is reached
    from, and start it without NET_RAW (docs/explorers-and-sandboxes.md)."""
    memory_mib: Annotated[int | None, SPEED] = Field(default=8192, ge=16)
    """Memory of the whole container, swap included (``--memory``); past it the kernel kills a
    process of the container (reason ``oom``). ``None``: no limit."""
    pids_limit: Annotated[int | None, SPEED] = Field(default=2048, ge=8)
    """Processes and threads of the whole container (``--pids-limit``). ``None``: no limit."""
    cpus: Annotated[float | None, SPEED] = Field(default=None, gt=0)
    """CPUs the container may use (``--cpus``). ``None``: no limit."""
    docker_args: list[str] = Field(default_factory=list)
    """Extra ``docker run`` arguments (e.g. ``--ulimit nofile=4096``). The network is chosen by
    ``network``, never here."""
    runtime_port: Annotated[int, SPEED] = Field(default=8000, gt=0, lt=65536)
    """The port of the runtime inside the container's own network namespace (``host``: a free port
    of this machine is taken instead). Where and with what limits a container runs is not hashed
    (like a timeout, it changes only what a runaway command gets): run folders resume under it."""
    python_standalone_dir: str | None = "/root"
    """For an image without a runtime of its own (SWE-bench's have none): SWE-ReX's derived image with
    a standalone Python and ``swerex-remote`` there (its Dockerfile downloads Python: once per image,
    on a machine with the internet). ``None``: ``swerex-remote`` from the image's PATH. Images built
    here carry their runtime (label ``agentic_rubrics.runtime``) and ignore it."""
    pull: Literal["never", "always", "missing"] = "missing"
    """When to pull the image."""
    startup_timeout: float = Field(default=180.0, gt=0)
    """Seconds to wait for the container's runtime (after any pull and build)."""

    @field_validator("image")
    @classmethod
    def _known_fields(cls, value: str) -> str:
        try:
            value.format(instance_id="i", swebench_id="s")
        except (KeyError, IndexError, ValueError) as exc:
            raise ValueError(
                f"image {value!r}: only {{instance_id}} and {{swebench_id}} are replaced ({exc})"
            ) from None
        return value

    @field_validator("repo_dir", "conda_root")
    @classmethod
    def _absolute(cls, value: str) -> str:
        if not value.startswith("/") or value.rstrip("/") == "" or ".." in value.split("/"):
            raise ValueError(f"{value!r} must be an absolute folder inside the image, not /")
        return value.rstrip("/")

    @field_validator("conda_env")
    @classmethod
    def _env_name(cls, value: str | None) -> str | None:
        if value is not None and not _CONDA_ENV.fullmatch(value):
            raise ValueError(f"{value!r} is not a conda environment name (letters, digits, _ . -)")
        return value

    @model_validator(mode="after")
    def _network_and_isolation(self) -> SweRexDockerConfig:
        for network in _options(self.docker_args, ("--network", "--net")):
            raise ValueError(
                f"docker_args: --network {network}: the network is chosen by network: internal,"
                " bridge or host"
            )
        if self.no_network and self.network == "host":
            raise ValueError(
                "network: host shares this machine's network namespace: the network cut"
                " (no_network: true) would cut this machine's own network; use network: internal"
            )
        if self.no_network:
            caps = {c.upper() for c in _options(self.docker_args, ("--cap-add",))}
            if "--privileged" in self.docker_args or caps & _NET_CAPS:
                raise ValueError(
                    "docker_args: --privileged or --cap-add NET_ADMIN/NET_RAW would let commands"
                    " restore the network no_network cuts"
                )
        return self

    def image_name(self, instance_id: str) -> str:
        """The image of one task."""
        return self.image.format(
            instance_id=instance_id, swebench_id=swebench_image_id(instance_id)
        )

    def container_spec(self, instance_id: str, image: str | None = None) -> ContainerSpec:
        """How one task's container is started (``image``: another image than the task's)."""
        return ContainerSpec(
            image=image or self.image_name(instance_id),
            network=self.network,
            memory_mib=self.memory_mib,
            pids_limit=self.pids_limit,
            cpus=self.cpus,
            docker_args=tuple(self.docker_args),
            runtime_port=self.runtime_port,
            startup_timeout=self.startup_timeout,
            pull=self.pull,
            python_standalone_dir=self.python_standalone_dir,
            name_hint=instance_id,
        )

    def deployment(self, instance_id: str) -> ContainerDeployment:
        """The container of this task's image (not started)."""
        quiet_swerex()
        return ContainerDeployment(self.container_spec(instance_id))

    def workdir(self, instance_id: str) -> str:
        """``repo_dir``: the same in every image."""
        return self.repo_dir

    def argv(self, command: str) -> list[str]:
        """SWE-bench's images have dash as /bin/sh; the agent's tool is bash."""
        return ["bash", "-c", command]

    async def prepare(self, deployment: Any, where: Where) -> dict[str, str]:
        """Network, history and environment (:func:`prepare_container`)."""
        env, done = await prepare_container(
            self, deployment, instance_id=where.instance_id, base_commit=where.base_commit
        )
        log.info("%s: swerex-docker prepared: %s", where.instance_id, done)
        return env

    async def stop(self, deployment: Any) -> None:
        """:func:`stop_container`."""
        await stop_container(deployment)

    def network_cut_argv(self, container_name: str, image: str, python: str) -> list[str]:
        """The command, run on this machine, that cuts a started container's network: a container
        of the same image in that container's network namespace, with NET_ADMIN for this one
        process (the task's own processes have neither NET_ADMIN nor NET_RAW)."""
        from agentic_rubrics.sandbox.docker_cli import label_args

        return [
            "docker",
            "run",
            "--rm",
            *label_args(),
            "--network",
            f"container:{container_name}",
            "--cap-add",
            "NET_ADMIN",
            "--user",
            "root",
            "--entrypoint",
            python,
            image,
            "-c",
            NETCUT_SOURCE,
        ]

    def environment_argv(self) -> list[str]:
        """The command, run in the container, printing the environment commands get (NUL-separated)."""
        if self.conda_env is None:
            return ["bash", "-c", "env -0"]
        activate = shlex.quote(f"{self.conda_root}/bin/activate")
        return ["bash", "-c", f"source {activate} && conda activate {self.conda_env} && env -0"]

    def history_argvs(self, base_commit: str) -> tuple[list[str], list[str]]:
        """The commands, run in the container, that clean the history, then check it."""
        args = [self.repo_dir, base_commit]
        return (
            ["bash", "-c", CLEAN_HISTORY, "clean-history", *args],
            ["bash", "-c", CHECK_HISTORY, "check-history", *args],
        )


async def prepare_container(
    config: SweRexDockerConfig, deployment: Any, *, instance_id: str, base_commit: str
) -> tuple[dict[str, str], dict[str, Any]]:
    """Network, history and environment of a started container (module docstring).

    Returns the environment commands get and what was done (for the log).

    Raises:
        SandboxError: a step failed, or left something it should have removed.
    """
    done: dict[str, Any] = {}
    if config.no_network:
        done["network"] = await cut_network(config, deployment)
    if config.clean_history:
        clean, check = config.history_argvs(base_commit)
        await _execute(deployment, clean, "cleaning the repository's history", timeout=240)
        report = await _execute(deployment, check, "checking the repository's history", timeout=240)
        problems = history_problems(report, base_commit)
        if problems:
            raise SandboxError(f"{instance_id}: history left in {config.repo_dir}: {problems}")
        done["history"] = report.strip()
    output = await _execute(
        deployment, config.environment_argv(), "reading the environment", timeout=120
    )
    env = parse_environment(output)
    if config.conda_env is not None and env.get("CONDA_DEFAULT_ENV") != config.conda_env:
        raise SandboxError(
            f"{instance_id}: conda environment {config.conda_env!r} is not active after activation"
            f" (CONDA_DEFAULT_ENV={env.get('CONDA_DEFAULT_ENV')!r})"
        )
    done["conda_env"] = config.conda_env
    return {**env, **COMMAND_ENV}, done


async def stop_container(deployment: Any) -> None:
    """Remove the container and its network, never raising (what cannot be removed now is left for
    the next run's sweep, or ``agentic-rubrics clean-containers``)."""
    try:
        await asyncio.wait_for(deployment.stop(), 120)
    except Exception as exc:
        log.warning("cannot stop %s: %s", getattr(deployment, "container_name", "?"), exc)


async def cut_network(config: SweRexDockerConfig, deployment: Any) -> list[str]:
    """Cut a started container's network (refused in this machine's namespace); the addresses kept.

    Raises:
        SandboxError: refused (``network_refused``), or the cut failed or lost the runtime.
    """
    from agentic_rubrics.sandbox.docker_cli import DockerError

    name = str(deployment.container_name)
    await asyncio.to_thread(refuse_host_namespace, name)
    argv = config.network_cut_argv(name, deployment.image, deployment.python)[1:]
    try:
        from agentic_rubrics.sandbox.docker_cli import docker

        stdout = await asyncio.to_thread(docker, argv, timeout=120, what="the network cut")
        lines = stdout.splitlines()
        kept = json.loads(lines[-1])["kept"] if lines else None
        if not isinstance(kept, list) or not kept:
            raise ValueError(f"no report of what was kept: {stdout[-200:]!r}")
    except DockerError as exc:
        if exc.reason == "docker_unavailable":
            raise
        raise SandboxError(
            f"swerex-docker: cannot cut the container's network: {exc}; no_network: false runs"
            " with the network of network: internal only (docs/explorers-and-sandboxes.md)"
        ) from None
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(f"swerex-docker: cannot cut the container's network: {exc}") from None
    await asyncio.to_thread(_no_resolver, name)
    try:
        await _execute(deployment, ["true"], "reaching the runtime", timeout=60)
    except SandboxError as exc:
        raise SandboxError(
            f"swerex-docker: the runtime does not answer once the network is cut to {kept}: its"
            f" connections come from elsewhere here ({exc}); no_network: false runs with the"
            " network of network: internal only (docs/explorers-and-sandboxes.md)"
        ) from exc
    return [str(address) for address in kept]


NO_RESOLVER = "printf 'nameserver 127.0.0.1\\n' > /etc/resolv.conf"
"""A cut container's resolver: nothing listens there, a name lookup fails at once (docker's embedded
DNS, unreachable once cut, makes each one wait 10 s: tests that try the network would time out where
bubblewrap's empty network namespace fails them at once)."""


def _no_resolver(name: str) -> None:
    from agentic_rubrics.sandbox.docker_cli import DockerError, docker

    try:
        docker(["exec", "--user", "root", name, "sh", "-c", NO_RESOLVER], timeout=60)
    except DockerError as exc:
        if exc.reason == "docker_unavailable":
            raise
        log.warning("%s: name lookups stay slow (resolv.conf not replaced): %s", name, exc)


async def _execute(deployment: Any, argv: list[str], what: str, *, timeout: float) -> str:
    """Run ``argv`` in the container (no shell of ours around it); its stdout, or SandboxError."""
    from swerex.runtime.abstract import Command

    request = Command(command=argv, shell=False, timeout=timeout)
    try:
        # SWE-ReX's request has no deadline of its own when the container stops answering
        response = await asyncio.wait_for(deployment.runtime.execute(request), timeout + 30)
    except Exception as exc:
        raise SandboxError(f"swerex-docker: {what}: {exc!r}") from exc
    if response.exit_code != 0:
        said = f"{response.stderr or ''}{response.stdout or ''}".strip()[-500:]
        raise SandboxError(f"swerex-docker: {what} failed (exit {response.exit_code}): {said}")
    return str(response.stdout)
