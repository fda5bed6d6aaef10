"""The tests verifier runs its tests in the environment it is given: a named interpreter
(``--test-python``, its prefix shown read-only to the sandbox) or a venv built from a spec
(``--test-env-spec``); an environment that cannot be built leaves every candidate ``missing:
env_build_failed``, never 0.

Needs bubblewrap and a ``python3`` with pytest (as tests/test_verifier_tests.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR
from agentic_rubrics.datasets.swebench import load_candidates_file
from agentic_rubrics.exceptions import ConfigError
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.pipeline.verifiers.tests_grading import collected
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.sandbox.testenv import EnvSpec, load_specs
from agentic_rubrics.sandbox.testrun import ExecRun, parse_pytest_lines
from tests.test_verifier_tests import FAST, PAGEWISE, _some_tasks, needs_sandbox

MARKER = "agentic_rubrics_env_marker"


def _marked_tests(root: Path) -> Path:
    """The pagewise task's hidden tests, each importing a module only the test venv holds."""
    given = root / "given" / PAGEWISE
    shutil.copytree(EXAMPLES_DIR / PAGEWISE / "hidden_tests", given)
    for path in given.glob("test_*.py"):
        path.write_text(f"import {MARKER}  # noqa: F401\n" + path.read_text())
    return given.parent


def _venv(root: Path) -> Path:
    """A venv over /usr/bin/python3 (its pytest seen through the system site) with the marker."""
    subprocess.run(
        ["/usr/bin/python3", "-m", "venv", "--without-pip", "--system-site-packages", str(root)],
        check=True,
    )
    found = sorted(root.glob("lib/python3*/site-packages"))
    assert found, root
    (found[0] / f"{MARKER}.py").write_text("VALUE = 1\n")
    return root / "bin" / "python"


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder the sandbox's unprivileged host user may walk through (pytest's are closed)."""
    path = Path(tempfile.mkdtemp(prefix="agentic-rubrics-envtest-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _record(out: Path) -> dict[str, object]:
    baselines: dict[str, object] = RunFolder(out).progress()[PAGEWISE].baselines["tests"]
    return baselines


@needs_sandbox
def test_the_tests_run_with_the_named_interpreter_and_see_its_venv(
    tmp_path: Path, open_dir: Path
) -> None:
    given, python = _marked_tests(tmp_path), _venv(open_dir / "venv")
    tasks = _some_tasks(tmp_path, [PAGEWISE])
    tests = {"timeout_s": 60, "reruns": 0, "python": str(python)}
    config = RunConfig(verifiers=["tests"], tests_dir=str(given), tests=tests, **FAST)
    run(tasks, tmp_path / "run", config)
    record = _record(tmp_path / "run")
    assert record["status"] == "graded", record
    rates = record["pass_rate"]
    assert isinstance(rates, dict) and all(v is not None for v in rates.values())
    labels = json.loads((EXAMPLES_DIR / PAGEWISE / "labels.json").read_text())["candidates"]
    assert {c for c, v in rates.items() if v == 1.0} == {
        c for c, v in labels.items() if v["resolved"]
    }


@needs_sandbox
def test_an_environment_that_cannot_be_built_leaves_every_candidate_missing(
    tmp_path: Path,
) -> None:
    given = _marked_tests(tmp_path)
    tasks = _some_tasks(tmp_path, [PAGEWISE])
    # no index: the package cannot be found, and nothing is fetched
    spec = EnvSpec(
        requirements=["agentic-rubrics-no-such-package"],
        install_tree=False,
        build_env={"PIP_NO_INDEX": "1"},
    )
    tests = {"reruns": 0, "env_specs": {"*": spec}, "env_cache": str(tmp_path / "envs")}
    config = RunConfig(verifiers=["tests"], tests_dir=str(given), tests=tests, **FAST)
    run(tasks, tmp_path / "run", config)
    record = _record(tmp_path / "run")
    assert record["status"] == "missing" and record["reason"] == "env_build_failed", record
    rates, reasons = record["pass_rate"], record["reasons"]
    assert isinstance(rates, dict) and isinstance(reasons, dict)
    assert set(rates.values()) == {None}  # never 0
    assert set(reasons.values()) == {"env_build_failed"}


def test_the_environment_is_hashed_only_when_set() -> None:
    plain = RunConfig(verifiers=["tests"], tests_dir="given")
    cached = RunConfig(verifiers=["tests"], tests_dir="given", tests={"env_cache": "/elsewhere"})
    spec = {"*": EnvSpec(requirements=["pytest"])}
    built = RunConfig(verifiers=["tests"], tests_dir="given", tests={"env_specs": spec})
    assert "env_specs" not in plain.hashed()["tests"]
    assert plain.content_hash() == cached.content_hash() != built.content_hash()


def test_skips_grouped_by_place_are_no_test_and_leave_the_run_collected() -> None:
    # xarray's test_concat.py on its base tree: a test skipped without dask is summarised by place
    lines = (
        "PASSED agentic_rubrics_tests/test_concat.py::TestConcat::test_join\n"
        "SKIPPED [1] agentic_rubrics_tests/test_concat.py:399: requires dask\n"
        "FAILED agentic_rubrics_tests/test_concat.py::TestConcat::test_fill\n"
    )
    outcomes = parse_pytest_lines(lines)
    assert outcomes == {
        "agentic_rubrics_tests/test_concat.py::TestConcat::test_join": "passed",
        "agentic_rubrics_tests/test_concat.py::TestConcat::test_fill": "failed",
    }
    assert collected(ExecRun(applied="none", outcomes=outcomes, exit_code=1))


def test_imported_swebench_tasks_keep_the_version_their_environment_is_chosen_by(
    tmp_path: Path,
) -> None:
    row = {
        "instance_id": "pydata__xarray-4248",
        "repo": "pydata/xarray",
        "base_commit": "98dc1f4ea18738492e074e9e51ddfed5cd30ab94",
        "problem_statement": "Feature request: show units in dataset overview",
        "version": "0.12",
        "candidates": [{"source": s, "patch": "diff", "resolved": False} for s in "ab"],
    }
    data = tmp_path / "candidates.jsonl"
    data.write_text(json.dumps(row) + "\n")
    (task,) = load_candidates_file(data).tasks
    assert task.version == "0.12"


def test_requirements_that_are_pip_options_files_or_urls_are_refused_naming_them(
    tmp_path: Path,
) -> None:
    """pip reads its arguments as options and files too: a spec file must not point pip at another
    index, a requirements file, a path or a URL. Plain PEP 508 requirements pass."""
    plain = [
        "numpy<2",
        "pytest==7.4.4",
        "requests[socks]>=2.0; python_version < '3.12'",
        "Foo_Bar.baz",
    ]
    assert EnvSpec(requirements=plain).requirements == plain
    refused = {
        "-r /etc/requirements.txt": "a pip option",
        "-e .": "a pip option",
        "-c constraints.txt": "a pip option",
        "--index-url=http://evil.example/simple": "a pip option",
        "--extra-index-url http://evil.example": "a pip option",
        "--find-links=/tmp/wheels": "a pip option",
        "--trusted-host evil.example": "a pip option",
        " -rreqs.txt": "a pip option",
        "./vendored/pkg": "not a PEP 508 requirement",
        "/tmp/evil-1.0-py3-none-any.whl": "not a PEP 508 requirement",
        "~/pkg": "not a PEP 508 requirement",
        "file:///tmp/evil": "not a PEP 508 requirement",
        "git+https://github.com/evil/pkg": "not a PEP 508 requirement",
        "https://evil.example/pkg.tar.gz": "not a PEP 508 requirement",
        "pkg @ git+https://github.com/evil/pkg": "a direct reference",
        "pkg @ file:///tmp/evil": "a direct reference",
        "evil.whl": "a file name",
        "evil-1.0.tar.gz": "a file name",
        "numpy --hash=sha256:00": "not a PEP 508 requirement",
    }
    for n, (requirement, says) in enumerate(refused.items()):
        path = tmp_path / f"spec{n}.json"
        entry = {"psf/requests": {"requirements": ["pytest", requirement]}}
        path.write_text(json.dumps(entry))
        with pytest.raises(ConfigError) as err:
            load_specs(path)
        message = str(err.value)
        assert message.startswith(f"{path}: psf/requests: requirements[1] {requirement!r}: "), (
            message
        )
        assert says in message, message
    # the shipped example reads
    shipped = Path(__file__).parents[1] / "benchmarks" / "envs" / "swebench_py311.json"
    assert len(load_specs(shipped)) == 23  # Django 3.0–5.0 among them


def test_the_tests_docker_site_is_hashed_only_when_set_and_read_from_its_option(
    tmp_path: Path,
) -> None:
    """``--test-docker``: swebench, local, or a JSON file whose nulls are settings; anything else
    is refused naming the option."""
    from agentic_rubrics.cli.option_sets import test_docker
    from agentic_rubrics.pipeline.verifiers.tests import TestsSettings
    from agentic_rubrics.sandbox.swerex_docker import LOCAL_IMAGE

    plain = RunConfig(verifiers=["tests"], tests_dir="given")
    local = RunConfig(verifiers=["tests"], tests_dir="given", tests={"docker": "local"})
    assert "docker" not in plain.hashed()["tests"]
    assert plain.content_hash() != local.content_hash()
    config = local.section("tests", TestsSettings).tests.docker_config()
    assert config is not None and config.image == LOCAL_IMAGE and config.conda_env is None
    swebench = RunConfig(verifiers=["tests"], tests_dir="given", tests={"docker": "swebench"})
    assert swebench.section("tests", TestsSettings).tests.docker_config().conda_env == "testbed"
    given = tmp_path / "docker.json"
    given.write_text('{"image": "mine:{instance_id}", "conda_env": null, "memory_mib": 512}')
    mine = RunConfig(
        verifiers=["tests"], tests_dir="given", tests={"docker": test_docker(str(given))}
    )
    read = mine.section("tests", TestsSettings).tests.docker_config()
    assert (read.image, read.conda_env, read.memory_mib) == ("mine:{instance_id}", None, 512)
    for bad in ("podman", str(tmp_path / "nope.json")):
        with pytest.raises(ConfigError, match=r"test-docker|nope\.json"):
            test_docker(bad)
    given.write_text('{"image": "x", "network": "moon"}')
    with pytest.raises(ConfigError, match="--test-docker"):
        test_docker(str(given))
