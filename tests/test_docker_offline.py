"""The docker paths with no daemon behind ``DOCKER_HOST``: every failure is a reason, never a traceback.

No daemon is needed (``DOCKER_HOST`` names a socket nothing listens on), so these run everywhere.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest

from agentic_rubrics.sandbox import open_sandbox
from agentic_rubrics.sandbox.base import Where
from agentic_rubrics.sandbox.docker_cli import DOCKER_REASONS, DockerError, daemon_problem
from agentic_rubrics.sandbox.docker_images import apt_mirror
from agentic_rubrics.sandbox.swerex_docker import LOCAL_IMAGE, SweRexDockerConfig
from agentic_rubrics.sandbox.testrun import ExecLimits
from agentic_rubrics.sandbox.testrun_docker import run_candidates_docker


@pytest.fixture
def no_daemon(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A socket that refuses every connection, as a daemon that died leaves it."""
    path = tmp_path / "docker.sock"
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(path))  # bound, never listening: connections are refused
    monkeypatch.setenv("DOCKER_HOST", f"unix://{path}")
    return path


def test_no_daemon_is_a_reason(no_daemon: Path) -> None:
    problem = daemon_problem()
    assert problem is not None and "Cannot connect to the Docker daemon" in problem
    config = SweRexDockerConfig(image=LOCAL_IMAGE, conda_env=None, pull="never")
    with pytest.raises(DockerError) as info:
        asyncio.run(open_sandbox(config, instance_id="a__b-1", repo_path=None, model_commands=True))
    assert info.value.reason == "docker_unavailable"
    runs = asyncio.run(
        run_candidates_docker(
            config, Where("a__b-1", None), {"c1": "", "c2": ""}, {}, limits=ExecLimits(timeout_s=5)
        )
    )
    assert {cid: (r.reason, r.applied, r.outcomes) for cid, r in runs.items()} == {
        "c1": ("docker_unavailable", None, {}),
        "c2": ("docker_unavailable", None, {}),
    }
    assert set(DOCKER_REASONS) >= {r.reason for r in runs.values() if r.reason}


def test_the_mirror_comes_from_apt_sources(tmp_path: Path) -> None:
    (tmp_path / "sources.list.d").mkdir()
    assert apt_mirror(tmp_path) == "http://deb.debian.org/debian"  # none named: the default
    (tmp_path / "sources.list.d" / "debian.sources").write_text(
        "Types: deb\nURIs: http://mirror.example/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://mirror.example/debian/\nSuites: bookworm bookworm-updates\n"
    )
    assert apt_mirror(tmp_path) == "http://mirror.example/debian"
    (tmp_path / "sources.list").write_text(
        "deb [arch=amd64] http://old.example/debian bullseye main\n"
    )
    assert apt_mirror(tmp_path) == "http://old.example/debian"
