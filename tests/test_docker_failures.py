"""env-check and build-env against a real docker daemon when things go wrong: a container killed by
its memory limit, the daemon gone in the middle of a check, an image that cannot be built. Each ends
in a row with its reason, and the check goes on with the next instance; no container is left.

In CI (``AGENTIC_RUBRICS_REQUIRE_DOCKER=1``) these fail, never skip. The environment image is the one
tests/test_docker_real.py builds (same spec and commit: the same hash, built once per machine).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets import swebench_tests
from agentic_rubrics.pipeline.envcheck import CheckRow, CheckSite, check_instances
from agentic_rubrics.sandbox.docker_cli import OWNER_LABEL, docker, owner
from agentic_rubrics.sandbox.docker_images import ensure_env_image
from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig
from agentic_rubrics.sandbox.testenv import EnvSpec
from agentic_rubrics.sandbox.testrun import ExecLimits
from tests.docker_gate import docker_marks

pytestmark = docker_marks()
IMAGE = "agentic-rubrics/test-env:pkg"
TEST_PATCH = (
    "diff --git a/tests/test_f.py b/tests/test_f.py\nnew file mode 100644\n--- /dev/null\n"
    "+++ b/tests/test_f.py\n@@ -0,0 +1,4 @@\n+import pkg\n+\n+def test_f():\n"
    "+    assert pkg.f() == 3\n"
)


def patch_f(body: str) -> str:
    lines = body.splitlines()
    return (
        "diff --git a/pkg.py b/pkg.py\n--- a/pkg.py\n+++ b/pkg.py\n"
        f"@@ -1,2 +1,{1 + len(lines)} @@\n def f():\n-    return 2\n"
        + "".join(f"+{line}\n" for line in lines)
    )


def instance(n: int, gold: str) -> swebench_tests.TestedInstance:
    return swebench_tests.TestedInstance(
        f"demo__pkg-{n}", "demo/pkg", "c0ffee", "1", gold, TEST_PATCH, ["tests/test_f.py::test_f"]
    )


@pytest.fixture(scope="module")
def env_image(tmp_path_factory: pytest.TempPathFactory) -> str:
    tree = tmp_path_factory.mktemp("tree")
    (tree / "pkg.py").write_text("def f():\n    return 2\n")
    spec = EnvSpec(requirements=["pytest"], install_tree=False)
    name, _ = ensure_env_image(IMAGE, spec, tree, repo="demo/pkg", version="1", commit="c0ffee")
    return name


def ours() -> list[str]:
    return docker(["ps", "-aq", "--filter", f"label={OWNER_LABEL}={owner()}"]).split()


def labelled() -> list[str]:
    """Every container labelled agentic_rubrics (any process's): its id and labels."""
    out = docker(
        ["ps", "-a", "--filter", "label=agentic_rubrics", "--format", "{{.ID}} {{.Labels}}"]
    )
    return out.splitlines()


def site(**fields: object) -> CheckSite:
    config = SweRexDockerConfig(image=IMAGE, conda_env=None, pull="never", **fields)  # type: ignore[arg-type]
    return CheckSite(python="python", swerex=config, limits=ExecLimits(timeout_s=120))


def test_a_container_killed_by_its_memory_limit_is_a_reason(env_image: str) -> None:
    instances = [
        instance(1, patch_f("    x = bytearray(1 << 30)\n    return 3")),
        instance(2, patch_f("    return 3")),
    ]
    rows = check_instances(instances, lambda _: None, site(memory_mib=256))
    assert [(r.instance_id, r.reason) for r in rows] == [
        ("demo__pkg-1", "oom"),
        ("demo__pkg-2", "runnable"),
    ]
    assert rows[0].gold["reason"] == "oom" and rows[0].none["fail_to_pass"] == {"failed": 1}
    assert ours() == []


class DaemonDoor:
    """A socket in front of the real daemon's: ``DOCKER_HOST`` points at it, and :meth:`close`
    makes the daemon vanish for this process as a daemon that died does (connections refused)."""

    def __init__(self, path: Path) -> None:
        host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
        self.target = host.removeprefix("unix://")
        self.path = path
        self.server = socket.socket(socket.AF_UNIX)
        self.server.bind(str(path))
        self.server.listen(16)
        self.open: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.server.accept()
            except OSError:
                return
            upstream = socket.socket(socket.AF_UNIX)
            upstream.connect(self.target)
            self.open += [client, upstream]
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a: socket.socket, b: socket.socket) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass
        finally:  # the end of one direction only (docker's attached streams half-close)
            with contextlib.suppress(OSError):
                b.shutdown(socket.SHUT_WR)

    def close(self) -> None:
        self.server.close()
        for s in self.open:
            s.close()
        self.path.unlink(missing_ok=True)
        # a socket file that nothing listens on: connections refused
        with socket.socket(socket.AF_UNIX) as dead:
            dead.bind(str(self.path))


@pytest.fixture
def door(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[DaemonDoor]:
    opened = DaemonDoor(tmp_path / "docker.sock")
    monkeypatch.setenv("DOCKER_HOST", f"unix://{opened.path}")
    yield opened
    opened.close()
    monkeypatch.undo()  # the real daemon again, to see that nothing was left


def test_a_daemon_dying_mid_check_is_a_reason_and_the_check_goes_on(
    env_image: str, door: DaemonDoor
) -> None:
    instances = [instance(n, patch_f("    return 3")) for n in (1, 2, 3)]
    seen: list[str] = []

    def progress(row: CheckRow) -> None:
        seen.append(row.reason)
        if len(seen) == 1:
            door.close()  # the daemon is gone after the first instance

    rows = check_instances(instances, lambda _: None, site(), progress=progress)
    assert [r.reason for r in rows] == ["runnable", "docker_unavailable", "docker_unavailable"], (
        rows[0]
    )
    assert rows[1].gold["reason"] == "docker_unavailable" and "daemon" in rows[1].detail
    assert seen == [r.reason for r in rows]


def test_a_failed_image_build_is_a_row_and_the_rest_are_built(
    env_image: str, tmp_path: Path
) -> None:
    srv = tmp_path / "srv" / "demo__pkg"
    srv.mkdir(parents=True)
    (srv / "pkg.py").write_text("def f():\n    return 2\n")
    git = ["git", "-C", str(srv), "-c", "user.name=t", "-c", "user.email=t@t"]
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "base"]):
        assert os.spawnvp(os.P_WAIT, "git", [*git, *args]) == 0
    sha = (srv / ".git" / "refs" / "heads" / "main").read_text().strip()
    row = {"repo": "demo/pkg", "base_commit": sha, "patch": patch_f("    return 3")}
    row |= {"test_patch": TEST_PATCH, "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]"}
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text(
        json.dumps({**row, "instance_id": "demo__pkg-1", "version": "broken"})
        + "\n"
        + json.dumps({**row, "instance_id": "demo__pkg-2", "version": "1"})
        + "\n"
    )
    specs = tmp_path / "specs.json"
    broken = {"requirements": ["agentic-rubrics-no-such-package==0.0.1"], "install_tree": False}
    specs.write_text(
        json.dumps(
            {
                "demo/pkg@broken": broken,
                "demo/pkg": {"requirements": ["pytest"], "install_tree": False},
            }
        )
    )
    out = tmp_path / "build.json"
    before = set(labelled())
    args = ["build-env", str(dataset), "--env-spec", str(specs), "--out", str(out)]
    args += ["--repo-url", f"file://{tmp_path}/srv/{{owner}}__{{name}}"]
    done = CliRunner().invoke(app, [*args, "--repo-cache", str(tmp_path / "cache")])
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    assert [(r["instance_id"], r["reason"]) for r in report["rows"]] == [
        ("demo__pkg-1", "env_build_failed"),
        ("demo__pkg-2", "ok"),
    ]
    assert "agentic-rubrics-no-such-package" in report["rows"][0]["detail"]
    # the failed step's container (a build's: labelled by the base image, no owner) is removed too
    assert [c for c in labelled() if c not in before and "agentic_rubrics.owner=" not in c] == []
    assert ours() == []
    docker(["rmi", "-f", report["rows"][1]["image"]], timeout=120)


def test_a_cut_container_fails_name_lookups_at_once(env_image: str) -> None:
    # as bubblewrap's empty network namespace does: docker's embedded DNS, unreachable once the
    # network is cut, made each lookup wait 10 s (tests that try the network then ran into timeouts)
    from agentic_rubrics.sandbox.base import Where
    from agentic_rubrics.sandbox.testrun_docker import run_candidates_docker

    probe = (
        "import socket, time\n\ndef test_lookup():\n    start = time.monotonic()\n    try:\n"
        "        socket.getaddrinfo('example.org', 80)\n    except OSError:\n        pass\n"
        "    assert time.monotonic() - start < 2\n"
    )
    config = SweRexDockerConfig(image=IMAGE, conda_env=None, pull="never")
    runs = asyncio.run(
        run_candidates_docker(
            config, Where("demo__pkg-1", None), {"c": ""}, {"test_dns.py": probe.encode()},
            limits=ExecLimits(timeout_s=120),
        )
    )  # fmt: skip
    assert runs["c"].outcomes == {"agentic_rubrics_tests/test_dns.py::test_lookup": "passed"}
    assert ours() == []
