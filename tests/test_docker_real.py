"""swerex-docker against a real docker daemon, on images built here from Debian's archive and PyPI.

In CI (``AGENTIC_RUBRICS_REQUIRE_DOCKER=1``, which .ci/run sets after starting dockerd) these fail,
never skip; elsewhere they skip with the reason. The base image is built once per machine (about a
minute; cached by its hash, under a file lock shared by every worker), the test's environment image once
per session (cached the same way). All of them run in one xdist worker (one group): they share the
images and would only compete for the two cores.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from agentic_rubrics.sandbox import open_sandbox
from agentic_rubrics.sandbox.base import Where
from agentic_rubrics.sandbox.docker_cli import (
    LABEL,
    OWNER_LABEL,
    DockerError,
    boot_id,
    clean,
    docker,
    owner,
)
from agentic_rubrics.sandbox.docker_container import (
    ContainerDeployment,
    ContainerSpec,
    refuse_host_namespace,
)
from agentic_rubrics.sandbox.docker_images import ImageBuildError, ensure_env_image
from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig
from agentic_rubrics.sandbox.testenv import EnvSpec
from agentic_rubrics.sandbox.testrun import ExecLimits
from agentic_rubrics.sandbox.testrun_docker import run_candidates_docker
from agentic_rubrics.test_infra import GRADED_FOLDER as GRADED
from tests.docker_gate import docker_marks

pytestmark = docker_marks()
IMAGE = "agentic-rubrics/test-env:pkg"
TESTS = {
    "test_issue.py": textwrap.dedent(
        """
        import pathlib, socket
        import pkg

        def test_fixed():
            assert pkg.f() == 3

        def test_alone():  # nothing another candidate's tests wrote is here
            for marker in (pathlib.Path("/testbed/written"), pathlib.Path("/tmp/written")):
                assert not marker.exists()
                marker.write_text("x")

        def test_offline():
            probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            try:
                probe.connect(("192.0.2.1", 53))  # sends nothing: is there a route?
            except OSError as exc:
                assert exc.errno == 101, exc  # ENETUNREACH
            else:
                raise AssertionError("routable")
        """
    ).encode()
}


def patch_f(body: str) -> str:
    lines = body.splitlines()
    return (
        "diff --git a/pkg.py b/pkg.py\n--- a/pkg.py\n+++ b/pkg.py\n"
        f"@@ -1,2 +1,{1 + len(lines)} @@\n def f():\n-    return 2\n"
        + "".join(f"+{line}\n" for line in lines)
    )


@pytest.fixture(scope="module")
def env_image(tmp_path_factory: pytest.TempPathFactory) -> str:
    tree = tmp_path_factory.mktemp("tree")
    (tree / "pkg.py").write_text("def f():\n    return 2\n")
    spec = EnvSpec(requirements=["pytest"], install_tree=False)
    name, _ = ensure_env_image(IMAGE, spec, tree, repo="demo/pkg", version="1", commit="c0ffee")
    return name


def ours() -> list[str]:
    """The containers this process has now."""
    out = docker(["ps", "-aq", "--filter", f"label={OWNER_LABEL}={owner()}"])
    return out.split()


def config(**fields: object) -> SweRexDockerConfig:
    return SweRexDockerConfig(image=IMAGE, conda_env=None, pull="never", **fields)  # type: ignore[arg-type]


def test_a_sandbox_on_an_image_built_here(env_image: str) -> None:
    async def go() -> dict[str, str]:
        sb = await open_sandbox(
            config(), instance_id="demo__pkg-1", repo_path=None, model_commands=True
        )
        try:
            name = sb._deployment.container_name  # type: ignore[attr-defined]
            commands = {
                "where": "pwd; cat pkg.py; python --version; command -v pytest",
                "route": "cat /proc/net/route | wc -l",
                "label": "true",
            }
            out = {k: (await sb.run(c, timeout=30)).output for k, c in commands.items()}
            fmt = f'{{{{index .Config.Labels "{LABEL}"}}}} {{{{.HostConfig.NetworkMode}}}}'
            out["inspect"] = docker(["inspect", "--format", fmt, name])
            out["name"] = name
            return out
        finally:
            await sb.close()

    out = asyncio.run(go())
    assert out["where"].splitlines() == [
        "/testbed",
        "def f():",
        "    return 2",
        "Python 3.11.2",
        "/opt/agentic-rubrics/testbed/bin/pytest",
    ]
    assert out["route"].strip() == "2"  # the header and the one host route to the gateway
    assert out["inspect"] == f"1 {out['name']}"  # labelled, on its own internal network
    assert ours() == []
    assert docker(["network", "ls", "-q", "--filter", f"name={out['name']}"]) == ""


def test_each_candidate_in_its_own_container(env_image: str) -> None:
    patches = {
        "fix": patch_f("    return 3"),
        "wrong": patch_f("    return 4"),
        "oom": patch_f("    x = bytearray(1 << 30)\n    return 3"),
        "bad": "diff --git a/nope.py b/nope.py\n--- a/nope.py\n+++ b/nope.py\n@@ -1 +1 @@\n-a\n+b\n",
        # fixes nothing: a root conftest.py whose hook makes every test a no-op (put back: removed)
        "hook": (
            "diff --git a/conftest.py b/conftest.py\nnew file mode 100644\n--- /dev/null\n"
            "+++ b/conftest.py\n@@ -0,0 +1,3 @@\n+def pytest_collection_modifyitems(items):\n"
            "+    for item in items:\n+        item.runtest = lambda: None\n"
        ),
    }
    limits = ExecLimits(timeout_s=60)
    started = time.perf_counter()
    runs = asyncio.run(
        run_candidates_docker(
            config(memory_mib=256), Where("demo__pkg-1", None), patches, TESTS,
            limits=limits, parallel=2,
        )
    )  # fmt: skip
    wall = time.perf_counter() - started
    summary = {
        cid: (r.applied, r.reason, dict(sorted(r.outcomes.items()))) for cid, r in runs.items()
    }
    node = "agentic_rubrics_tests/test_issue.py::"
    assert summary == {
        "fix": ("git_apply", None, {f"{node}test_alone": "passed", f"{node}test_fixed": "passed",
                                    f"{node}test_offline": "passed"}),
        "wrong": ("git_apply", None, {f"{node}test_alone": "passed", f"{node}test_fixed": "failed",
                                      f"{node}test_offline": "passed"}),
        "oom": ("git_apply", "oom", {}),
        "bad": (None, "patch_does_not_apply", {}),
        "hook": ("git_apply", None, {f"{node}test_alone": "passed", f"{node}test_fixed": "failed",
                                     f"{node}test_offline": "passed"}),
    }  # fmt: skip
    assert runs["hook"].infra == ["conftest"] and runs["fix"].infra == []
    assert all(r.timings["start_ms"] > 0 for r in runs.values() if r.timings)
    assert wall < 300
    assert ours() == []


def test_a_timeout_kills_the_container(env_image: str) -> None:
    runs = asyncio.run(
        run_candidates_docker(
            config(), Where("demo__pkg-1", None),
            {"slow": patch_f("    import time; time.sleep(600)\n    return 3")}, TESTS,
            limits=ExecLimits(timeout_s=3),
        )
    )  # fmt: skip
    assert runs["slow"].reason == "timeout" and runs["slow"].seconds < 60
    assert ours() == []


def test_the_cut_is_refused_in_this_machines_network_namespace(env_image: str) -> None:
    async def go() -> str:
        deployment = ContainerDeployment(
            ContainerSpec(image=IMAGE, network="host", pull="never", name_hint="host-net")
        )
        try:
            await deployment.start()
            with pytest.raises(DockerError, match="network mode 'host'") as info:
                refuse_host_namespace(deployment.container_name)
            return info.value.reason
        finally:
            await deployment.stop()

    routes = Path("/proc/net/route").read_text()
    assert asyncio.run(go()) == "network_refused"
    assert Path("/proc/net/route").read_text() == routes


def test_a_failed_build_is_a_reason(env_image: str, tmp_path: Path) -> None:
    spec = EnvSpec(requirements=["agentic-rubrics-no-such-package==0.0.1"], install_tree=False)
    with pytest.raises(ImageBuildError) as info:
        ensure_env_image(
            "agentic-rubrics/test-env:broken", spec, tmp_path, repo="demo/pkg", version="1",
            commit="c0ffee",
        )  # fmt: skip
    assert info.value.reason == "env_build_failed"
    assert "agentic-rubrics-no-such-package" in str(info.value)


HOLDER = """
import asyncio, sys
from agentic_rubrics.sandbox import open_sandbox
from agentic_rubrics.sandbox.swerex_docker import SweRexDockerConfig

async def main():
    config = SweRexDockerConfig(image=sys.argv[1], conda_env=None, pull="never")
    sb = await open_sandbox(config, instance_id="held__x-1", repo_path=None, model_commands=True)
    print(sb._deployment.container_name, flush=True)
    await asyncio.sleep(600)

asyncio.run(main())
"""


def _holder(tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    proc = subprocess.Popen(
        [sys.executable, str(script), IMAGE], stdout=subprocess.PIPE, text=True, env=os.environ
    )
    assert proc.stdout is not None
    return proc, proc.stdout.readline().strip()


def _exists(name: str) -> bool:
    return bool(docker(["ps", "-aq", "--filter", f"name=^{name}$"]))


@pytest.mark.parametrize("how", ["SIGTERM", "SIGINT", "SIGKILL"])
def test_an_interrupted_run_leaves_nothing(env_image: str, tmp_path: Path, how: str) -> None:
    proc, name = _holder(tmp_path)
    with proc:  # its pipe closed and the process reaped, whatever happens
        try:
            assert name and _exists(name)
            proc.send_signal(getattr(signal, how))
            proc.wait(timeout=60)
        finally:
            proc.kill()
    if (
        how == "SIGKILL"
    ):  # nothing ran in the process: the next run, or clean-containers, removes it
        assert _exists(name)
        done = subprocess.run(
            [str(Path(sys.executable).parent / "agentic-rubrics"), "clean-containers"],
            capture_output=True, text=True, timeout=120, env=os.environ,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "removed 1 container(s), 1 network(s)" in done.stdout
    assert not _exists(name)
    left = docker(
        ["ps", "-a", "--filter", f"label={LABEL}", "--format", '{{.Label "' + OWNER_LABEL + '"}}']
    )
    assert f"{boot_id()}:{proc.pid}" not in left.split()


def test_clean_keeps_the_containers_of_live_processes(env_image: str) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    args = ["run", "-d", "--label", f"{LABEL}=1", "--network", "none", "--entrypoint", "sleep"]
    gone = docker([*args, "--label", f"{OWNER_LABEL}={boot_id()}:{dead.pid}", IMAGE, "600"])
    alive = docker([*args, "--label", f"{OWNER_LABEL}={owner()}", IMAGE, "600"])
    # the label and no owner: what runs from an image built here, a build's step containers among
    # them (another process's sweep used to kill those mid-build: exit 137)
    building = docker([*args, IMAGE, "600"])
    try:
        containers, _, problems = clean()
        assert problems == [] and gone[:12] not in json.dumps(ours())
        assert not docker(["ps", "-aq", "--filter", f"id={gone}"])
        assert docker(["ps", "-aq", "--filter", f"id={alive}"])
        assert docker(["ps", "-aq", "--filter", f"id={building}"])
        assert len(containers) >= 1
    finally:
        docker(["rm", "-f", gone, alive, building])


def test_the_tests_verifier_grades_in_containers_as_in_bubblewrap(tmp_path: Path) -> None:
    """``tests.docker``: a bundled task's hidden tests validated and graded in containers of an image
    holding its repository (one prepared per task, a container per run), each candidate's pass rate
    the labels' — the same verdicts bubblewrap gives — and nothing left behind."""
    import shutil as _shutil

    from agentic_rubrics.datasets.bundled import EXAMPLES_DIR, write_tasks_jsonl
    from agentic_rubrics.pipeline.config import RunConfig
    from agentic_rubrics.pipeline.runner import run

    iid = "harbourline__pagewise-214"
    folder = EXAMPLES_DIR / iid
    spec = EnvSpec(requirements=["pytest"], install_tree=False)
    image = "agentic-rubrics/test-env:pagewise"
    ensure_env_image(image, spec, folder / "repo", repo="harbourline/pagewise", version="1",
                     commit="c0ffee")  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    rows = [r for r in write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()
            if json.loads(r)["instance_id"] == iid]  # fmt: skip
    tasks.write_text(rows[0] + "\n")
    given = tmp_path / "given" / iid
    _shutil.copytree(folder / "hidden_tests", given)
    # passes in the image's /testbed only (bubblewrap's tree is /workspace): every pass rate of 1
    # below was measured in a container
    (given / "test_where.py").write_text(
        "import os\n\n\ndef test_in_the_image():\n    assert os.getcwd() == '/testbed'\n"
    )
    docker_config = {"image": image, "conda_env": None, "pull": "never", "memory_mib": 1024}
    config = RunConfig(
        verifiers=["tests"],
        tests_dir=str(tmp_path / "given"),
        tests={"reruns": 0, "timeout_s": 120, "docker": docker_config},
        bootstrap_resamples=0,
        plots=False,
    )
    run(tasks, tmp_path / "run", config)
    progress = (tmp_path / "run" / "progress.jsonl").read_text().splitlines()
    record = json.loads(progress[-1])["baselines"]["tests"]
    labels = json.loads((folder / "labels.json").read_text())["candidates"]
    assert record["status"] == "graded", record
    assert {c: r == 1.0 for c, r in record["pass_rate"].items()} == {
        c: v["resolved"] for c, v in labels.items()
    }, record
    status = json.loads((tmp_path / "run" / "tests" / iid / "status.json").read_text())
    assert f"{GRADED}/test_where.py::test_in_the_image" in status["validation"]["tests"]
    assert ours() == []
    mine = [
        "--filter",
        "label=agentic_rubrics.prepared",
        "--filter",
        f"label={OWNER_LABEL}={owner()}",
    ]
    assert docker(["images", "-q", *mine]) == ""
