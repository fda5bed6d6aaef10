"""The Ray executor on a local cluster: same results, same resume semantics, same global limits."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.pipeline.config import RunConfig, load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.testing import LoopbackServer, judge_answer

from .test_llm_pipeline import make_inputs

ray = pytest.importorskip("ray")  # `make test` installs the [ray] extra, so this runs in CI
# one local cluster for the module: under pytest-xdist all of it runs in one worker
pytestmark = pytest.mark.xdist_group("ray")


@pytest.fixture(scope="module")
def cluster() -> Iterator[None]:
    # Ray waits a fixed 30 s for its raylet to register; on a busy 2-core machine (the other test
    # worker, mypy) that can pass, so a start that timed out is tried again on a fresh node
    for attempt in range(3):
        try:
            ray.init(
                num_cpus=2,
                include_dashboard=False,
                object_store_memory=80 * 1024 * 1024,
                log_to_driver=False,
            )
            break
        except Exception as exc:
            ray.shutdown()
            if "timed out during startup" not in str(exc) or attempt == 2:
                raise
    yield
    ray.shutdown()


uses_cluster = pytest.mark.usefixtures("cluster")


def sorted_rows(path: Path) -> list[dict[str, Any]]:
    return sorted(
        (r for _, r in read_jsonl(path)),
        key=lambda r: (r["instance_id"], r["candidate_id"], r["item_id"], r["repeat"]),
    )


@uses_cluster
def test_ray_gives_the_local_results(tmp_path: Path) -> None:
    tasks = write_tasks_jsonl(tmp_path / "tasks.jsonl")
    local = run(
        tasks, tmp_path / "local", load_config(None, {"bootstrap_resamples": 50, "plots": False})
    )
    remote = run(
        tasks,
        tmp_path / "ray",
        load_config(None, {"bootstrap_resamples": 50, "plots": False, "executor": "ray"}),
    )
    assert local is not None and remote is not None
    assert sorted_rows(tmp_path / "local" / "verdicts.jsonl") == sorted_rows(
        tmp_path / "ray" / "verdicts.jsonl"
    )
    assert local["selectors"] == remote["selectors"] and local["tasks"] == remote["tasks"]
    for rubric in (tmp_path / "local" / "rubrics").glob("*/rubrics.yaml"):
        assert (
            rubric.read_text()
            == (tmp_path / "ray" / "rubrics" / rubric.parent.name / "rubrics.yaml").read_text()
        )


@uses_cluster
def test_ray_resumes_a_folder_without_redoing_finished_tasks(tmp_path: Path) -> None:
    tasks = write_tasks_jsonl(tmp_path / "tasks.jsonl")
    first = tmp_path / "first.jsonl"
    first.write_text("".join(tasks.read_text().splitlines(keepends=True)[:4]))
    out = tmp_path / "out"
    run(
        first, out, load_config(None, {"bootstrap_resamples": 0, "plots": False})
    )  # the local executor did 4 tasks
    before = (out / "progress.jsonl").read_text()
    stamps = {p: p.stat().st_mtime_ns for p in (out / "rubrics").glob("*/status.json")}
    run(
        tasks, out, load_config(None, {"bootstrap_resamples": 0, "plots": False, "executor": "ray"})
    )  # same config hash
    after = (out / "progress.jsonl").read_text()
    assert after.startswith(before)
    ids = [json.loads(line)["instance_id"] for line in after.splitlines()]
    assert len(ids) == len(set(ids)) == 10
    assert {p: p.stat().st_mtime_ns for p in stamps} == stamps


class HandedLength:
    """A selector handed over in Python, with features the workers compute: the shortest patch."""

    name = "handed_length"

    async def features(self, given: Any) -> dict[str, Any]:
        return {"handed_length": {cid: len(p) for cid, p in given.patches.items()}}

    def ranking(self, task: Any) -> dict[str, float | None]:
        lengths = task.baselines["handed_length"]
        return {cid: -float(lengths[cid]) for cid in task.scores}


@uses_cluster
def test_a_selector_handed_over_in_python_reaches_the_workers(tmp_path: Path) -> None:
    lines = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines[:2]) + "\n")
    config = RunConfig.model_validate(
        {"executor": "ray", "selectors": [HandedLength, "rubric"], "bootstrap_resamples": 0}
    )
    report = run(tasks, tmp_path / "out", config)
    assert report is not None and report.primary_selector == "handed_length"
    assert report.selectors["handed_length"].tasks == 2
    progress = [r for _, r in read_jsonl(tmp_path / "out" / "progress.jsonl")]
    assert all("handed_length" in r["baselines"] for r in progress)


@uses_cluster
def test_global_limits_hold_across_workers(tmp_path: Path) -> None:
    from agentic_rubrics.pipeline.driver import run_tasks

    tasks_file, rubrics = make_inputs(tmp_path, n_tasks=6)
    with LoopbackServer(judge_answer(1), latency=0.05) as server:
        config = load_config(None, {
            "executor": "ray", "workers": 2, "rubrics_dir": str(rubrics), "max_sandboxes": 1,
            "selectors": ["rubric", "random"], "bootstrap_resamples": 0, "plots": False,
            "judge": {"kind": "llm", "model": {"model": "openai/judge-under-test", "api_base": server.url, "concurrency": 1}},
        })  # fmt: skip
        folder = RunFolder(tmp_path / "out")
        folder.open(config.model_dump(mode="json"), config.content_hash())
        from agentic_rubrics.runfolder.tasks import load_tasks

        state = asyncio.run(run_tasks(load_tasks(tasks_file), config, folder, None))
        assert server.max_in_flight == 1  # one model call at a time, though two workers ran
        assert len(server.requests) == 6 * 2
    assert state["peaks"] == {"llm:openai/judge-under-test@" + server.url: 1}
    assert len(folder.progress()) == 6


@uses_cluster
def test_the_budget_is_global_across_workers(tmp_path: Path) -> None:
    tasks_file, rubrics = make_inputs(tmp_path, n_tasks=4)
    with LoopbackServer(judge_answer(1)) as server:
        config = load_config(None, {
            "executor": "ray", "workers": 2, "rubrics_dir": str(rubrics), "max_cost_usd": 0.025,
            "selectors": ["rubric", "random"], "bootstrap_resamples": 0, "plots": False,
            "judge": {"kind": "llm", "model": {"model": "openai/priced-judge", "api_base": server.url, "concurrency": 1,
                                                "input_cost_per_token": 1e-4}},
        })  # fmt: skip
        report = run(tasks_file, tmp_path / "out", config)
        # $0.01 per call; the third starts at $0.02 < $0.025, then the run-wide budget stops the rest
        assert len(server.requests) == 3
    assert report is not None and report["verdicts"]["missing_by_reason"]["budget"] > 0


def test_without_ray_the_flag_fails_clearly(tmp_path: Path) -> None:
    tasks = write_tasks_jsonl(tmp_path / "tasks.jsonl")
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "from agentic_rubrics.cli.app import main\n"
        f"sys.argv = ['agentic-rubrics', 'run', '--tasks', {str(tasks)!r}, '--out', {str(tmp_path / 'o')!r}, '--executor', 'ray', '-q']\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 2
    assert "--executor ray needs Ray: pip install 'agentic-rubrics[ray]'" in done.stderr


@uses_cluster
def test_the_scale_benchmark_runs_and_agrees(tmp_path: Path) -> None:
    """In this process, on this module's cluster and its warm workers (the command starts its own)."""
    spec = importlib.util.spec_from_file_location(
        "scale_benchmark", Path(__file__).resolve().parents[1] / "benchmarks" / "scale.py"
    )
    assert spec is not None and spec.loader is not None
    scale = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(scale)
    argv = ["--copies", "2", "--tasks", "1", "--latency", "0.05", "--out", str(tmp_path)]
    assert scale.main(argv) == 0
    assert ray.is_initialized()  # the module's cluster is left running
    result = json.loads((tmp_path / "scale.json").read_text())
    assert result["identical_verdicts"] and result["tasks"] == 2 and result["speedup"] > 0
    # copies of a task are distinct tasks: every model call of a run reaches the server
    assert result["model_calls"]["1_worker"] > 0
    assert result["cached_calls"] == {"1_worker": 0, "2_workers": 0}
