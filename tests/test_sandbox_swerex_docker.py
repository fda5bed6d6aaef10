"""swerex-docker on SWE-bench's instance images, with no docker daemon here.

The configuration, SWE-ReX's deployment config and the commands are asserted exactly. The end-to-end
tests start SWE-ReX's real ``DockerDeployment`` against ``tests/fake_docker.py`` (a docker command line
that records its calls and runs the "container" as a real ``swerex-remote`` here), so the ``docker``
argv is the one SWE-ReX really builds, and the history, conda and bash steps really run, on a
repository laid out as SWE-bench's setup script leaves it. The network cut itself is tested in a real
network namespace (test_sandbox_netcut.py).
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
from agentic_rubrics.sandbox.swerex_docker import (
    NETCUT_SOURCE,
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


def run_call(calls: list[list[str]]) -> tuple[str, str, str, str]:
    """(port, container name, image id, token) of the one ``docker run`` call."""
    (run,) = [c for c in calls if c[0] == "run"]
    port, name, image_id = run[3].split(":")[0], run[run.index("--name") + 1], run[-4]
    token = run[-1].rsplit(" ", 1)[1]
    assert re.fullmatch(r"\d+", port)
    assert re.fullmatch(r"swebenchsweb\.eval\.x86_64\.demo_1776_pkg-7latest-[0-9a-f-]{36}", name)
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", image_id)
    assert re.fullmatch(r"[0-9a-f-]{36}", token)
    return port, name, image_id, token


def test_deployment_config_for_a_swebench_instance() -> None:
    config = SweRexDockerConfig()
    assert config.image_name("django__django-11099") == (
        "swebench/sweb.eval.x86_64.django_1776_django-11099:latest"
    )
    for iid in ("django__django-11099", "sympy__sympy-20590", "Pylint-Dev__pylint-7080"):
        harness_key = f"swebench/sweb.eval.x86_64.{iid.lower()}:latest".replace("__", "_1776_")
        assert (
            config.image_name(iid) == harness_key
        )  # swebench.harness.test_spec.instance_image_key
    assert config.deployment_config("django__django-11099").model_dump() == {
        "image": "swebench/sweb.eval.x86_64.django_1776_django-11099:latest",
        "port": None,
        "docker_args": ["--cap-drop", "NET_RAW"],
        "startup_timeout": 180.0,
        "pull": "missing",
        "remove_images": False,
        "python_standalone_dir": "/root",
        "platform": None,
        "remove_container": True,
        "container_runtime": "docker",
        "type": "docker",
    }
    open_net = SweRexDockerConfig(no_network=False, docker_args=["--memory=10g"])
    assert open_net.deployment_config("a__b-1").docker_args == ["--memory=10g"]
    assert config.environment_argv() == [
        "bash", "-c", "source /opt/miniconda3/bin/activate && conda activate testbed && env -0",
    ]  # fmt: skip
    assert SweRexDockerConfig(conda_env=None).environment_argv() == ["bash", "-c", "env -0"]
    assert config.network_cut_argv("box") == [
        "docker", "exec", "--privileged", "--user", "root", "box",
        "/root/python3.11/bin/python3", "-c", NETCUT_SOURCE,
    ]  # fmt: skip
    assert Path(netcut.__file__).read_text(encoding="utf-8") == NETCUT_SOURCE
    no_build = SweRexDockerConfig(python_standalone_dir=None)
    assert no_build.network_cut_argv("box")[6] == "python3"
    clean, check = config.history_argvs("abc")
    assert clean[:2] == check[:2] == ["bash", "-c"]
    assert clean[3:] == ["clean-history", "/testbed", "abc"]
    assert check[3:] == ["check-history", "/testbed", "abc"]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"docker_args": ["--network", "none"]}, "--network none leaves SWE-ReX's published port"),
        ({"docker_args": ["--net=host"]}, "--network host leaves"),
        ({"docker_args": ["--network=container:x"]}, "--network container:x leaves"),
        ({"docker_args": ["--privileged"]}, "would let commands restore the network"),
        ({"docker_args": ["--cap-add=NET_ADMIN"]}, "would let commands restore the network"),
        ({"docker_args": ["--cap-add", "net_raw"]}, "would let commands restore the network"),
        ({"image": "x/{iid}:latest"}, "only {instance_id} and {swebench_id} are replaced"),
        ({"repo_dir": "testbed"}, "must be an absolute folder"),
        ({"repo_dir": "/"}, "must be an absolute folder"),
        ({"conda_env": "testbed; curl x"}, "is not a conda environment name"),
        ({"network": "none"}, "Extra inputs are not permitted"),
    ],
)
def test_config_refuses(fields: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        SweRexDockerConfig(**fields)


def test_config_accepts_what_keeps_the_port() -> None:
    SweRexDockerConfig(docker_args=["--network", "mynet", "--pids-limit=1024"])
    SweRexDockerConfig(no_network=False, docker_args=["--privileged"])


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
    config = SweRexDockerConfig(repo_dir=str(image_repo.path), conda_root=str(conda_root))
    commands = [
        "git log --all --reflog --format=%H",
        f"git cat-file -e {image_repo.fix}",
        "git tag",
        "echo $CONDA_DEFAULT_ENV; python",
        "[[ $BASH ]] && echo bash",
        "pwd",
    ]
    out = start(config, image_repo.base, commands)
    assert out["git log --all --reflog --format=%H"].output.strip() == image_repo.base
    assert out[f"git cat-file -e {image_repo.fix}"].exit_code != 0
    assert out["git tag"].output == ""
    assert out["echo $CONDA_DEFAULT_ENV; python"].output == "testbed\ntestbed-python\n"
    assert out["[[ $BASH ]] && echo bash"].output == "bash\n"
    assert out["pwd"].output == f"{image_repo.path}\n"
    assert out["pkg.py"] == "def f():\n    return 2\n"
    calls = fake_docker()
    port, name, image_id, token = run_call(calls)
    assert calls == [
        ["inspect", IMAGE],
        ["build", "-q", "--build-arg", f"BASE_IMAGE={IMAGE}", "-"],
        [
            "run", "--rm", "-p", f"{port}:8000", "--cap-drop", "NET_RAW", "--name", name, image_id,
            "/bin/sh", "-c", f"/root/python3.11/bin/swerex-remote --auth-token {token}",
        ],
        [
            "exec", "--privileged", "--user", "root", name,
            "/root/python3.11/bin/python3", "-c", NETCUT_SOURCE,
        ],
        ["kill", name],
    ]  # fmt: skip


def test_with_the_network_left_on(
    image_repo: ImageRepo, conda_root: Path, fake_docker: Callable[[], list[list[str]]]
) -> None:
    config = SweRexDockerConfig(
        repo_dir=str(image_repo.path), conda_root=str(conda_root), no_network=False
    )
    start(config, image_repo.base, [])
    calls = fake_docker()
    port, name, _, _ = run_call(calls)
    assert [c[0] for c in calls] == ["inspect", "build", "run", "kill"]
    assert calls[2][1:6] == ["--rm", "-p", f"{port}:8000", "--name", name]


def test_a_wrong_base_commit_stops_the_container(
    image_repo: ImageRepo, conda_root: Path, fake_docker: Callable[[], list[list[str]]]
) -> None:
    config = SweRexDockerConfig(repo_dir=str(image_repo.path), conda_root=str(conda_root))
    with pytest.raises(SandboxError, match=f"not the task's base commit {image_repo.fix}"):
        start(config, image_repo.fix, ["true"])
    _, name, _, _ = run_call(fake_docker())
    assert fake_docker()[-1] == ["kill", name]


def test_a_failed_network_cut_stops_before_anything_else(
    image_repo: ImageRepo,
    conda_root: Path,
    fake_docker: Callable[[], list[list[str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_DOCKER_EXEC_STATUS", "1")
    monkeypatch.setenv("FAKE_DOCKER_EXEC_STDOUT", "")
    monkeypatch.setenv("FAKE_DOCKER_EXEC_STDERR", "network cut failed: no IPv4 default route\n")
    config = SweRexDockerConfig(repo_dir=str(image_repo.path), conda_root=str(conda_root))
    with pytest.raises(
        SandboxError, match="cannot cut the container's network: network cut failed"
    ):
        start(config, image_repo.base, ["true"])
    assert [c[0] for c in fake_docker()] == ["inspect", "build", "run", "exec", "kill"]
    assert git(image_repo.path, "tag") == "v9.0"  # the history step never ran


def test_a_runtime_lost_by_the_cut_is_an_error(
    image_repo: ImageRepo,
    conda_root: Path,
    fake_docker: Callable[[], list[list[str]]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FAKE_DOCKER_EXEC_KILLS", "1")
    config = SweRexDockerConfig(repo_dir=str(image_repo.path), conda_root=str(conda_root))
    with pytest.raises(SandboxError, match=r"does not answer once the network is cut to \['172"):
        start(config, image_repo.base, ["true"])
    # SWE-ReX's own stop gives up when its runtime does not answer: the sandbox kills the container
    _, name, _, _ = run_call(fake_docker())
    assert [c[0] for c in fake_docker()] == ["inspect", "build", "run", "exec", "kill"]
    assert fake_docker()[-1] == ["kill", name]


def test_a_missing_conda_environment(
    image_repo: ImageRepo, conda_root: Path, fake_docker: Callable[[], list[list[str]]]
) -> None:
    config = SweRexDockerConfig(
        repo_dir=str(image_repo.path), conda_root=str(conda_root), conda_env="py27"
    )
    with pytest.raises(SandboxError, match=r"reading the environment failed .*NotFound: py27"):
        start(config, image_repo.base, ["true"])
    assert fake_docker()[-1][0] == "kill"
