"""``env-check`` and where tests run: made-up SWE-bench instances in a local git repository, a
broken environment, the spec-built venv's cache, and a test run through SWE-ReX's runtime interface.

Needs bubblewrap and Debian's python3-pytest (as tests/test_testrun.py); in CI they fail, never skip.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.sandbox import testrun_swerex
from agentic_rubrics.sandbox.bwrap import bwrap_problem
from agentic_rubrics.sandbox.testenv import (
    EnvBuildError,
    EnvSpec,
    build_env,
    env_key,
    packaging_hash,
)
from agentic_rubrics.sandbox.testlogs import directives, outcome_filter, parse_outcomes, runner_for
from agentic_rubrics.sandbox.testrun import ExecLimits, PreparedTree, RunCommand, run_tests

PROBLEM = bwrap_problem() or (None if Path("/usr/bin/python3").exists() else "no /usr/bin/python3")
if os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1" and PROBLEM:  # pragma: no cover
    raise RuntimeError(f"CI requires the test sandbox: {PROBLEM}")
pytestmark = pytest.mark.skipif(PROBLEM is not None, reason=f"cannot run tests here: {PROBLEM}")

BASE = {"calc/__init__.py": "def add(a, b):\n    return a - b\n", "README.md": "calc\n"}
GOLD = """diff --git a/calc/__init__.py b/calc/__init__.py
--- a/calc/__init__.py
+++ b/calc/__init__.py
@@ -1,2 +1,2 @@
 def add(a, b):
-    return a - b
+    return a + b
"""


def _test_patch(name: str, body: str) -> str:
    lines = body.splitlines()
    added = "".join(f"+{line}\n" for line in lines)
    return (
        f"diff --git a/tests/{name} b/tests/{name}\nnew file mode 100644\n--- /dev/null\n"
        f"+++ b/tests/{name}\n@@ -0,0 +1,{len(lines)} @@\n{added}"
    )


TESTS = _test_patch(
    "test_calc.py",
    "from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n\n"
    "def test_zero():\n    assert add(0, 0) == 0\n",
)
BROKEN = _test_patch(
    "test_dep.py",
    "import notinstalled_xyz_module\nfrom calc import add\n\ndef test_add():\n    assert add(1, 1) == 2\n",
)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def upstream(tmp_path: Path) -> tuple[str, str]:
    """acme/calc at one commit, served from ``tmp_path/srv``; the URL template and the commit."""
    repo = tmp_path / "srv" / "acme__calc"
    for rel, text in BASE.items():
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(text)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    return f"file://{tmp_path}/srv/{{owner}}__{{name}}", _git(repo, "rev-parse", "HEAD").strip()


def _row(
    instance_id: str, repo: str, sha: str, test_patch: str, f2p: list[str]
) -> dict[str, object]:
    return {
        "instance_id": instance_id,
        "repo": repo,
        "base_commit": sha,
        "version": "1.0",
        "problem_statement": "add subtracts",
        "patch": GOLD,
        "test_patch": test_patch,
        "FAIL_TO_PASS": json.dumps(f2p),
        "PASS_TO_PASS": json.dumps(["tests/test_calc.py::test_zero"]),
    }


def test_env_check_says_which_instances_can_run_their_tests(
    upstream: tuple[str, str], tmp_path: Path
) -> None:
    template, sha = upstream
    rows = [
        _row("acme__calc-1", "acme/calc", sha, TESTS, ["tests/test_calc.py::test_add"]),
        _row("acme__calc-2", "acme/calc", sha, BROKEN, ["tests/test_dep.py::test_add"]),
        _row("acme__gone-1", "acme/gone", sha, TESTS, ["tests/test_calc.py::test_add"]),
        _row("django__django-1", "django/django", sha, TESTS, ["test_add (calc.tests.T)"]),
    ]
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "check.json"
    args = ["env-check", str(dataset), "--out", str(out), "--repo-url", template]
    args += ["--approximate-trees", "none"]
    done = CliRunner().invoke(app, [*args, "--repo-cache", str(tmp_path / "cache")])
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    by_id = {r["instance_id"]: r for r in report["rows"]}
    ok = by_id["acme__calc-1"]
    assert (ok["runnable"], ok["reason"], ok["runner"]) == (True, "runnable", "pytest")
    assert ok["gold"]["fail_to_pass"] == {"passed": 1}
    assert ok["none"]["fail_to_pass"] == {"failed": 1}
    broken = by_id["acme__calc-2"]
    assert (broken["runnable"], broken["reason"]) == (False, "missing_dependency")
    assert broken["detail"] == "notinstalled_xyz_module"
    assert by_id["acme__gone-1"]["reason"] == "no_repository"
    assert report["counts"] == {"missing_dependency": 1, "no_repository": 2, "runnable": 1}
    assert report["runnable"] == 1 and "1 of 4 instance(s) runnable" in done.output
    assert report["complete"] is True


def test_a_runner_whose_output_cannot_be_read_is_a_reason_and_the_check_goes_on(
    upstream: tuple[str, str], tmp_path: Path
) -> None:
    # the runner ends before it reports a status (a conftest leaving at once, as a runner crashing or
    # a log of another format would): nothing to read is said so, not "fails with gold"
    template, sha = upstream
    mute = TESTS + _test_patch("conftest.py", "import os\nos._exit(0)\n").replace(
        "tests/conftest.py", "conftest.py"
    )
    rows = [
        _row("acme__calc-1", "acme/calc", sha, mute, ["tests/test_calc.py::test_add"]),
        _row("acme__calc-2", "acme/calc", sha, TESTS, ["tests/test_calc.py::test_add"]),
    ]
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "check.json"
    args = ["env-check", str(dataset), "--out", str(out), "--repo-url", template]
    done = CliRunner().invoke(app, [*args, "--repo-cache", str(tmp_path / "cache")])
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    assert [(r["instance_id"], r["reason"]) for r in report["rows"]] == [
        ("acme__calc-1", "unparsable_output"),
        ("acme__calc-2", "runnable"),
    ]
    assert report["rows"][0]["gold"]["tests_reported"] == 0
    assert "unparsable_output" in report["reasons"]


def test_a_django_instance_runs_on_an_approximate_tree_marked_so(
    upstream: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.django_sdist import FAIL_TO_PASS, TEST_PATCH, index

    template, sha = upstream
    row = _row("django__django-1", "django/django", sha, TEST_PATCH, FAIL_TO_PASS)
    passes = _row(
        "django__django-2",
        "django/django",
        sha,
        TEST_PATCH,
        ["test_zero (calc_tests.tests.AddTests)"],
    )
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text(json.dumps(row) + "\n" + json.dumps(passes) + "\n")
    out = tmp_path / "check.json"
    args = ["env-check", str(dataset), "--out", str(out), "--repo-url", template]
    with index() as (url, _):
        monkeypatch.setenv("PIP_INDEX_URL", url)  # the index pip uses is the one asked
        done = CliRunner().invoke(app, [*args, "--repo-cache", str(tmp_path / "cache")])
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    first, second = report["rows"]
    assert (first["runner"], first["runnable"], first["reason"]) == ("django", True, "runnable")
    # the docstring-named test and Python 3.11's long form of the other are both found
    assert first["gold"]["fail_to_pass"] == {"passed": 2}
    assert first["none"]["fail_to_pass"] == {"failed": 2}
    assert first["approximate_tree"] is True
    assert first["tree_source"]["source"]["sdist"] == "Django-1.0.tar.gz"
    assert first["tree_source"]["reversed"] == ["gold_patch", "test_patch"]
    assert second["reason"] == "passes_without_fix" and second["approximate_tree"] is True
    assert report["approximate_tree"] == {
        "instances": 2,
        "runnable": 1,
        "counts": {"passes_without_fix": 1, "runnable": 1},
    }
    assert "approximate: Django-1.0.tar.gz" in done.output


def test_a_log_that_names_no_status_is_unparsable_not_guessed() -> None:
    from agentic_rubrics.pipeline.envcheck import why
    from agentic_rubrics.sandbox.testrun import ExecRun

    run = ExecRun(
        "git_apply", exit_code=1, reason="no_tests_collected", excerpt="Segmentation fault"
    )
    assert why(run, "django") == ("unparsable_output", "exit 1: Segmentation fault")
    assert why(run, "pytest") is None  # pytest's no-tests keeps its own reading


def test_env_check_on_a_swerex_deployment(
    upstream: tuple[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    template, sha = upstream
    stages = tmp_path / "stages"  # the local deployment's /tmp: each run's staging folder goes
    stages.mkdir()
    monkeypatch.setattr(testrun_swerex, "STAGE_ROOT", str(stages))
    dataset = tmp_path / "rows.jsonl"
    row = _row("acme__calc-1", "acme/calc", sha, TESTS, ["tests/test_calc.py::test_add"])
    dataset.write_text(json.dumps(row) + "\n")
    out = tmp_path / "check.json"
    args = ["env-check", str(dataset), "--out", str(out), "--repo-url", template]
    args += ["--repo-cache", str(tmp_path / "cache"), "--swerex", "swerex-local"]
    done = CliRunner().invoke(app, [*args, "--test-python", "/usr/bin/python3"])
    assert done.exit_code == 0, done.output
    report = json.loads(out.read_text())
    assert report["site"] == {"kind": "swerex-local", "python": "/usr/bin/python3"}
    assert [(r["reason"], r["gold"]["fail_to_pass"]) for r in report["rows"]] == [
        ("runnable", {"passed": 1})
    ]
    assert list(stages.iterdir()) == []


def test_env_check_refuses_an_unknown_instance(upstream: tuple[str, str], tmp_path: Path) -> None:
    sha = upstream[1]
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text(json.dumps(_row("a__b-1", "acme/calc", sha, TESTS, ["x"])) + "\n")
    args = ["env-check", str(dataset), "--out", str(tmp_path / "o.json"), "--instances", "nope"]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 2 and "--instances: not in the dataset: nope" in done.output


def test_runners_and_directives_as_the_harness_has_them() -> None:
    assert [runner_for(r) for r in ("sympy/sympy", "django/django", "psf/requests")] == [
        "sympy",
        "django",
        "pytest",
    ]
    patch = TESTS + _test_patch("data.json", "{}\n")
    assert directives(patch) == ["tests/test_calc.py"]
    log = "test_one ok\ntest_two F\n  test_three E\n_test_four f\n"
    log += "test_five F                                  [FAIL]\ntest_six ok    [OK]\n"
    assert parse_outcomes("sympy", log) == {
        "test_one": "passed",
        "test_two": "failed",
        "test_three": "error",
        "_test_four": "xfailed",
        "test_five": "failed",  # a file's last test carries the file's status after its own
        "test_six": "passed",
    }
    kept = [line for line in log.splitlines() if re.search(outcome_filter("sympy"), line)]
    assert len(kept) == 6


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder the sandbox's unprivileged host user may walk through (pytest's are closed)."""
    path = Path(tempfile.mkdtemp(prefix="agentic-rubrics-envtest-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_spec_env_is_built_once_and_seen_read_only(open_dir: Path) -> None:
    tree = open_dir / "tree"
    tree.mkdir()
    (tree / "x.py").write_text("X = 1\n")
    spec = EnvSpec(install_tree=False)
    first = build_env(spec, tree, cache_dir=open_dir / "envs", repo="a/b", repo_version="1")
    marker = Path(first.python).parents[2] / "env.json"
    stamp = marker.stat().st_mtime_ns
    second = build_env(spec, tree, cache_dir=open_dir / "envs", repo="a/b", repo_version="1")
    assert (first.built, second.built) == (True, False)
    assert second.python == first.python and marker.stat().st_mtime_ns == stamp
    key = {"real_python": "/usr/bin/python3.11", "version": "3.11.2", "repo": "a/b"}
    keys = {
        env_key(spec, **key, repo_version="1"),
        env_key(spec, **key, repo_version="2"),  # another version, another venv
        env_key(EnvSpec(install_tree=False, requirements=["x"]), **key, repo_version="1"),
        env_key(EnvSpec(install_tree=False, build_env={"A": "1"}), **key, repo_version="1"),
        # an installed tree whose packaging files differ (another commit's dependencies)
        env_key(spec, **key, repo_version="1", packaging="0123456789abcdef"),
    }
    assert len(keys) == 5
    (tree / "setup.py").write_text(
        "from setuptools import setup\nsetup(install_requires=['a<2'])\n"
    )
    before = packaging_hash(tree)
    (tree / "setup.py").write_text(
        "from setuptools import setup\nsetup(install_requires=['a<3'])\n"
    )
    assert packaging_hash(tree) != before
    (tree / "setup.py").unlink()
    prepared = PreparedTree(tree)
    try:
        venv = Path(first.python).parents[1]
        probe = (
            f"{first.python} -c 'import sys; print(\"PASSED\", sys.prefix)';"
            f" touch {venv}/written && echo 'FAILED writable'"
        )
        run = asyncio.run(
            run_tests(
                prepared.path,
                "",
                {},
                command=RunCommand(probe),
                read_only=first.read_only,
                limits=ExecLimits(timeout_s=30),
            )
        )
    finally:
        prepared.close()
    assert run.outcomes == {str(venv): "passed"}, run.excerpt
    assert not (venv / "written").exists()


def test_a_spec_that_cannot_install_says_why_and_caches_nothing(open_dir: Path) -> None:
    # no index: the package cannot be found, and nothing is fetched
    spec = EnvSpec(
        requirements=["agentic-rubrics-no-such-package"],
        install_tree=False,
        build_env={"PIP_NO_INDEX": "1"},
    )
    with pytest.raises(EnvBuildError, match="pip install failed"):
        build_env(spec, open_dir, cache_dir=open_dir / "envs", repo="a/b", repo_version="1")
    assert not [p for p in (open_dir / "envs").iterdir() if p.is_dir()]


def test_a_test_runs_through_a_swerex_deployment(tmp_path: Path) -> None:
    from agentic_rubrics.sandbox.base import Where
    from agentic_rubrics.sandbox.swerex import SweRexLocalConfig
    from agentic_rubrics.sandbox.testrun_swerex import run_tests_swerex

    tree = tmp_path / "tree"
    for rel, text in BASE.items():
        (tree / rel).parent.mkdir(parents=True, exist_ok=True)
        (tree / rel).write_text(text)
    tests = {
        "test_calc.py": b"from calc import add\n\ndef test_add():\n    assert add(2, 2) == 4\n"
    }
    where = Where("acme__calc-1", tree)
    config = SweRexLocalConfig()

    def run(patch: str) -> object:
        return asyncio.run(run_tests_swerex(config, where, patch, tests, python="/usr/bin/python3"))

    gold, none = run(GOLD), run("")
    assert gold.outcomes == {"agentic_rubrics_tests/test_calc.py::test_add": "passed"}  # type: ignore[attr-defined]
    assert none.outcomes == {"agentic_rubrics_tests/test_calc.py::test_add": "failed"}  # type: ignore[attr-defined]
    assert (tree / "calc/__init__.py").read_text() == BASE["calc/__init__.py"]  # a copy was patched
    assert gold.cpu_s is not None and gold.cpu_s > 0  # type: ignore[attr-defined]


def test_the_build_keeps_the_network_and_gets_pip_and_spec_variables(
    monkeypatch: pytest.MonkeyPatch, open_dir: Path
) -> None:
    from agentic_rubrics.sandbox.testenv import networked_argv

    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:1/simple")
    variables = {"SETUPTOOLS_SCM_PRETEND_VERSION": "5.4.0"}
    argv = networked_argv(open_dir, open_dir, open_dir / "env", "true", variables)
    assert "--share-net" in argv
    assert argv[argv.index("PIP_INDEX_URL") - 1 : argv.index("PIP_INDEX_URL") + 2] == [
        "--setenv",
        "PIP_INDEX_URL",
        "http://127.0.0.1:1/simple",
    ]
    assert argv[argv.index("SETUPTOOLS_SCM_PRETEND_VERSION") + 1] == "5.4.0"
    assert ["--bind", str(open_dir / "env"), str(open_dir / "env")] == argv[
        argv.index(str(open_dir / "env")) - 1 : argv.index(str(open_dir / "env")) + 2
    ]


def test_what_the_install_writes_in_the_tree_is_laid_over_each_tree(open_dir: Path) -> None:
    # setuptools-scm's _version.py, egg-info, extensions built in place: SWE-bench's images have them
    # in /testbed; the build ran on a copy, so each task's tree gets them from the environment
    from agentic_rubrics.sandbox.built_files import add_built_files

    tree = open_dir / "tree"
    (tree / "pkg").mkdir(parents=True)
    (tree / "pkg" / "__init__.py").write_text("from pkg._version import VERSION\n")
    (tree / "setup.py").write_text(
        "from pathlib import Path\nfrom setuptools import setup\n"
        "Path('pkg/_version.py').write_text('VERSION = \"1.2\"\\n')\n"
        "setup(name='pkg', version='1.2', packages=['pkg'])\n"
    )
    # no index, no isolated build: the venv's own setuptools runs setup.py
    offline = {"PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0"}
    interp = build_env(
        EnvSpec(build_env=offline), tree, cache_dir=open_dir / "envs", repo="a/b", repo_version="1"
    )
    assert interp.tree_files is not None
    assert (interp.tree_files / "pkg" / "_version.py").is_file()
    assert not (interp.tree_files / "setup.py").exists()  # only what the tree did not have
    assert not (tree / "pkg" / "_version.py").exists()  # the build ran on a copy
    probe = f"{interp.python} -c 'import pkg; print(\"PASSED\", pkg.VERSION)'"

    def run(lay_over: bool) -> dict[str, str]:
        prepared = PreparedTree(tree)
        try:
            if lay_over:
                assert add_built_files(interp.tree_files, prepared.path) >= 1
            done = asyncio.run(
                run_tests(
                    prepared.path,
                    "",
                    {},
                    command=RunCommand(probe),
                    read_only=interp.read_only,
                    limits=ExecLimits(timeout_s=60),
                )
            )
        finally:
            prepared.close()
        return dict(done.outcomes)

    assert run(lay_over=False) == {}  # ModuleNotFoundError: pkg._version
    assert run(lay_over=True) == {"1.2": "passed"}
    cached = build_env(
        EnvSpec(build_env=offline), tree, cache_dir=open_dir / "envs", repo="a/b", repo_version="1"
    )
    assert (cached.built, cached.tree_files) == (False, interp.tree_files)
