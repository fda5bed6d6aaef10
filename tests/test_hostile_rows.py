"""Hand-edited run-folder rows: a row naming its task by something that is not a string, a patch row of
the wrong shape or with edited text, and verdict rows edited before a resume retried their task. Every
hostile edit is made here, on a folder the test's own run wrote."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.testing import LoopbackServer, Reply, judge_answer, requested_ids

from .test_hostile_bounds import _finished_run
from .test_llm_pipeline import cfg, make_inputs


def _edit(path: Path, number: int, edit: dict[str, Any], drop: str | None = None) -> None:
    """Change one row (1-based line ``number``) of a JSONL file: set the keys of ``edit``, drop ``drop``."""
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows[number - 1].update(edit)
    if drop is not None:
        del rows[number - 1][drop]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def _invoke(tmp_path: Path, tasks: Path, out: Path, command: str) -> Any:
    args = ["report", "--out", str(out)]
    if command == "resume":
        args = ["run", "--tasks", str(tasks), "--out", str(out)]
        args += ["--config", str(tmp_path / "c.yaml")]
    return CliRunner().invoke(app, [*args, "-q"])


@pytest.mark.parametrize("command", ["report", "resume"])
@pytest.mark.parametrize("name", ["verdicts.jsonl", "patches.jsonl"])
def test_a_row_naming_its_task_by_a_list_is_a_located_error(
    tmp_path: Path, name: str, command: str
) -> None:
    """``instance_id: ["t1"]`` cannot even be looked up among the finished tasks: it raised
    ``TypeError: unhashable type: 'list'`` (exit 1, a traceback) in report and on resume."""
    tasks, out = _finished_run(tmp_path)
    _edit(out / name, 2, {"instance_id": ["t1"]})
    result = _invoke(tmp_path, tasks, out, command)
    assert result.exit_code == 2, result.output
    assert f"{out / name}:2: instance_id: Input should be a valid string" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)


@pytest.mark.parametrize("command", ["report", "resume"])
def test_a_patch_row_of_the_wrong_shape_or_with_edited_text_is_refused(
    tmp_path: Path, command: str
) -> None:
    """patches.jsonl is what selections are written from: a row without its patch raised KeyError,
    and an edited patch text was submitted as the one that was scored."""
    tasks, out = _finished_run(tmp_path)
    path = out / "patches.jsonl"
    original = path.read_text()
    _edit(path, 3, {}, drop="patch")
    result = _invoke(tmp_path, tasks, out, command)
    assert result.exit_code == 2, result.output
    assert f"{path}:3: patch: Field required" in result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)

    path.write_text(original)
    scored = json.loads(original.splitlines()[0])
    _edit(path, 1, {"patch": scored["patch"].replace("+c", "+import os")})
    result = _invoke(tmp_path, tasks, out, command)
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    assert f"{path}:1: patch: its text no longer has the sha256 it was scored with" in said
    selected = (out / "selections.jsonl").read_text()
    assert "import os" not in selected  # the edited text is never submitted


def test_a_retry_keeps_saying_which_tasks_had_rows_edited(tmp_path: Path) -> None:
    """A resume that retries a task's transient gaps keeps its other rows and records the task again:
    its new digest covered a hand-edited row, and the report stopped naming the task."""
    tasks, rubrics = make_inputs(tmp_path)

    def flaky(body: dict[str, Any], n: int) -> Reply:  # the server fails on c3's patch only
        if "y = 3" in json.dumps(body["messages"]):
            return Reply(status=503)
        return Reply(content=json.dumps(dict.fromkeys(requested_ids(body), 1)))

    out = tmp_path / "out"
    with LoopbackServer(flaky) as srv:
        config = cfg(srv, rubrics, bootstrap_resamples=0, model={"timeout": 60.0})
        run(tasks, out, config)
        rows = [r for _, r in read_jsonl(out / "verdicts.jsonl")]
        edited = next(
            n
            for n, r in enumerate(rows, start=1)
            if r["instance_id"] == "demo__task-0" and r["candidate_id"] == "c1"
        )
        assert rows[edited - 1]["value"] == 1
        _edit(out / "verdicts.jsonl", edited, {"value": 0})
        srv.script = judge_answer(0)
        report = run(tasks, out, config)  # retries c3 of both tasks, keeps every other row
    assert report is not None
    assert "provider_error" not in report["verdicts"]["missing_by_reason"]
    after = [r for _, r in read_jsonl(out / "verdicts.jsonl")]
    kept = [r for r in after if r["instance_id"] == "demo__task-0" and r["candidate_id"] == "c1"]
    assert 0 in [r["value"] for r in kept]  # the edited row was kept, as every judged row is
    assert report["verdicts_changed"] == ["demo__task-0"]
    # and on every later report, though the digest recorded by the retry matches the rows
    result = CliRunner().invoke(app, ["report", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert json.loads((out / "report.json").read_text())["verdicts_changed"] == ["demo__task-0"]
    assert "no longer holds the rows 1 task(s) wrote" in " ".join(result.output.split())
