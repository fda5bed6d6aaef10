"""The ``swerex-docker`` sandbox on SWE-bench's instance images: its configuration, the deployment SWE-ReX
starts, and what is done before the agent's first command.

SWE-ReX's ``DockerDeployment`` runs (with the defaults)::

    docker build -q --build-arg BASE_IMAGE=swebench/sweb.eval.x86_64.<id>:latest -   # once per image
    docker run --rm -p PORT:8000 --cap-drop NET_RAW --name NAME IMAGE_ID \\
        /bin/sh -c '/root/python3.11/bin/swerex-remote --auth-token TOKEN'

the build adding a standalone Python with ``swerex-remote`` (SWE-bench's images have neither). Once its
runtime answers, :func:`prepare_container`, in order:

1. ``no_network``: ``docker exec --privileged --user root NAME PYTHON -c <netcut.py>`` deletes every
   route but a host route to the bridge's gateway (see :mod:`~agentic_rubrics.sandbox.netcut`), then
   checks the runtime still answers;
2. ``clean_history``: replaces ``/testbed/.git`` by a one-commit history at HEAD, which must be the task's
   base commit when it is known (SWE-bench's images keep the clone's later commits: tags, reflog, packed
   objects, the fix among them), then checks no other commit, ref or object is left;
3. ``conda_env``: runs the harness's ``source /opt/miniconda3/bin/activate && conda activate testbed``
   once in bash and gives every command the resulting environment.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import ConfigDict, Field, field_validator, model_validator

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox.base import Where
from agentic_rubrics.sandbox.swerex import SweRexConfig, quiet_swerex, swebench_image_id

log = logging.getLogger(__name__)

SWEBENCH_IMAGE = "swebench/sweb.eval.x86_64.{swebench_id}:latest"
NETCUT_SOURCE = (Path(__file__).parent / "netcut.py").read_text(encoding="utf-8")
# added to every command's environment (no pager waits for a terminal, no stray bytecode)
COMMAND_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "PYTHONDONTWRITEBYTECODE": "1"}
_CONDA_ENV = re.compile(r"[A-Za-z0-9_.-]+")
# network modes where SWE-ReX's published port cannot reach the runtime
_NO_PORTS = ("none", "host")
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
    """A container per task from SWE-bench's instance image, the repository at ``/testbed``."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    needs_repo: ClassVar[bool] = False
    type: Literal["swerex-docker"] = "swerex-docker"
    """Discriminator."""
    image: str = SWEBENCH_IMAGE
    """Image name; ``{instance_id}`` and ``{swebench_id}`` (SWE-bench's spelling of the id: ``__``
    becomes ``_1776_``, lower case) are replaced."""
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
    no_network: bool = True
    """After start-up, cut the container's network down to the one address its runtime is reached
    from, and start it without NET_RAW (docs/explorers-and-sandboxes.md)."""
    docker_args: list[str] = Field(default_factory=list)
    """Extra ``docker run`` arguments (e.g. ``--memory=10g``, ``--pids-limit=1024``). SWE-ReX reaches
    its runtime through a published port, so ``--network none``/``host``/``container:...`` cannot
    work: use ``no_network``."""
    python_standalone_dir: str | None = "/root"
    """SWE-ReX builds a derived image with a standalone Python and ``swerex-remote`` there (the build
    needs the network, once per image); ``None``: the container installs swe-rex with pip when it
    starts (it needs the network then)."""
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
    def _ports_and_isolation(self) -> SweRexDockerConfig:
        networks = _options(self.docker_args, ("--network", "--net"))
        for network in networks:
            if network in _NO_PORTS or network.startswith("container:"):
                raise ValueError(
                    f"docker_args: --network {network} leaves SWE-ReX's published port unreachable;"
                    " use no_network: true (the network is cut after start-up)"
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

    def deployment_config(self, instance_id: str) -> Any:
        """SWE-ReX's ``DockerDeploymentConfig`` for one task."""
        from swerex.deployment.config import DockerDeploymentConfig

        isolation = ["--cap-drop", "NET_RAW"] if self.no_network else []
        return DockerDeploymentConfig(
            image=self.image_name(instance_id),
            docker_args=[*isolation, *self.docker_args],
            python_standalone_dir=self.python_standalone_dir,
            pull=self.pull,
            startup_timeout=self.startup_timeout,
        )

    def deployment(self, instance_id: str) -> Any:
        """SWE-ReX's docker deployment of this task's image."""
        quiet_swerex()
        return self.deployment_config(instance_id).get_deployment()

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

    def runtime_python(self) -> str:
        """A Python every container of this configuration has (the standalone one when built)."""
        if self.python_standalone_dir:
            return f"{self.python_standalone_dir}/python3.11/bin/python3"
        return "python3"

    def network_cut_argv(self, container_name: str) -> list[str]:
        """The command, run on this machine, that cuts a started container's network."""
        return [
            "docker",
            "exec",
            "--privileged",
            "--user",
            "root",
            container_name,
            self.runtime_python(),
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


_GIT = "g() { git -c safe.directory='*' -c gc.auto=0 -c maintenance.auto=false \"$@\"; }\n"

CLEAN_HISTORY = (
    'set -euo pipefail\ncd -- "$1"\nbase=$2\n'
    + _GIT
    + r"""
if [ ! -e .git ]; then echo "no-git"; exit 0; fi
head=$(g rev-parse --verify --quiet 'HEAD^{commit}') || { echo "$PWD/.git has no HEAD commit" >&2; exit 3; }
if [ -n "$base" ] && [ "$head" != "$base" ]; then
  echo "HEAD is $head, not the task's base commit $base" >&2; exit 4
fi
branch=$(g symbolic-ref --quiet HEAD || true)
new=$(mktemp -d)
trap 'rm -rf -- "$new"' EXIT
g init -q "$new"
g -C "$new" fetch -q --no-tags --depth 1 "file://$PWD" HEAD
[ "$(g -C "$new" rev-parse --verify 'FETCH_HEAD^{commit}')" = "$head" ] || { echo "fetched another commit" >&2; exit 5; }
if [ -n "$branch" ]; then g -C "$new" symbolic-ref HEAD "$branch"; g -C "$new" update-ref HEAD "$head"
else g -C "$new" update-ref --no-deref HEAD "$head"; fi
rm -rf -- "$new/.git/FETCH_HEAD" "$new/.git/logs" .git
mv -- "$new/.git" .git
g read-tree HEAD
g update-index -q --refresh >/dev/null || true
echo "history $head"
"""
)

CHECK_HISTORY = (
    'set -euo pipefail\ncd -- "$1"\nbase=$2\n'
    + _GIT
    + r"""
if [ ! -e .git ]; then echo "no-git"; exit 0; fi
head=$(g rev-parse --verify 'HEAD^{commit}')
commits=$(g rev-list --count HEAD)
all_commits=$(g rev-list --count --all --reflog HEAD)
other_refs=$(g for-each-ref --format='%(objectname)' | { grep -cvx "$head" || true; })
stray_objects=$(comm -23 <(g cat-file --batch-all-objects --batch-check='%(objectname)' | sort -u) \
  <(g rev-list --objects HEAD | cut -d' ' -f1 | sort -u) | wc -l)
echo "head=$head commits=$commits all_commits=$all_commits other_refs=$other_refs stray_objects=$stray_objects"
"""
)


def history_problems(report: str, base_commit: str) -> list[str]:
    """What the history check's line says is left (nothing: an empty list)."""
    if report.strip() == "no-git":
        return []
    fields = {}
    for item in report.split():
        name, _, value = item.partition("=")
        fields[name] = value
    expected = {"commits": "1", "all_commits": "1", "other_refs": "0", "stray_objects": "0"}
    if set(fields) != {"head", *expected}:
        return [f"unreadable history check: {report[:200]!r}"]
    problems = [f"{k}={fields[k]} (expected {v})" for k, v in expected.items() if fields[k] != v]
    if base_commit and fields["head"] != base_commit:
        problems.append(f"HEAD {fields['head']} is not the base commit {base_commit}")
    return problems


def parse_environment(output: str) -> dict[str, str]:
    """``env -0``'s output as a mapping."""
    pairs = (entry.partition("=") for entry in output.split("\0") if "=" in entry)
    return {name: value for name, _, value in pairs if name and "\n" not in name}


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
        done["network"] = await _cut_network(config, deployment)
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
    """Stop SWE-ReX's docker deployment, never raising; the container is killed by name when SWE-ReX
    cannot stop it (it asks the runtime to close first, and gives up when the runtime is unreachable)."""
    name = deployment.container_name
    try:
        await asyncio.wait_for(deployment.stop(), 60)
    except Exception:
        if name:
            with contextlib.suppress(OSError, subprocess.TimeoutExpired):
                argv = ["docker", "kill", str(name)]
                await asyncio.to_thread(
                    subprocess.run, argv, capture_output=True, timeout=60, check=False
                )


async def _cut_network(config: SweRexDockerConfig, deployment: Any) -> list[str]:
    argv = config.network_cut_argv(str(deployment.container_name))
    try:
        proc = await asyncio.to_thread(
            subprocess.run, argv, capture_output=True, text=True, timeout=120, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SandboxError(f"swerex-docker: cannot cut the container's network: {exc}") from exc
    try:
        if proc.returncode != 0:
            raise ValueError(proc.stderr.strip()[-500:] or f"exit status {proc.returncode}")
        lines = proc.stdout.strip().splitlines()
        kept = json.loads(lines[-1])["kept"] if lines else None
        if not isinstance(kept, list) or not kept:
            raise ValueError(f"no report of what was kept: {proc.stdout.strip()[-200:]!r}")
    except (ValueError, KeyError, TypeError) as exc:
        raise SandboxError(
            f"swerex-docker: cannot cut the container's network: {exc}; no_network: false runs"
            " with docker's network instead (docs/explorers-and-sandboxes.md)"
        ) from None
    try:
        await _execute(deployment, ["true"], "reaching the runtime", timeout=60)
    except SandboxError as exc:
        raise SandboxError(
            f"swerex-docker: the runtime does not answer once the network is cut to {kept}: its"
            f" connections come from elsewhere here ({exc}); no_network: false runs with docker's"
            " network instead (docs/explorers-and-sandboxes.md)"
        ) from exc
    return [str(address) for address in kept]


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
