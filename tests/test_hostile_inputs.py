"""Hostile tasks: patches and issues that are not valid text, and instance ids that would share a folder
or lead outside ``--rubrics DIR``. Each run goes on; the bad part ends as a ``missing`` verdict with a
reason (or a located error), never a traceback."""

from __future__ import annotations

import gzip
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.datasets.swebench import load_report_labels, read_records
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import RunConfig, run
from agentic_rubrics.rubric.file import rubric_to_yaml
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.names import safe_name
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.testing import LoopbackServer, judge_answer

from .conftest import item, rubric

GOOD = "--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
LONE = "--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1\n+x = '\ud800'\n"  # a JSON \ud800
BYTES = b"--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1\n+x = '\xff\xfe'\n"  # not UTF-8
RUBRIC = rubric(
    file_change=[item("FC1", 3, {"touches": "core.py"})],
    spec_alignment=[item("SA1", 3)],
)
FAST = RunConfig(bootstrap_resamples=20)


def tasks_with_bad_text(tmp: Path) -> Path:
    """Three candidates: a good patch, one with a lone surrogate, one with bytes that are not UTF-8;
    and an issue with both."""
    row = {
        "instance_id": "acme__core-1",
        "problem_statement": "x should be 2 \ud800 @ISSUE@",
        "candidates": [
            {"id": "good", "patch": GOOD, "resolved": True},
            {"id": "lone", "patch": LONE, "resolved": False},
            {"id": "bytes", "patch": "@PATCH@", "resolved": False},
        ],
    }
    line = json.dumps(row).encode()
    line = line.replace(b"@PATCH@", json.dumps(BYTES.decode("latin-1"))[1:-1].encode())
    line = line.replace(b"@ISSUE@", b"\xc3\x28")  # an invalid two-byte sequence
    # the "bytes" patch: latin-1 escapes in JSON are valid text; make its two bytes raw instead
    line = line.replace(b"\\u00ff\\u00fe", b"\xff\xfe")
    path = tmp / "tasks.jsonl"
    path.write_bytes(line + b"\n")
    rubrics = tmp / "rubrics" / "acme__core-1" / "rubrics.yaml"
    rubrics.parent.mkdir(parents=True)
    rubrics.write_text(rubric_to_yaml(RUBRIC))
    return path


def verdicts(out: Path) -> dict[str, dict[str, tuple[Any, ...]]]:
    got: dict[str, dict[str, tuple[Any, ...]]] = {}
    for _, v in read_jsonl(out / "verdicts.jsonl"):
        got.setdefault(v["candidate_id"], {})[v["item_id"]] = (
            v["origin"], v["value"], v["reason"], v.get("detail"),
        )  # fmt: skip
    return got


NOT_TEXT = ("missing", None, "check_error", "invalid_text")


def test_patches_that_are_not_text_are_check_errors_offline(tmp_path: Path) -> None:
    tasks = tasks_with_bad_text(tmp_path)
    assert b"\xff\xfe" in tasks.read_bytes()  # really not UTF-8
    config = RunConfig(bootstrap_resamples=20, rubrics_dir=str(tmp_path / "rubrics"))
    report = run(tasks, tmp_path / "out", config)
    assert report is not None
    got = verdicts(tmp_path / "out")
    assert got["good"] == {
        "FC1": ("checked", 1, "touches", None),
        "SA1": ("missing", None, "not_configured", None),
    }
    assert got["lone"] == {"FC1": NOT_TEXT, "SA1": NOT_TEXT}
    assert got["bytes"] == {"FC1": NOT_TEXT, "SA1": NOT_TEXT}
    assert report["verdicts"]["missing_by_reason"]["check_error"] == 4
    picks = [r for _, r in read_jsonl(tmp_path / "out" / "selections.jsonl")]
    assert picks and all(isinstance(p["model_patch"], str) for p in picks)


def test_patches_that_are_not_text_are_never_sent_to_a_model(tmp_path: Path) -> None:
    tasks = tasks_with_bad_text(tmp_path)
    with LoopbackServer(judge_answer(1)) as srv:
        model = {"model": "openai/judge", "api_base": srv.url, "timeout": 30.0, "max_retries": 0}
        config = load_config(
            None,
            {
                "judge": {"kind": "llm", "model": model},
                "rubrics_dir": str(tmp_path / "rubrics"),
                "selectors": ["rubric", "patch_classifier", "random"],
                "bootstrap_resamples": 20,
            },
        )
        report = run(tasks, tmp_path / "out", config)
        bodies = [json.dumps(r) for r in srv.requests]
    assert report is not None
    got = verdicts(tmp_path / "out")
    assert got["good"]["SA1"] == ("judged", 1, None, None)
    assert got["lone"] == {"FC1": NOT_TEXT, "SA1": NOT_TEXT}
    assert got["bytes"] == {"FC1": NOT_TEXT, "SA1": NOT_TEXT}
    # one judge call and one classifier call, both for the good patch; the issue arrives as text
    assert len(bodies) == 2 and all("x = 2" in b for b in bodies)
    assert all("\\ufffd" in b and "\\ud800" not in b for b in bodies)
    progress = next(r for _, r in read_jsonl(tmp_path / "out" / "progress.jsonl"))
    assert progress["baselines"]["patch_classifier"]["lone"] is None


# --------------------------------------------------------------------------- instance ids


def test_an_id_with_a_slash_and_its_literal_safe_form_never_share_a_folder(tmp_path: Path) -> None:
    folder = RunFolder(tmp_path)
    slashed = "acme/core-1"
    literal = safe_name(slashed)  # "acme_core-1-<8 hex>": itself a valid id
    assert literal != slashed and safe_name(literal) != literal
    assert folder.rubric_path(slashed) != folder.rubric_path(literal)
    assert folder.trajectory_path(slashed) != folder.trajectory_path(literal)
    for plain in ("django__django-11099", "sympy__sympy-12345", "a.b_c-1"):
        assert safe_name(plain) == plain  # ordinary ids keep their folder names


def test_both_ids_keep_their_own_rubric_in_one_run(tmp_path: Path) -> None:
    ids = ["acme/core-1", safe_name("acme/core-1")]
    rows = [
        {"instance_id": i, "problem_statement": f"issue {n}: `core.py` should set x to 2",
         "candidates": [{"id": "c1", "patch": GOOD}]}
        for n, i in enumerate(ids)
    ]  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run(tasks, tmp_path / "out", FAST)
    folder = RunFolder(tmp_path / "out")
    statuses = [json.loads(folder.rubric_status_path(i).read_text()) for i in ids]
    assert [s["instance_id"] for s in statuses] == ids  # neither overwrote the other
    assert len(list((tmp_path / "out" / "rubrics").iterdir())) == 2


def test_a_300_character_id_gets_a_short_safe_folder_name(tmp_path: Path) -> None:
    long_a, long_b = "x" * 299 + "a", "x" * 299 + "b"
    names = {safe_name(long_a), safe_name(long_b)}
    assert len(names) == 2 and all(len(n) <= 130 for n in names)
    rows = [{"instance_id": i, "problem_statement": "`core.py` x", "candidates": [
        {"id": "c1", "patch": GOOD}]} for i in (long_a, long_b)]  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    report = run(tasks, tmp_path / "out", FAST)
    assert report is not None and report["rubrics"]["ok"] == 2


def test_rubrics_dir_is_never_left_whatever_the_id(tmp_path: Path) -> None:
    inside = tmp_path / "rubrics"
    inside.mkdir()
    outside = tmp_path / "elsewhere"
    for target in (outside / "rubrics.yaml", tmp_path / "rubrics.yaml"):
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(rubric_to_yaml(RUBRIC))  # valid rubrics that must not be read
    ids = ["../elsewhere", "..", str(outside), "sub/../../elsewhere"]
    rows = [{"instance_id": i, "problem_statement": "x", "candidates": [
        {"id": "c1", "patch": GOOD}]} for i in ids]  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in rows))
    run(tasks, tmp_path / "out", RunConfig(bootstrap_resamples=20, rubrics_dir=str(inside)))
    progress = {r["instance_id"]: r for _, r in read_jsonl(tmp_path / "out" / "progress.jsonl")}
    assert {i: progress[i]["rubric"]["reason"] for i in ids} == dict.fromkeys(
        ids, "rubric_not_found"
    )
    # a plain relative id still finds DIR/<id>/rubrics.yaml, as documented
    nested = inside / "acme" / "core-1" / "rubrics.yaml"
    nested.parent.mkdir(parents=True)
    nested.write_text(rubric_to_yaml(RUBRIC))
    tasks.write_text(json.dumps({**rows[0], "instance_id": "acme/core-1"}) + "\n")
    run(tasks, tmp_path / "out2", RunConfig(bootstrap_resamples=20, rubrics_dir=str(inside)))
    (row,) = [r for _, r in read_jsonl(tmp_path / "out2" / "progress.jsonl")]
    assert row["rubric"]["status"] == "ok"


def test_input_files_nested_too_deeply_are_located_errors(tmp_path: Path) -> None:

    good = json.dumps({"instance_id": "t1", "problem_statement": "x", "candidates": []})
    deep = '{"instance_id": ' + "[" * 100_000 + "]" * 100_000 + "}"
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(good + "\n" + deep + "\n")
    with pytest.raises(DataError, match=r"tasks\.jsonl:2: JSON nested too deeply"):
        load_tasks(tasks)
    with pytest.raises(DataError, match=r"tasks\.jsonl:2: JSON nested too deeply"):
        list(read_records(tasks))
    report = tmp_path / "report.json"
    report.write_text('{"resolved_ids": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(DataError, match="nested too deeply"):
        load_report_labels(report)


def test_swebench_files_with_bytes_that_are_not_utf8_are_read(tmp_path: Path) -> None:
    path = tmp_path / "preds.jsonl"
    path.write_bytes(b'{"instance_id": "t1", "model_patch": "+x = \'\xff\'\\n"}\n')
    ((line, record),) = list(read_records(path))
    assert line == 1 and record["model_patch"] == "+x = '\udcff'\n"  # a lone surrogate: not text


DEEP = "[" * 100_000 + "]" * 100_000


def test_json_files_the_user_hands_in_nested_too_deeply_are_errors_naming_them(
    tmp_path: Path,
) -> None:
    """100,000 nested lists in every JSON (and YAML) file a user hands in: a located error naming the
    file, never a RecursionError."""
    from agentic_rubrics.cli.envcheck import _swerex
    from agentic_rubrics.exceptions import ConfigError
    from agentic_rubrics.rank.content import read_weights
    from agentic_rubrics.rank.fusion import read_fusion_file
    from agentic_rubrics.rank.selectors import get_selector
    from agentic_rubrics.rank.selectors.offline_content import OfflineContentSelector
    from agentic_rubrics.report.calibration import load_calibration
    from agentic_rubrics.sandbox.testenv import load_specs

    def deep(name: str, text: str = DEEP) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    weights = deep("weights.json")
    with pytest.raises(DataError, match=rf"{weights}: not a fusion weights file: JSON nested too"):
        read_fusion_file(weights)
    with pytest.raises(DataError, match=rf"{weights}: not a fusion weights file: JSON nested too"):
        get_selector(f"fitted:{weights}")
    content = deep("content.json", '{"weights": ' + DEEP + "}")
    with pytest.raises(DataError, match=rf"{content}: not a content weights file: JSON nested"):
        read_weights(content)
    with pytest.raises(DataError, match=rf"{content}: not a content weights file: JSON nested"):
        _ = OfflineContentSelector(content).weights
    specs = deep("specs.json", '{"psf/requests": {"requirements": ' + DEEP + "}}")
    with pytest.raises(ConfigError, match=rf"{specs}: JSON nested too deeply"):
        load_specs(specs)
    swerex = deep("swerex.json")
    with pytest.raises(ConfigError, match=rf"{swerex}: JSON nested too deeply"):
        _swerex(str(swerex))
    for name in ("config.yaml", "config.json"):
        config = deep(
            name, "judge: " + DEEP if name.endswith("yaml") else '{"judge": ' + DEEP + "}"
        )
        with pytest.raises(ConfigError, match=rf"{config}: nested too deeply"):
            load_config(config)
    calibration = deep("calibration.json")
    with pytest.raises(DataError, match=rf"{calibration}: JSON nested too deeply"):
        load_calibration(calibration)
    folder = RunFolder(tmp_path / "run")
    folder.root.mkdir()
    folder.config_path.write_text('{"config_hash": ' + DEEP + "}")
    with pytest.raises(DataError, match=rf"{folder.config_path}: JSON nested too deeply"):
        folder.open({}, "abc")
    status = folder.artifact_status_path("tests", "t1")
    status.parent.mkdir(parents=True)
    status.write_text(DEEP)
    with pytest.raises(DataError, match=rf"{status}: JSON nested too deeply"):
        folder.artifact_status("tests", "t1")


def test_paths_and_empty_inputs_end_with_an_error_line_never_a_traceback(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder given for a file, a file given for a folder, an empty tasks file, an import that
    yields no task: ``error:`` naming the path, exit 2, nothing written (they gave tracebacks, or
    exit 0 with a report of nothing). The console script's own entry point, in this process."""
    from agentic_rubrics.cli.app import main

    monkeypatch.chdir(tmp_path)
    (tmp_path / "adir").mkdir()
    (tmp_path / "afile").write_text("")
    (tmp_path / "empty.jsonl").write_text("\n\n")
    write_tasks_jsonl(tmp_path / "tasks.jsonl")
    first = json.loads((tmp_path / "tasks.jsonl").read_text().splitlines()[0])
    first["patches"] = first.pop("candidates")  # a misspelt key: a task with nothing to judge
    (tmp_path / "typo.jsonl").write_text(json.dumps(first) + "\n")
    (tmp_path / "tasks.jsonl.gz").write_bytes(
        gzip.compress((tmp_path / "tasks.jsonl").read_bytes())
    )
    cases = [
        (["run", "--tasks", "tasks.jsonl", "--out", "afile"], "afile"),
        (["run", "--tasks", "typo.jsonl", "--out", "o3"], "no task has a candidate to judge"),
        (["run", "--tasks", "tasks.jsonl.gz", "--out", "o4"], "gzip-compressed"),
        (["run", "--tasks", "adir", "--out", "o1"], "adir"),
        (["import-swebench", "--candidates", "adir", "--out", "t.jsonl"], "adir"),
        (["run", "--tasks", "empty.jsonl", "--out", "afile"], "empty.jsonl: no tasks"),
        (["run", "--tasks", "empty.jsonl", "--out", "o2"], "empty.jsonl: no tasks"),
        (
            ["import-swebench", "--candidates", "empty.jsonl", "--out", "t.jsonl"],
            "no task to write",
        ),
    ]
    for args, named in cases:
        monkeypatch.setattr(sys, "argv", ["agentic-rubrics", *args])
        with pytest.raises(SystemExit) as ended:
            main()
        err = capsys.readouterr().err
        assert ended.value.code == 2, (args, err)
        assert "Traceback" not in err and named in err, (args, err)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "adir",
        "afile",
        "empty.jsonl",
        "tasks.jsonl",
        "tasks.jsonl.gz",
        "typo.jsonl",
    ]


def test_a_folder_that_is_not_a_run_is_never_written_over(tmp_path: Path) -> None:
    """--out naming a folder of the user's own that holds names a run writes or removes
    (report.json, selections/): refused, with or without --restart, every file kept (they were
    overwritten, and selections/ emptied); a folder of other files, or holding only the tasks file,
    is used."""
    every = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines(keepends=True)
    (tmp_path / "tasks.jsonl").write_text(every[0])  # one task: the folders matter, not the pool
    mine = tmp_path / "mine"
    (mine / "selections").mkdir(parents=True)
    (mine / "selections" / "my_preds.jsonl").write_text('{"instance_id": "q"}\n')
    (mine / "report.json").write_text('{"mine": 1}\n')
    before = {p: p.read_bytes() for p in mine.rglob("*") if p.is_file()}
    for restart in ([], ["--restart"]):
        args = ["run", "-q", "--tasks", str(tmp_path / "tasks.jsonl"), "--out", str(mine), *restart]
        done = CliRunner().invoke(app, args)
        assert done.exit_code == 2, done.output
        assert "not a run folder" in done.output and "report.json" in done.output
        kept = {p: p.read_bytes() for p in mine.rglob("*") if p.is_file() and p.name != ".lock"}
        assert kept == before  # (the lock file every run takes is the one addition)
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine\n")
    (other / "tasks.jsonl").write_bytes((tmp_path / "tasks.jsonl").read_bytes())
    args = ["run", "-q", "--tasks", str(other / "tasks.jsonl"), "--out", str(other)]
    done = CliRunner().invoke(app, args)
    assert done.exit_code == 0, done.output
    assert (other / "notes.txt").read_text() == "mine\n" and (other / "report.json").exists()
    # a folder holding the rubrics it reuses (--rubrics DIR/rubrics --out DIR): used, rubrics kept;
    # with --restart (which would remove them) refused
    for restart, code in (([], 0), (["--restart"], 2)):
        reuse = tmp_path / f"reuse{len(restart)}"
        shutil.copytree(other / "rubrics", reuse / "rubrics")
        shutil.copy(other / "tasks.jsonl", reuse / "tasks.jsonl")
        before = {p: p.read_bytes() for p in (reuse / "rubrics").rglob("*") if p.is_file()}
        args = ["run", "-q", "--tasks", str(reuse / "tasks.jsonl"), "--out", str(reuse)]
        done = CliRunner().invoke(app, [*args, "--rubrics", str(reuse / "rubrics"), *restart])
        assert done.exit_code == code, done.output
        assert {p: p.read_bytes() for p in (reuse / "rubrics").rglob("*") if p.is_file()} == before
