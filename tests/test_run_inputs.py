"""What is scored is what is selected: the run folder keeps the inputs it scored, refuses changed ones,
redoes them on request; labels are read at report time; unlabelled candidates do not drop their task."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.inputs import text_hash
from agentic_rubrics.exceptions import InputsChanged
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.rubric.file import rubric_to_yaml
from agentic_rubrics.runfolder.files import read_jsonl

from .conftest import item, rubric

RUBRIC = rubric(
    file_change=[item("FC1", 3, {"touches": "core.py"})],
    runtime=[item("RT1", 1, {"adds_no_match": r"print\("})],
)


def diff(path: str, new: str) -> str:
    return (
        f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-x = 1\n+{new}\n"
    )


GOOD = diff("core.py", "x = 2")
NOISY = diff("core.py", "print(x)")
OTHER = diff("util.py", "y = 3")


def write_tasks(path: Path, tasks: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(t) + "\n" for t in tasks))
    return path


def make_tasks(labels: dict[str, bool | None] | None = None) -> list[dict[str, Any]]:
    labels = labels or {}
    out = []
    for n in range(2):
        cands = [("c1", GOOD, True), ("c2", NOISY, False), ("c3", OTHER, False)]
        out.append(
            {
                "instance_id": f"demo__task-{n}",
                "problem_statement": f"Task {n}: x should be 2",
                "candidates": [
                    {"id": cid, "patch": p, "resolved": labels.get(f"{n}/{cid}", label)}
                    for cid, p, label in cands
                ],
            }
        )
    return out


@pytest.fixture
def setup(tmp_path: Path) -> tuple[Path, Any]:
    rubrics = tmp_path / "rubrics"
    for n in range(2):
        path = rubrics / f"demo__task-{n}" / "rubrics.yaml"
        path.parent.mkdir(parents=True)
        path.write_text(rubric_to_yaml(RUBRIC))
    config = load_config(
        None,
        {"rubrics_dir": str(rubrics), "bootstrap_resamples": 0, "selectors": ["rubric", "random"]},
    )
    return rubrics, config


def rows(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in read_jsonl(path)]


def test_changed_patches_are_named_and_refused_on_resume_and_report(
    tmp_path: Path, setup: tuple[Path, Any]
) -> None:
    _, config = setup
    tasks = write_tasks(tmp_path / "tasks.jsonl", make_tasks())
    out = tmp_path / "out"
    run(tasks, out, config)
    picked = {r["instance_id"]: r["model_patch"] for r in rows(out / "selections.jsonl")}
    assert picked["demo__task-0"] == GOOD
    selections = (out / "selections.jsonl").read_text()
    # the same predictions imported again in another order: the ids now name other patches
    again = make_tasks()
    first = again[0]["candidates"]
    first[0]["patch"], first[1]["patch"] = first[1]["patch"], first[0]["patch"]
    write_tasks(tasks, again)
    with pytest.raises(InputsChanged) as info:
        run(tasks, out, config)
    message = str(info.value)
    assert "demo__task-0: patches of c1, c2" in message and "--redo-changed" in message
    assert "demo__task-1" not in message
    result = CliRunner().invoke(app, ["report", "--out", str(out), "--tasks", str(tasks), "-q"])
    assert result.exit_code == 2 and "demo__task-0: patches of c1, c2" in result.output
    # nothing was rewritten from patches that were never scored
    assert (out / "selections.jsonl").read_text() == selections


def test_a_vanished_pick_is_named_not_a_key_error(tmp_path: Path, setup: tuple[Path, Any]) -> None:
    _, config = setup
    tasks = write_tasks(tmp_path / "tasks.jsonl", make_tasks())
    out = tmp_path / "out"
    run(tasks, out, config)
    fewer = make_tasks()
    fewer[0]["candidates"] = fewer[0]["candidates"][1:]  # the picked c1 is gone
    fewer[1]["problem_statement"] += " (edited)"
    write_tasks(tasks, fewer)
    result = CliRunner().invoke(app, ["report", "--out", str(out), "--tasks", str(tasks), "-q"])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert "demo__task-0: candidates removed: c1" in result.output
    assert "demo__task-1: issue text" in result.output


def test_redo_changed_redoes_that_task_only(tmp_path: Path, setup: tuple[Path, Any]) -> None:
    _, config = setup
    tasks = write_tasks(tmp_path / "tasks.jsonl", make_tasks())
    out = tmp_path / "out"
    run(tasks, out, config)
    before = {r["instance_id"]: r for r in rows(out / "progress.jsonl")}
    kept_verdicts = [r for r in rows(out / "verdicts.jsonl") if r["instance_id"] == "demo__task-1"]
    changed = make_tasks()
    changed[0]["candidates"][0]["patch"] = OTHER  # c1 of task 0 is now another patch
    changed[0]["candidates"].append({"id": "c4", "patch": GOOD, "resolved": True})
    write_tasks(tasks, changed)
    report = run(tasks, out, config, redo_changed=True)
    assert report is not None
    after = {r["instance_id"]: r for r in rows(out / "progress.jsonl")}
    assert len(rows(out / "progress.jsonl")) == 2
    assert after["demo__task-1"] == before["demo__task-1"]  # untouched
    assert [c["id"] for c in after["demo__task-0"]["candidates"]] == ["c1", "c2", "c3", "c4"]
    assert after["demo__task-0"]["candidates"][0]["sha256"] == text_hash(OTHER)
    assert [
        r for r in rows(out / "verdicts.jsonl") if r["instance_id"] == "demo__task-1"
    ] == kept_verdicts
    assert len([r for r in rows(out / "verdicts.jsonl") if r["instance_id"] == "demo__task-0"]) == 8
    # the selection is the patch that was scored: c4 (GOOD) now wins task 0
    picked = {r["instance_id"]: r["model_patch"] for r in rows(out / "selections.jsonl")}
    assert picked["demo__task-0"] == GOOD
    assert report["tasks"][0]["picks"]["rubric"]["candidate_id"] == "c4"


def test_selections_are_written_from_the_run_folder_alone(
    tmp_path: Path, setup: tuple[Path, Any]
) -> None:
    _, config = setup
    tasks = write_tasks(tmp_path / "tasks.jsonl", make_tasks())
    out = tmp_path / "out"
    run(tasks, out, config)
    selections = (out / "selections.jsonl").read_text()
    tasks.unlink()
    (out / "selections.jsonl").unlink()
    result = CliRunner().invoke(app, ["report", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    assert (out / "selections.jsonl").read_text() == selections
    md = (out / "report.md").read_text()
    assert "Labels: labels recorded in the run folder when each task was judged" in md


def test_a_corrected_label_takes_effect_in_report_without_a_rerun(
    tmp_path: Path, setup: tuple[Path, Any]
) -> None:
    _, config = setup
    wrong = make_tasks({"0/c1": False})  # a label the harness got wrong
    tasks = write_tasks(tmp_path / "tasks.jsonl", wrong)
    out = tmp_path / "out"
    first = run(tasks, out, config)
    assert first is not None and first["counts"]["resolved"] == 1
    verdicts = (out / "verdicts.jsonl").read_text()
    write_tasks(tasks, make_tasks())  # corrected in the tasks file
    runner = CliRunner()
    result = runner.invoke(app, ["report", "--out", str(out), "-q"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["counts"]["resolved"] == 2
    assert report["selectors"]["rubric"]["realised_best_at_1"] == 1.0
    md = (out / "report.md").read_text()
    assert f"Labels: tasks file {tasks.resolve()}; 6 of 6 candidates labelled." in md
    assert (out / "verdicts.jsonl").read_text() == verdicts  # nothing was rerun
    # or from a labels file
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        "".join(
            json.dumps({"instance_id": f"demo__task-{n}", "candidate_id": c, "resolved": c == "c2"})
            + "\n"
            for n in range(2)
            for c in ("c1", "c2", "c3")
        )
    )
    result = runner.invoke(app, ["report", "--out", str(out), "--labels", str(labels), "-q"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["labels"]["source"] == f"labels file {labels}"
    assert report["selectors"]["rubric"]["realised_best_at_1"] == 0.0


def test_one_unlabelled_candidate_does_not_drop_its_task(
    tmp_path: Path, setup: tuple[Path, Any]
) -> None:
    _, config = setup
    tasks = write_tasks(tmp_path / "tasks.jsonl", make_tasks({"0/c3": None}))
    report = run(tasks, tmp_path / "out", config)
    assert report is not None
    assert report["counts"]["tasks_labelled"] == 2 and report["counts"]["candidates_labelled"] == 5
    assert report["labels"]["left_out"] == {
        "tasks_without_a_labelled_candidate": 0,
        "unlabelled_candidates": 1,
    }
    rubric_metrics = report["selectors"]["rubric"]
    assert rubric_metrics["realised_best_at_1"] == 1.0 and rubric_metrics["unlabelled_picks"] == 0
    assert rubric_metrics["scored_candidates"]["of"] == 5
    assert report["oracle_pass_at_k"]["1"] == pytest.approx((1 / 2 + 1 / 3) / 2)
    md = (tmp_path / "out" / "report.md").read_text()
    assert "5 of 6 candidates labelled" in md
    assert "1 unlabelled candidates (their tasks count with their labelled candidates)" in md
