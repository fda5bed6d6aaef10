"""swerex-docker on SWE-bench's instance images, with no docker daemon here.

The configuration, the container's ``docker run`` and the commands are asserted exactly. The
end-to-end tests start the sandbox's real container deployment against ``tests/fake_docker.py`` (a
docker command line that records its calls and runs the "container" as a real ``swerex-remote`` here),
so the ``docker`` argv is the one really built, and the history, conda and bash steps really run, on a
repository laid out as SWE-bench's setup script leaves it. The network cut itself is tested in a real
network namespace (test_sandbox_netcut.py) and in real containers (test_docker_real.py).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox import netcut, open_sandbox
from agentic_rubrics.sandbox.docker_cli import label_args
from agentic_rubrics.sandbox.docker_container import ContainerDeployment, free_port
from agentic_rubrics.sandbox.swerex_docker import (
    NETCUT_SOURCE,
    NO_RESOLVER,
    SweRexDockerConfig,
    history_problems,
)

GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.org",
    "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.org",
    "GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1",
}  # fmt: skip
IMAGE = "swebench/sweb.eval.x86_64.demo_1776_pkg-7:latest"
CUT_REPORT = '{"kept": ["172.17.0.1"], "deleted": 5}\n'


def git(cwd: Path, *args: str) -> str:
    out = subprocess.run(
        ["git", *args], cwd=cwd, env={**os.environ, **GIT_ENV}, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


class ImageRepo:
    """/testbed as SWE-bench's setup script leaves it: a clone reset to the base commit, remote removed
    (its tags, reflog and packed objects still hold the later commits, the fix among them), a tracked
    file edited by the install step."""

    def __init__(self, root: Path) -> None:
        upstream = root / "upstream"
        upstream.mkdir()
        git(upstream, "init", "-q", "-b", "main")
        (upstream / "pkg.py").write_text("def f():\n    return 1\n")
        (upstream / "setup.cfg").write_text("[tool:pytest]\n")
        git(upstream, "add", ".")
        git(upstream, "commit", "-qm", "one")
        (upstream / "pkg.py").write_text("def f():\n    return 2\n")
        git(upstream, "commit", "-qam", "base")
        self.base = git(upstream, "rev-parse", "HEAD")
        (upstream / "pkg.py").write_text("def f():\n    return 3  # THE FIX\n")
        git(upstream, "commit", "-qam", "Fix f (the gold patch)")
        self.fix = git(upstream, "rev-parse", "HEAD")
        git(upstream, "tag", "v9.0")
        self.path = root / "testbed"
        git(root, "clone", "-q", "-o", "origin", f"file://{upstream}", str(self.path))
        git(self.path, "reset", "-q", "--hard", self.base)
        git(self.path, "remote", "remove", "origin")
        (self.path / "setup.cfg").write_text("[tool:pytest]\naddopts = -rA\n")


@pytest.fixture
def image_repo(tmp_path: Path) -> ImageRepo:
    return ImageRepo(tmp_path)


@pytest.fixture
def conda_root(tmp_path: Path) -> Path:
    """A conda installation reduced to what activation does: ``conda activate`` exports the variables."""
    root = tmp_path / "conda"
    (root / "bin").mkdir(parents=True)
    env_bin = root / "envs" / "testbed" / "bin"
    env_bin.mkdir(parents=True)
    (env_bin / "python").write_text("#!/bin/sh\necho testbed-python\n")
    (env_bin / "python").chmod(0o755)
    (root / "bin" / "activate").write_text(
        f'conda() {{\n  if [ "$1" = activate ] && [ -d "{root}/envs/$2" ]; then\n'
        f'    export CONDA_DEFAULT_ENV="$2" CONDA_PREFIX="{root}/envs/$2" PATH="{root}/envs/$2/bin:$PATH"\n'
        '  else echo "EnvironmentNameNotFound: $2" >&2; return 1; fi\n}\n'
    )
    return root


@pytest.fixture
def fake_docker(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[[], list[list[str]]]:
    """``docker`` on PATH is tests/fake_docker.py; returns a reader of the calls it got."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = Path(__file__).with_name("fake_docker.py")
    (bin_dir / "docker").write_text(f'#!/bin/sh\nexec "{sys.executable}" "{script}" "$@"\n')
    (bin_dir / "docker").chmod(0o755)
    log = tmp_path / "docker-calls.jsonl"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("FAKE_DOCKER_LOG", str(log))
    monkeypatch.setenv("FAKE_DOCKER_IMAGES", IMAGE)
    monkeypatch.setenv("FAKE_DOCKER_SWEREX", str(Path(sys.executable).parent / "swerex-remote"))
    monkeypatch.setenv("FAKE_DOCKER_EXEC_STDOUT", CUT_REPORT)

    def calls() -> list[list[str]]:
        if not log.exists():
            return []
        return [json.loads(line) for line in log.read_text().splitlines()]

    return calls


def start(config: SweRexDockerConfig, base_commit: str, commands: list[str]) -> dict[str, Any]:
    """Open the sandbox for task ``demo__pkg-7``, run ``commands``, read pkg.py, close it."""

    async def go() -> dict[str, Any]:
        sb = await open_sandbox(
            config,
            instance_id="demo__pkg-7",
            repo_path=None,
            model_commands=True,
            base_commit=base_commit,
        )
        try:
            results: dict[str, Any] = {c: await sb.run(c, timeout=60) for c in commands}
            results["pkg.py"] = await sb.read_file("pkg.py")
            return results
        finally:
            await sb.close()

    return asyncio.run(go())


SWEEP = (["ps"], ["network", "ls"], ["image", "ls"])


def docker_calls(calls: list[list[str]]) -> list[list[str]]:
    """The calls but the once-per-process sweep of what earlier runs left, and the polls of the
    container's state while its runtime starts (as many as it takes)."""
    polls = ["inspect", "--format", "{{json .State}}"]
    return [c for c in calls if not any(c[: len(s)] == s for s in (*SWEEP, polls))]


def run_call(calls: list[list[str]]) -> tuple[str, str, str]:
    """(port, container name, token) of the one ``docker run -d`` call."""
    (run,) = [c for c in calls if c[:2] == ["run", "-d"]]
    port, name, token = run[run.index("--port") + 1], run[4], run[-1]
    assert re.fullmatch(r"\d+", port)
    assert re.fullmatch(r"agentic-rubrics-demo__pkg-7-[0-9a-f]{8}", name)
    assert re.fullmatch(r"[0-9a-f]{32}", token)
    return port, name, token


def config(image_repo: ImageRepo, conda_root: Path, **fields: Any) -> SweRexDockerConfig:
    """The sandbox on the fake's "image" (a free port: tests run side by side)."""
    return SweRexDockerConfig(
        repo_dir=str(image_repo.path), conda_root=str(conda_root), runtime_port=free_port(),
        **fields,
    )  # fmt: skip


def test_container_of_a_swebench_instance() -> None:
    config = SweRexDockerConfig()
    assert config.image_name("django__django-11099") == (
        "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    )
    for iid in ("django__django-11099", "sympy__sympy-20590", "Pylint-Dev__pylint-7080"):
        harness_key = f"swebench/sweb.eval.x86_64.{iid.lower()}:latest".replace("__", "_1776_")
        assert (
            config.image_name(iid) == harness_key
        )  # swebench.harness.test_spec.instance_image_key
    deployment = config.deployment("django__django-11099")
    assert isinstance(deployment, ContainerDeployment)
    assert deployment.spec.network == "internal" and deployment.spec.pull == "missing"
    deployment.network = "net"
    name = deployment.container_name
    assert re.fullmatch(r"agentic-rubrics-django__django-11099-[0-9a-f]{8}", name)
    assert deployment.run_argv("img", "/r/swerex-remote", "0.0.0.0", 8000, "tok") == [
        "run", "-d", "--init", "--name", name, *label_args(), "--network", "net",
        "--cap-drop", "NET_RAW", "--memory", "8192m", "--memory-swap", "8192m",
        "--pids-limit", "2048", "img", "/r/swerex-remote", "--host", "0.0.0.0", "--port", "8000",
        "--auth-token", "tok",
    ]  # fmt: skip
    host = SweRexDockerConfig(network="host", no_network=False, memory_mib=None, cpus=1.5)
    argv = host.deployment("a__b-1").run_argv("img", "rex", "127.0.0.1", 5, "t")
    assert argv[argv.index("--network") + 1] == "host" and "--memory" not in argv
    assert argv[argv.index("--cpus") + 1] == "1.5"
    assert config.environment_argv() == [
        "bash", "-c", "source /opt/miniconda3/bin/activate && conda activate testbed && env -0",
    ]  # fmt: skip
    assert SweRexDockerConfig(conda_env=None).environment_argv() == ["bash", "-c", "env -0"]
    assert config.network_cut_argv("box", "img", "/usr/bin/python3") == [
        "docker", "run", "--rm", *label_args(), "--network", "container:box",
        "--cap-add", "NET_ADMIN", "--user", "root", "--entrypoint", "/usr/bin/python3", "img",
        "-c", NETCUT_SOURCE,
    ]  # fmt: skip
    assert Path(netcut.__file__).read_text(encoding="utf-8") == NETCUT_SOURCE
    clean, check = config.history_argvs("abc")
    assert clean[:2] == check[:2] == ["bash", "-c"]
    assert clean[3:] == ["clean-history", "/testbed", "abc"]
    assert check[3:] == ["check-history", "/testbed", "abc"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"docker_args": ["--network", "none"]}, "--network none: the network is chosen by"),
        ({"docker_args": ["--net=host"]}, "--network host: the network is chosen by"),
        ({"docker_args": ["--network=container:x"]}, "--network container:x: the network is"),
        ({"network": "host"}, "the network cut (no_network: true) would cut this machine's own"),
        ({"network": "none"}, "Input should be 'internal', 'bridge' or 'host'"),
        ({"memory_mib": 8}, "greater than or equal to 16"),
        ({"docker_args": ["--privileged"]}, "would let commands restore the network"),
        ({"docker_args": ["--cap-add=NET_ADMIN"]}, "would let commands restore the network"),
        ({"docker_args": ["--cap-add", "net_raw"]}, "would let commands restore the network"),
        ({"image": "x/{iid}:latest"}, "only {instance_id} and {swebench_id} are replaced"),
        ({"repo_dir": "testbed"}, "must be an absolute folder"),
        ({"repo_dir": "/"}, "must be an absolute folder"),
        ({"conda_env": "testbed; curl x"}, "is not a conda environment name"),
        ({"networks": "none"}, "Extra inputs are not permitted"),
    ],
)
def test_config_refuses(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        SweRexDockerConfig(**fields)


def test_config_accepts_what_keeps_the_network_its_own() -> None:
    SweRexDockerConfig(docker_args=["--ulimit", "nofile=4096"], network="bridge")
    SweRexDockerConfig(no_network=False, docker_args=["--privileged"])
    SweRexDockerConfig(no_network=False, network="host")


def test_history_scripts_on_a_swebench_style_clone(image_repo: ImageRepo) -> None:
    config = SweRexDockerConfig(repo_dir=str(image_repo.path))
    clean, check = config.history_argvs(image_repo.base)

    def report() -> str:
        out = subprocess.run(check, capture_output=True, text=True, check=True)
        return out.stdout

    # as the image holds it: the tag, the reflog and the objects of the fix
    assert history_problems(report(), image_repo.base) == [
        "commits=2 (expected 1)",
        "all_commits=3 (expected 1)",
        "other_refs=1 (expected 0)",
        "stray_objects=3 (expected 0)",
    ]
    assert git(image_repo.path, "show", f"{image_repo.fix}:pkg.py").endswith("# THE FIX")
    wrong = config.history_argvs(image_repo.fix)[0]
    refused = subprocess.run(wrong, capture_output=True, text=True)
    assert refused.returncode == 4
    assert (
        f"HEAD is {image_repo.base}, not the task's base commit {image_repo.fix}" in refused.stderr
    )
    subprocess.run(clean, capture_output=True, text=True, check=True)
    assert history_problems(report(), image_repo.base) == []
    assert history_problems(report(), image_repo.fix) == [
        f"HEAD {image_repo.base} is not the base commit {image_repo.fix}"
    ]
    assert git(image_repo.path, "rev-parse", "HEAD") == image_repo.base  # the original hash
    assert git(image_repo.path, "status", "--porcelain") == "M setup.cfg"  # the install's edit kept
    assert git(image_repo.path, "branch", "--show-current") == "main"


def test_swebench_instance_end_to_end(
    image_repo: ImageRepo, conda_root: Path, fake_docker: Callable[[], list[list[str]]]
) -> None:
    commands = [
        "git log --all --reflog --format=%H",
        f"git cat-file -e {image_repo.fix}",
        "git tag",
        "echo $CONDA_DEFAULT_ENV; python",
        "[[ $BASH ]] && echo bash",
        "pwd",
    ]
    out = start(config(image_repo, conda_root), image_repo.base, commands)
    assert out["git log --all --reflog --format=%H"].output.strip() == image_repo.base
    assert out[f"git cat-file -e {image_repo.fix}"].exit_code != 0
    assert out["git tag"].output == ""
    assert out["echo $CONDA_DEFAULT_ENV; python"].output == "testbed\ntestbed-python\n"
    assert out["[[ $BASH ]] && echo bash"].output == "bash\n"
    assert out["pwd"].output == f"{image_repo.path}\n"
    assert out["pkg.py"] == "def f():\n    return 2\n"
    calls = docker_calls(fake_docker())
    port, name, token = run_call(calls)
    rex = os.environ["FAKE_DOCKER_SWEREX"]
    assert calls == [
        ["image", "inspect", "--format", "{{json .Config.Labels}}", IMAGE],
        ["network", "create", "--internal", *label_args(), name],
        [
            "run", "-d", "--init", "--name", name, *label_args(), "--network", name,
            "--cap-drop", "NET_RAW", "--memory", "8192m", "--memory-swap", "8192m",
            "--pids-limit", "2048", IMAGE, rex, "--host", "0.0.0.0", "--port", port,
            "--auth-token", token,
        ],
        ["inspect", "--format", "{{json .NetworkSettings.Networks}}", name],
        ["inspect", "--format", "{{.HostConfig.NetworkMode}} {{.State.Pid}}", name],
        [
            "run", "--rm", *label_args(), "--network", f"container:{name}", "--cap-add",
            "NET_ADMIN", "--user", "root", "--entrypoint", "python3", IMAGE, "-c", NETCUT_SOURCE,
        ],
        # after the cut, the container's resolver points where nothing listens (a lookup fails at once)
        ["exec", "--user", "root", name, "sh", "-c", NO_RESOLVER],
        ["rm", "-f", "-v", name],
        ["network", "rm", name],
    ]  # fmt: skip


def test_with_the_network_left_on(
    image_repo: ImageRepo, conda_root: Path, fake_docker: Callable[[], list[list[str]]]
) -> None:
    start(config(image_repo, conda_root, no_network=False), image_repo.base, [])
    calls = docker_calls(fake_docker())
    run_call(calls)
    assert [c[0] for c in calls] == ["image", "network", "run", "inspect", "rm", "network"]


def test_host_networking_has_no_network_of_its_own(
    image_repo: ImageRepo, conda_root: Path, fake_docker: Callable[[], list[list[str]]]
) -> None:
    cfg = config(image_repo, conda_root, no_network=False, network="host")
    out = start(cfg, image_repo.base, ["pwd"])
    assert out["pwd"].output == f"{image_repo.path}\n"
    calls = docker_calls(fake_docker())
    port, _, _ = run_call(calls)
    (run,) = [c for c in calls if c[:2] == ["run", "-d"]]
    assert run[run.index("--host") + 1] == "127.0.0.1" and int(port) != cfg.runtime_port
    assert [c[0] for c in calls] == ["image", "run", "rm"]


def test_the_cut_is_refused_in_this_machines_namespace(
    image_repo: ImageRepo,
    conda_root: Path,
    fake_docker: Callable[[], list[list[str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A container that reports host networking (however it came to be started so) never gets the
    cut: refused before anything runs in it."""
    monkeypatch.setenv("FAKE_DOCKER_NETWORK_MODE", "host")
    with pytest.raises(SandboxError, match=r"refusing to cut the network of .*'host'") as info:
        start(config(image_repo, conda_root), image_repo.base, ["true"])
    assert getattr(info.value, "reason", None) == "network_refused"
    calls = docker_calls(fake_docker())
    assert not [c for c in calls if c[:2] == ["run", "--rm"]]  # the cut never started
    assert calls[-2][:3] == ["rm", "-f", "-v"]


def test_a_wrong_base_commit_stops_the_container(
    image_repo: ImageRepo, conda_root: Path, fake_docker: Callable[[], list[list[str]]]
) -> None:
    with pytest.raises(SandboxError, match=f"not the task's base commit {image_repo.fix}"):
        start(config(image_repo, conda_root), image_repo.fix, ["true"])
    _, name, _ = run_call(fake_docker())
    assert fake_docker()[-2:] == [["rm", "-f", "-v", name], ["network", "rm", name]]


def test_a_failed_network_cut_stops_before_anything_else(
    image_repo: ImageRepo,
    conda_root: Path,
    fake_docker: Callable[[], list[list[str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_DOCKER_EXEC_STATUS", "1")
    monkeypatch.setenv("FAKE_DOCKER_EXEC_STDOUT", "")
    monkeypatch.setenv("FAKE_DOCKER_EXEC_STDERR", "network cut failed: no IPv4 default route\n")
    with pytest.raises(
        SandboxError, match=r"cannot cut the container's network: the network cut failed .* no IPv4"
    ):
        start(config(image_repo, conda_root), image_repo.base, ["true"])
    calls = docker_calls(fake_docker())
    assert [c[0] for c in calls] == [
        "image", "network", "run", "inspect", "inspect", "run", "rm", "network",
    ]  # fmt: skip
    assert git(image_repo.path, "tag") == "v9.0"  # the history step never ran


def test_a_runtime_lost_by_the_cut_is_an_error(
    image_repo: ImageRepo,
    conda_root: Path,
    fake_docker: Callable[[], list[list[str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_DOCKER_EXEC_KILLS", "1")
    with pytest.raises(SandboxError, match=r"does not answer once the network is cut to \['172"):
        start(config(image_repo, conda_root), image_repo.base, ["true"])
    _, name, _ = run_call(fake_docker())
    assert fake_docker()[-2] == ["rm", "-f", "-v", name]


def test_a_missing_conda_environment(
    image_repo: ImageRepo, conda_root: Path, fake_docker: Callable[[], list[list[str]]]
) -> None:
    cfg = config(image_repo, conda_root, conda_env="py27")
    with pytest.raises(SandboxError, match=r"reading the environment failed .*NotFound: py27"):
        start(cfg, image_repo.base, ["true"])
    assert fake_docker()[-2][0] == "rm"


def test_an_image_that_is_not_here_is_not_pulled_with_pull_never(
    image_repo: ImageRepo, conda_root: Path, fake_docker: Callable[[], list[list[str]]]
) -> None:
    cfg = config(image_repo, conda_root, image="nowhere/{swebench_id}", pull="never")
    with pytest.raises(SandboxError, match="image nowhere/demo_1776_pkg-7 is not on this machine"):
        start(cfg, image_repo.base, ["true"])
    assert [c[0] for c in docker_calls(fake_docker())] == ["image", "rm"]  # nothing started
