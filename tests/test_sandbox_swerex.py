"""SWE-ReX deployments behind the Sandbox protocol: local, and a real swerex-remote server on loopback.

Modal, and docker on SWE-bench's published images, run where they are available and configured and are
skipped otherwise; docker on images built here: test_docker_real.py.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR
from agentic_rubrics.exceptions import SandboxError
from agentic_rubrics.sandbox import open_sandbox
from agentic_rubrics.sandbox.docker_cli import daemon_problem
from agentic_rubrics.sandbox.swerex import (
    SweRexLocalConfig,
    SweRexModalConfig,
    SweRexRemoteConfig,
    swebench_image_id,
)
from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig

REPO = EXAMPLES_DIR / "harbourline__pagewise-214" / "repo"


def exercise(config: object, repo_path: str | None, *, allow: bool = False) -> dict[str, object]:
    async def go() -> dict[str, object]:
        sb = await open_sandbox(
            config,
            instance_id="demo__task-1",
            repo_path=repo_path,
            model_commands=allow,
            allow_unisolated=allow,
        )
        try:
            listing = await sb.run("ls")
            slow = await sb.run("sleep 10", timeout=0.5)
            big = await sb.run("seq 1 50000", max_output=300)
            env = await sb.run("env")
            readme = await sb.read_file("README.md")
            with pytest.raises(SandboxError, match="outside"):
                await sb.read_file("../hidden_tests/test_hidden.py")
            return {
                "listing": listing,
                "slow": slow,
                "big": big,
                "env": env.output,
                "readme": readme,
                "kind": sb.kind,
            }
        finally:
            await sb.close()

    return asyncio.run(go())


def check(result: dict[str, object]) -> None:
    listing, slow, big = result["listing"], result["slow"], result["big"]
    assert listing.exit_code == 0 and "pagewise" in listing.output  # type: ignore[attr-defined]
    assert slow.timed_out  # type: ignore[attr-defined]
    assert big.truncated and "[... output truncated at 300 characters ...]" in big.output  # type: ignore[attr-defined]
    assert str(result["readme"]).startswith("# pagewise")
    assert "OPENAI_API_KEY" not in str(result["env"])


def test_swerex_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-sandbox-0000000000")
    result = exercise(SweRexLocalConfig(), str(REPO))
    check(result)
    assert result["kind"] == "swerex-local"
    with pytest.raises(SandboxError, match="not isolated"):
        asyncio.run(
            open_sandbox(
                SweRexLocalConfig(), instance_id="t", repo_path=str(REPO), model_commands=True
            )
        )


@pytest.fixture
def swerex_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    exe = Path(sys.executable).parent / "swerex-remote"
    proc = subprocess.Popen(
        [str(exe), "--host", "127.0.0.1", "--port", str(port), "--auth-token", "loopback-token"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            break
        except OSError:
            time.sleep(0.2)
    monkeypatch.setenv("SWEREX_AUTH_TOKEN", "loopback-token")
    yield port
    proc.kill()
    proc.wait()


def test_swerex_remote_server_on_loopback(swerex_server: int, tmp_path: Path) -> None:
    copy = tmp_path / "testbed"
    shutil.copytree(REPO, copy)
    result = exercise(SweRexRemoteConfig(port=swerex_server, repo_dir=str(copy)), None)
    check(result)
    assert result["kind"] == "swerex-remote"


def test_swerex_remote_needs_its_token(swerex_server: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SWEREX_AUTH_TOKEN")
    with pytest.raises(SandboxError, match="set SWEREX_AUTH_TOKEN"):
        asyncio.run(
            open_sandbox(
                SweRexRemoteConfig(port=swerex_server),
                instance_id="t",
                repo_path=None,
                model_commands=True,
            )
        )


def test_swebench_image_names() -> None:
    assert swebench_image_id("django__django-11099") == "django_1776_django-11099"
    assert (
        SweRexDockerConfig().image.format(instance_id="x", swebench_id="y")
        == "swebench/sweb.eval.x86_64.y:latest"
    )


# a real SWE-bench instance image (about 1-2 GB to pull): opt in with AGENTIC_RUBRICS_DOCKER_SWEBENCH=1
@pytest.mark.skipif(
    not os.environ.get("AGENTIC_RUBRICS_DOCKER_SWEBENCH") or daemon_problem() is not None,
    reason="needs a docker daemon and AGENTIC_RUBRICS_DOCKER_SWEBENCH=1",
)
def test_swerex_docker_on_a_swebench_image() -> None:  # pragma: no cover - needs a docker daemon
    base = "091991be0da19de9108dbe5e3752917fea3d7fdc"  # psf__requests-2317

    async def go() -> dict[str, str]:
        sb = await open_sandbox(
            SweRexDockerConfig(),
            instance_id="psf__requests-2317",
            repo_path=None,
            model_commands=True,
            base_commit=base,
        )
        try:
            commands = {
                "env": "echo $CONDA_DEFAULT_ENV; python -c 'import requests; print(requests.__file__)'",
                "history": "git log --all --reflog --format=%H; git tag",
                "offline": "curl -sS -m 5 https://github.com || echo offline",
            }
            return {k: (await sb.run(c, timeout=60)).output for k, c in commands.items()}
        finally:
            await sb.close()

    out = asyncio.run(go())
    assert out["env"] == "testbed\n/testbed/requests/__init__.py\n"
    assert out["history"].split() == [base]
    assert out["offline"].rstrip().endswith("offline")


@pytest.mark.skipif(
    importlib.util.find_spec("modal") is None or not os.environ.get("MODAL_TOKEN_ID"),
    reason="modal is not installed or not configured here",
)
def test_swerex_modal() -> None:  # pragma: no cover - needs modal credentials
    config = SweRexModalConfig(image="python:3.11", repo_dir="/tmp")

    async def go() -> str:
        sb = await open_sandbox(config, instance_id="t", repo_path=None, model_commands=True)
        try:
            return (await sb.run("python3 --version")).output
        finally:
            await sb.close()

    assert "Python 3.11" in asyncio.run(go())
