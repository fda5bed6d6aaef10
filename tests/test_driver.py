"""The driver: executors only compute records; it stores them, bounds what is in flight, reports."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.pipeline.driver import Job, drive
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.records import ArtifactRecord, TaskRecord, run_folder_schema
from agentic_rubrics.runfolder.rows import ProgressRow, RubricStatus, RubricSummary
from agentic_rubrics.types import SCHEMA, Candidate, Task


def _task(n: int) -> Task:
    return Task(
        instance_id=f"t{n}",
        repo="o/r",
        base_commit="abc",
        problem_statement="x",
        candidates=[Candidate(id="c1", patch="")],
    )


def _record(job: Job) -> TaskRecord:
    iid = job.task.instance_id
    status = RubricStatus(instance_id=iid, source="scripted", status="failed", reason="scripted")
    rubric = ArtifactRecord(instance_id=iid, verifier="rubric", folder="rubrics", status=status)
    if job.explore_only:
        return TaskRecord(instance_id=iid, artifacts=[rubric], judged=False, calls=1, usd=0.5)
    row = {"schema": SCHEMA, "instance_id": iid, "candidate_id": "c1", "item_id": "FC1",
           "axis": "file_change_rubrics", "weight": 1, "origin": "missing", "value": None,
           "reason": "rubric_error", "repeat": 0}  # fmt: skip
    return TaskRecord(instance_id=iid, artifacts=[rubric], judged=True, verdict_rows=[row],
                      progress=ProgressRow(instance_id=iid, candidates=[], explorer="scripted",
                                           judge="scripted", rubric=RubricSummary(status="failed")),
                      patches=[],
                      calls=2, usd=1.0)  # fmt: skip


class ScriptedExecutor:
    """An executor that computes records in this loop after a short wait; ``fail`` raises instead."""

    def __init__(self, capacity: int, fail: str | None = None) -> None:
        self.capacity = capacity
        self.fail = fail
        self.in_flight = self.most_in_flight = 0
        self.closed = False

    async def _run(self, job: Job) -> TaskRecord:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(0.01 * (3 - int(job.task.instance_id[1:]) % 3))
            if job.task.instance_id == self.fail:
                raise RuntimeError("scripted failure")
            return _record(job)
        finally:
            self.in_flight -= 1

    def start(self, job: Job) -> asyncio.Task[TaskRecord]:
        return asyncio.create_task(self._run(job))

    async def finished(self, handles: list[Any]) -> list[Any]:
        done, _ = await asyncio.wait(handles, return_when=asyncio.FIRST_COMPLETED)
        return list(done)

    def record(self, handle: Any) -> TaskRecord:
        result: TaskRecord = handle.result()
        return result

    async def close(self) -> dict[str, Any]:
        self.closed = True
        return {"spent": 0.0, "peaks": {}}


def _folder(tmp_path: Path) -> RunFolder:
    folder = RunFolder(tmp_path / "run")
    folder.open({"x": 1}, "sha256:x")
    return folder


def test_the_driver_stores_every_record_bounds_the_jobs_in_flight_and_reports(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path)
    events: list[tuple[str, str, dict[str, Any]]] = []
    executor = ScriptedExecutor(capacity=2)
    jobs = [Job(_task(n), None, explore_only=False) for n in range(5)]
    asyncio.run(drive(executor, jobs, folder, lambda *e: events.append(e)))
    assert executor.most_in_flight == 2 and executor.closed
    assert sorted(folder.progress()) == [f"t{n}" for n in range(5)]
    assert len(folder.verdict_rows()) == 5
    assert all(folder.rubric_status(f"t{n}") is not None for n in range(5))
    assert [e[0] for e in events] == ["judged"] * 5
    assert events[-1][2] == {"usd": 5.0, "calls": 10, "missing": 1}


def test_explore_only_records_write_the_rubric_status_and_no_progress_row(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    events: list[tuple[str, str, dict[str, Any]]] = []
    jobs = [Job(_task(n), None, explore_only=True) for n in range(3)]
    asyncio.run(drive(ScriptedExecutor(capacity=3), jobs, folder, lambda *e: events.append(e)))
    assert folder.progress() == {}
    assert json.loads(folder.rubric_status_path("t1").read_text())["reason"] == "scripted"
    assert {e[0] for e in events} == {"explored"} and events[-1][2]["calls"] == 3


def test_a_failed_task_stops_the_run_keeps_what_finished_and_closes_the_executor(
    tmp_path: Path,
) -> None:
    folder = _folder(tmp_path)
    executor = ScriptedExecutor(capacity=1, fail="t2")
    jobs = [Job(_task(n), None, explore_only=False) for n in range(4)]
    with pytest.raises(RuntimeError, match="scripted failure"):
        asyncio.run(drive(executor, jobs, folder))
    assert sorted(folder.progress()) == ["t0", "t1"] and executor.closed


def test_the_run_folder_schema_is_printable_and_versioned() -> None:
    schema = run_folder_schema()
    assert schema["version"] == SCHEMA
    assert {"instance_id", "artifacts", "judged", "verdict_rows", "progress"} <= set(
        schema["task_record"]["properties"]
    )
    json.dumps(schema)


def test_the_schema_command_prints_the_run_folders_task_record() -> None:
    from typer.testing import CliRunner

    from agentic_rubrics.cli.app import app

    result = CliRunner().invoke(app, ["schema", "--run-folder"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["version"] == SCHEMA
