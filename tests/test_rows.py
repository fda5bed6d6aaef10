"""The run folder's rows are typed: written as they always were, read back validated once, and a hostile
or older row is refused naming its file, line and field (or the version expected)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.rubric.file import rubric_to_yaml
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.rows import ProgressRow, RubricStatus, Trajectory
from agentic_rubrics.types import SCHEMA

from .conftest import item, rubric

GOOD = "diff --git a/core.py b/core.py\n--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A finished run folder of two tasks (reused rubrics, the checks judge)."""
    root = tmp_path_factory.mktemp("rows")
    tasks = root / "tasks.jsonl"
    lines = []
    for n in range(2):
        iid = f"demo__task-{n}"
        path = root / "rubrics" / iid / "rubrics.yaml"
        path.parent.mkdir(parents=True)
        path.write_text(
            rubric_to_yaml(rubric(file_change=[item("FC1", 3, {"touches": "core.py"})]))
        )
        cands = [
            {"id": "c1", "patch": GOOD, "resolved": True},
            {"id": "c2", "patch": "", "resolved": False},
        ]
        lines.append(
            json.dumps({"instance_id": iid, "problem_statement": "x", "candidates": cands})
        )
    tasks.write_text("\n".join(lines) + "\n")
    config = load_config(
        None,
        {"rubrics_dir": str(root / "rubrics"), "bootstrap_resamples": 0, "selectors": ["rubric"]},
    )
    run(tasks, root / "out", config)
    return root / "out"


def _copy(made: Path, tmp_path: Path) -> Path:
    out = tmp_path / "out"
    out.mkdir()
    for path in made.rglob("*"):
        if path.is_file():
            target = out / path.relative_to(made)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(path.read_bytes())
    return out


def _rows(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in read_jsonl(path)]


def _write(path: Path, rows: list[dict[str, Any]]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_rows_are_written_in_the_shape_they_had_and_read_back_typed(made: Path) -> None:
    raw = _rows(made / "progress.jsonl")
    typed = RunFolder(made).progress()
    assert sorted(typed) == ["demo__task-0", "demo__task-1"]
    row = typed["demo__task-0"]
    assert isinstance(row, ProgressRow) and row.rubric.status == "ok" and row.judge == "checks"
    assert [c.id for c in row.candidates] == ["c1", "c2"] and row.candidate("c2").empty
    # the file holds exactly what the typed row writes back (no key added, none lost)
    assert [ProgressRow.model_validate(r).to_json() for r in raw] == raw
    assert raw[0]["schema"] == SCHEMA and set(raw[0]["rubric"]) >= {"status", "reason", "hash"}
    status_file = made / "rubrics" / "demo__task-0" / "status.json"
    status = json.loads(status_file.read_text())
    assert RubricStatus.model_validate(status).to_json() == status
    typed_status = RunFolder(made).rubric_status("demo__task-0")
    assert typed_status is not None and typed_status.source == "reused"


def test_a_progress_row_is_validated_once_until_the_file_changes(
    made: Path, tmp_path: Path
) -> None:
    out = _copy(made, tmp_path)
    folder = RunFolder(out)
    first = folder.progress()
    again = folder.progress()
    assert all(
        again[k] is first[k] for k in first
    )  # the same objects: not read and validated again
    # a row this folder appends is kept as it was given: neither it nor the others are read again
    added = first["demo__task-0"].model_copy(update={"instance_id": "demo__task-2"})
    folder.record_task([], added)
    appended = folder.progress()
    assert appended["demo__task-2"] is added and appended["demo__task-1"] is first["demo__task-1"]
    assert RunFolder(out).progress()["demo__task-2"] == added  # what another reader finds on disk
    rows = _rows(out / "progress.jsonl")
    again0 = next(
        r for r in rows if r["instance_id"] == "demo__task-0"
    )  # tasks finish in any order
    _write(out / "progress.jsonl", [*rows, {**again0, "seconds": 9.5}])  # written by someone else
    changed = folder.progress()
    assert (
        changed["demo__task-0"].seconds == 9.5
        and changed["demo__task-0"] is not first["demo__task-0"]
    )


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("repeats", "many", "repeats: Input should be a valid integer"),
        (
            "candidates",
            [{"id": "c1", "patch_hash": "h", "empty": "perhaps"}],
            "candidates[0].empty",
        ),
        ("rubric", {"status": "fine"}, "rubric.status: Input should be 'ok' or 'failed'"),
        ("surprise", 1, "surprise: Extra inputs are not permitted"),
    ],
)
def test_a_hostile_progress_row_names_file_line_and_field(
    made: Path, tmp_path: Path, field: str, value: Any, expected: str
) -> None:
    out = _copy(made, tmp_path)
    rows = _rows(out / "progress.jsonl")
    rows[1][field] = value
    _write(out / "progress.jsonl", rows)
    with pytest.raises(DataError) as caught:
        RunFolder(out).progress()
    assert f"{out / 'progress.jsonl'}:2: {expected}" in str(caught.value)
    result = CliRunner().invoke(app, ["report", "--out", str(out), "-q"])
    assert result.exit_code == 2 and f"progress.jsonl:2: {expected}" in result.output.replace(
        "\n", ""
    )


def test_a_folder_of_another_version_is_refused_naming_the_file_and_the_version(
    made: Path, tmp_path: Path
) -> None:
    out = _copy(made, tmp_path)
    rows = _rows(out / "progress.jsonl")
    _write(out / "progress.jsonl", [{**r, "schema": "agentic-rubrics/0"} for r in rows])
    result = CliRunner().invoke(app, ["report", "--out", str(out), "-q"])
    text = result.output.replace("\n", "")
    assert result.exit_code == 2
    assert f"{out / 'progress.jsonl'}:1: a run folder of version 'agentic-rubrics/0'" in text
    assert f"reads '{SCHEMA}'" in text
    schema = CliRunner().invoke(app, ["schema", "--run-folder"])
    assert json.loads(schema.output)["version"] == SCHEMA


def test_a_hostile_rubric_status_names_its_file_and_field(made: Path, tmp_path: Path) -> None:
    out = _copy(made, tmp_path)
    path = out / "rubrics" / "demo__task-1" / "status.json"
    status = json.loads(path.read_text())
    path.write_text(json.dumps({**status, "items": {"a": 1}}))
    with pytest.raises(DataError, match=rf"{path}: items: Input should be a valid integer"):
        RunFolder(out).rubric_status("demo__task-1")
    path.write_text("[1, 2]")
    with pytest.raises(DataError, match=rf"{path}: expected a JSON object"):
        RunFolder(out).rubric_status("demo__task-1")


def test_a_trajectory_keeps_only_the_keys_each_step_had() -> None:
    steps = [{"tool": "bash", "argument": "ls", "exit_code": 0, "output_chars": 3, "truncated": False},
             {"turn": 1, "tool": "write", "valid": True, "cost_usd": None}]  # fmt: skip
    record = {"schema": SCHEMA, "instance_id": "t", "explorer": "static", "model": None,
              "sandbox": None, "status": "ok", "reason": None, "turns": 2, "cost": {}, "steps": steps}  # fmt: skip
    assert Trajectory.model_validate(record).to_json() == record
    with pytest.raises(ValueError, match=r"steps\.0\.secret"):
        Trajectory.model_validate({**record, "steps": [{"tool": "x", "secret": "y"}]})


def test_a_task_record_with_typed_rows_travels_by_pickle(made: Path) -> None:
    """What the Ray executor does with a record: pickled in a worker, unpickled by the driver."""
    import pickle

    from agentic_rubrics.runfolder.records import ArtifactRecord, TaskRecord

    folder = RunFolder(made)
    status = folder.rubric_status("demo__task-0")
    assert status is not None
    rubric = ArtifactRecord(
        instance_id="demo__task-0", verifier="rubric", folder="rubrics", status=status
    )
    record = TaskRecord(
        instance_id="demo__task-0",
        artifacts=[rubric],
        judged=True,
        progress=folder.progress()["demo__task-0"],
    )
    back = pickle.loads(pickle.dumps(record))
    assert back == record and back.progress is not None and record.progress is not None
    assert back.progress.to_json() == record.progress.to_json()
    assert back.artifacts[0].status.to_json() == status.to_json()
