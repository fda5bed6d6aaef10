"""A run's tests verifier on an approximate tree: a task whose repository is not to be had takes the
release sdist env-check found it runnable on (``repos.approximate_trees``), and every result says so —
status.json, each outcome row, the task's record and the report; a task env-check did not find
runnable on one stays ``no_repository``.

Needs bubblewrap and a ``python3`` with pytest (as tests/test_verifier_tests.py)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from agentic_rubrics.datasets.bundled import load_examples
from agentic_rubrics.datasets.sdist_trees import SdistTrees, approved_tree, approximate_cache
from agentic_rubrics.exceptions import RepoError
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from tests.django_sdist import index
from tests.test_verifier_tests import FAST, PAGEWISE, PROBLEM

if os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1" and PROBLEM:  # pragma: no cover
    raise RuntimeError(f"CI requires the test sandbox: {PROBLEM}")
needs_sandbox = pytest.mark.skipif(PROBLEM is not None, reason=f"cannot run tests: {PROBLEM}")


def _release(tmp_path: Path) -> tuple[Path, dict[str, object]]:
    """The pagewise example's tree served as Django 1.0's sdist and made an approximate tree in the
    cache a run with ``repos.cache_dir = tmp_path/repos`` reads; the env-check report that found it
    runnable (one row), and its mark."""
    example = next(e for e in load_examples() if e.task.instance_id == PAGEWISE)
    repo = example.folder / "repo"
    files = {
        str(p.relative_to(repo)): p.read_text() for p in sorted(repo.rglob("*")) if p.is_file()
    }
    cache = approximate_cache(tmp_path / "repos")
    with index(("1.0",), files=files) as (url, _):
        tree = SdistTrees(cache, "first", index=url).tree("case-approx", "django/django", "1.0", {})
    mark = json.loads((tree.parent / "approximate.json").read_text())
    rows = [{"instance_id": "case-approx", "runnable": True, "approximate_tree": True}]
    rows[0]["tree_source"] = mark
    rows.append({"instance_id": "case-not", "runnable": False, "approximate_tree": True})
    report = tmp_path / "env-check.json"
    report.write_text(json.dumps({"rows": rows}))
    return report, mark


def test_only_a_tree_env_check_ran_and_found_runnable_is_approved(tmp_path: Path) -> None:
    report, mark = _release(tmp_path)
    cache = approximate_cache(tmp_path / "repos")
    assert approved_tree(report, "case-approx", cache).name == "tree"
    with pytest.raises(RepoError) as caught:
        approved_tree(report, "case-not", cache)
    assert caught.value.reason == "approximate_not_runnable"
    with pytest.raises(RepoError) as caught:
        approved_tree(report, "case-absent", cache)
    assert caught.value.reason == "approximate_not_runnable"
    # another tree than the one env-check ran (its sdist differs): refused
    (cache / "instances" / "case-approx.first" / "approximate.json").write_text(
        json.dumps({**mark, "source": {**mark["source"], "sha256": "0" * 64}})  # type: ignore[dict-item]
    )
    with pytest.raises(RepoError) as caught:
        approved_tree(report, "case-approx", cache)
    assert caught.value.reason == "approximate_tree_missing"


@needs_sandbox
def test_the_tests_verifier_marks_every_result_on_an_approximate_tree(tmp_path: Path) -> None:
    report, mark = _release(tmp_path)
    example = next(e for e in load_examples() if e.task.instance_id == PAGEWISE)
    rows = []
    for name in ("case-approx", "case-not"):
        task = example.task.model_copy(
            # its own repository (pytest's layout); none to be had: the approximate tree stands in
            update={"instance_id": name, "repo_path": None}
        )
        rows.append(task.model_dump(mode="json"))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    given = tmp_path / "given"
    for name in ("case-approx", "case-not"):
        shutil.copytree(example.folder / "hidden_tests", given / name)
    repos = {
        "url_template": f"file://{tmp_path}/nowhere/{{owner}}__{{name}}",
        "cache_dir": str(tmp_path / "repos"),
        "approximate_trees": str(report),
    }
    limits = {"timeout_s": 60, "max_write_mib": 16, "reruns": 0}
    config = RunConfig(verifiers=["tests"], tests_dir=str(given), tests=limits, repos=repos, **FAST)
    run(tasks, tmp_path / "run", config)
    records = {i: r.baselines["tests"] for i, r in RunFolder(tmp_path / "run").progress().items()}
    approx, other = records["case-approx"], records["case-not"]
    assert approx["status"] == "graded" and approx["approximate_tree"] is True
    assert other["status"] == "missing" and str(other["reason"]).startswith("no_repository")
    assert "approximate_tree" not in other
    outcomes = read_jsonl(tmp_path / "run" / "tests" / "case-approx" / "outcomes.jsonl")
    assert outcomes and all(row["approximate_tree"] is True for _, row in outcomes)
    status = json.loads((tmp_path / "run" / "tests" / "case-approx" / "status.json").read_text())
    assert status["approximate_tree"] == mark
    built = json.loads((tmp_path / "run" / "report.json").read_text())
    assert built["verifiers"]["tests"]["approximate_tree"] == 1
    assert "graded on an approximate tree" in (tmp_path / "run" / "report.md").read_text()


def test_a_run_on_approximate_trees_hashes_apart_and_cannot_resume_one_without() -> None:
    from agentic_rubrics.pipeline.config import config_differences

    plain = RunConfig(**FAST)
    assert (
        plain.content_hash() == RunConfig(repos={"cache_dir": "/elsewhere"}, **FAST).content_hash()
    )
    approx = RunConfig(repos={"approximate_trees": "/env-check.json"}, **FAST)
    assert approx.content_hash() != plain.content_hash()
    differences = config_differences(plain.model_dump(mode="json"), approx.model_dump(mode="json"))
    assert differences["results"] == ["repos.approximate_trees: None -> '/env-check.json'"]
