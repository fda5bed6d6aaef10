"""Shared helpers: real git repositories for real diffs, and small rubric builders."""

from __future__ import annotations

import asyncio
import subprocess
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from agentic_rubrics.types import Rubric

# a ResourceWarning or unraisable exception in a process the tests start fails the test (and the run)
pytest_plugins = ("tests.leak_guard",)


T = TypeVar("T")


def run_closing(coro: Coroutine[Any, Any, T], *doors: Any) -> T:
    """``asyncio.run(coro)``, then each model door (an ``LLM``) closed in the same event loop, as a run
    closes its context: litellm's connections of that loop are closed with it, not left open."""

    async def go() -> T:
        try:
            return await coro
        finally:
            for door in doors:
                await door.aclose()

    return asyncio.run(go())


def git(repo: Path, *args: str) -> str:
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
        "HOME": str(repo),
        "PATH": "/usr/bin:/bin:/usr/local/bin",
    }
    out = subprocess.run(
        ["git", "-c", "core.autocrlf=false", *args],
        cwd=repo,
        env=env,
        check=True,
        capture_output=True,
    )
    return out.stdout.decode("utf-8", "surrogateescape")


@pytest.fixture
def git_repo(tmp_path: Path) -> Callable[[dict[str, bytes | str]], tuple[Path, Callable[..., str]]]:
    """Create a committed repo from {path: content}; return it and a `diff()` of the work tree."""

    def make(files: dict[str, bytes | str]) -> tuple[Path, Callable[..., str]]:
        repo = tmp_path / "repo"
        repo.mkdir()
        git(repo, "init", "-q")
        for rel, content in files.items():
            p = repo / rel
            p.parent.mkdir(parents=True, exist_ok=True)
            p.write_bytes(content.encode() if isinstance(content, str) else content)
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "base")

        def diff(*extra: str) -> str:
            git(repo, "add", "-A")
            return git(repo, "diff", "--cached", "-M", *extra)

        return repo, diff

    return make


STAGE_OF_TEST: dict[str, str] = {
    "test_imports": "base",
    "test_leak_guard": "base",
    "test_habits": "base",
    "test_package": "base",
    "test_rows": "base",
    "test_secrets": "base",
    "test_redaction": "base",
    "test_hostile_bounds": "base",
    "test_hostile_inputs": "base",
    "test_hostile_rows": "base",
    "test_swebench": "datasets",
    "test_repos": "datasets",
    "test_examples": "datasets",
    "test_run_inputs": "datasets",
    "test_llm_auto": "llm",
    "test_llm_judge": "llm",
    "test_model_early_stop": "llm",
    "test_model_matrix": "llm",
    "test_hostile_replies": "llm",
    "test_run_spending": "llm",
    "test_rubric": "rubric",
    "test_compound_items": "rubric",
    "test_checks": "rubric",
    "test_behaviour": "rubric",
    "test_checks_repo": "rubric",
    "test_hostile_rubrics": "rubric",
    "test_postimage": "rubric",
    "test_postimage_hostile": "rubric",
    "test_postimage_worker": "rubric",
    "test_grounding": "rubric",
    "test_prompts": "rubric",
    "test_prompt_fidelity": "rubric",
    "test_sandbox_bwrap": "sandbox",
    "test_sandbox_limits": "sandbox",
    "test_sandbox_local": "sandbox",
    "test_sandbox_netcut": "sandbox",
    "test_sandbox_swerex": "sandbox",
    "test_sandbox_swerex_docker": "sandbox",
    "test_docker_real": "sandbox",
    "test_docker_offline": "sandbox",
    "test_docker_failures": "sandbox",
    "test_testrun": "sandbox",
    "test_verifier_tests": "pipeline",
    "test_verifier_tests_env": "pipeline",
    "test_envcheck": "sandbox",
    "test_testlogs_django": "sandbox",
    "test_sdist_trees": "datasets",
    "test_approximate_run": "pipeline",
    "test_testlayout": "pipeline",
    "test_worker_start": "pipeline",
    "test_config_unions": "sandbox",
    "test_test_infra": "base",
    "test_tests_guard": "pipeline",
    "test_agent": "explore",
    "test_agent_fencing": "explore",
    "test_agent_models": "explore",
    "test_agent_tools": "explore",
    "test_static_grounding": "explore",
    "test_real_repos": "explore",
    "test_fake_agent_run": "explore",
    "test_metrics": "rank",
    "test_bootstrap": "rank",
    "test_scoring": "rank",
    "test_selectors": "rank",
    "test_fusion": "rank",
    "test_similarity": "rank",
    "test_verifier_similarity": "pipeline",
    "test_verifier_registry": "pipeline",
    "test_compare_verifiers": "pipeline",
    "test_content": "rank",
    "test_consensus": "rank",
    "test_probes": "rank",
    "test_content_bench": "rank",
    "test_offline": "rank",
    "test_reporting": "report",
    "test_study": "report",
    "test_demo_reference": "report",
    "test_export_sft": "export",
    "test_view": "report",
    "test_item_audit": "report",
    "test_method_comparison": "report",
    "test_pipeline": "pipeline",
    "test_driver": "pipeline",
    "test_llm_pipeline": "pipeline",
    "test_ray": "pipeline",
    "test_repos_pipeline": "pipeline",
    "test_run_failures": "pipeline",
    "test_reward": "reward",
    "test_reward_absent": "reward",
    "test_reward_connections": "reward",
    "test_gaming": "gaming",
    "test_gaming_gate": "gaming",
    "test_cli_help": "face",
    "test_options": "face",
    "test_readme": "face",
}
"""Each test file's stage (the package folder, or ``base`` for the ground floor, ``face`` for the
command line and the docs): ``pytest -m <stage>`` runs one stage's tests (the markers are declared in
pyproject.toml; a test file left out here fails the collection)."""


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Each test gets its file's stage marker; tests marked ``slow`` first (a stable sort).

    Under `make test` (pytest-xdist, --dist loadgroup) the workers take tests in this order, after the
    xdist groups: a slow test started last would run alone while the other workers wait for it.
    """
    for item in items:
        stem = item.path.stem
        if stem not in STAGE_OF_TEST:
            raise pytest.UsageError(f"{item.path.name}: give it a stage in tests/conftest.py")
        item.add_marker(getattr(pytest.mark, STAGE_OF_TEST[stem]))
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Under AGENTIC_RUBRICS_REQUIRE_DOCKER=1 (CI), the run fails when it leaves a container labelled
    agentic_rubrics behind (checked once, by the process that ran or coordinated the tests)."""
    import os

    if os.environ.get("AGENTIC_RUBRICS_REQUIRE_DOCKER") != "1" or hasattr(
        session.config, "workerinput"
    ):
        return
    from agentic_rubrics.sandbox.docker_cli import LABEL, docker

    left = docker(["ps", "-aq", "--filter", f"label={LABEL}"], timeout=60)
    if left:
        session.config.get_terminal_writer().line(
            f"containers left behind (docker ps -aq --filter label={LABEL}): {left.split()}",
            red=True,
        )
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_runtest_setup(item: pytest.Item) -> None:
    """Under `make test` (pytest-xdist, --dist loadgroup) a test marked xdist_group is really grouped.

    pytest-xdist groups by appending "@group" to the node id; where that silently stops working (pytest
    9.2 with pytest-xdist 3.8), a module's shared fixture or Ray cluster would be made once per worker.
    """
    if (
        getattr(item.config.option, "loadgroup", False)
        and item.get_closest_marker("xdist_group") is not None
        and "@" not in item.nodeid
    ):
        pytest.fail("pytest-xdist did not group this test (see the pins in constraints.txt)")


def item(
    item_id: str,
    weight: int = 2,
    check: dict[str, Any] | None = None,
    gate: bool = False,
    description: str | None = None,
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "id": item_id,
        "description": description or f"Satisfies criterion {item_id.lower()}",
        "weight": weight,
    }
    if check is not None:
        out["check"] = check
    if gate:
        out["gate"] = True
    return out


def rubric(**axes: list[dict[str, Any]]) -> Rubric:
    return Rubric.model_validate(
        {
            "metadata": {"task_summary": "t", "underlying_bug": "b"},
            "axes": {
                f"{k}_rubrics" if not k.endswith("_rubrics") else k: v for k, v in axes.items()
            },
        }
    )
