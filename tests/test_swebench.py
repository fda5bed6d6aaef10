"""SWE-bench files into tasks: dataset rows, predictions, harness reports, the combined format."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.swebench import (
    PoolOptions,
    load_candidates_file,
    load_instances,
    load_predictions,
    load_report,
    load_report_labels,
    pool_from_runs,
    read_records,
)
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.runfolder.tasks import load_tasks

P1 = "diff --git a/pkg/core.py b/pkg/core.py\n--- a/pkg/core.py\n+++ b/pkg/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
P1_TWIN = P1.replace("--- a/pkg", "index 1111111..2222222 100644\n--- a/pkg")
P2 = "diff --git a/pkg/util.py b/pkg/util.py\n--- a/pkg/util.py\n+++ b/pkg/util.py\n@@ -1 +1 @@\n-y = 1\n+y = 3\n"

ROWS = [
    {"instance_id": "acme__pkg-1", "repo": "acme/pkg", "base_commit": "abc", "problem_statement": "x must be 2",
     "patch": P1, "test_patch": "+assert x == 2", "FAIL_TO_PASS": '["t1"]', "PASS_TO_PASS": "[]", "hints_text": "core.py"},
    {"instance_id": "acme__pkg-2", "repo": "acme/pkg", "base_commit": "def", "problem_statement": "y must be 3",
     "patch": P2, "test_patch": "", "FAIL_TO_PASS": "[]", "PASS_TO_PASS": "[]", "hints_text": ""},
]  # fmt: skip


def write(path: Path, records: list[dict[str, Any]], *, jsonl: bool = True) -> Path:
    path.write_text(
        "".join(json.dumps(r) + "\n" for r in records) if jsonl else json.dumps(records)
    )
    return path


def test_dataset_rows_as_jsonl_json_list_and_gzip(tmp_path: Path) -> None:
    a = load_instances(write(tmp_path / "rows.jsonl", ROWS))
    b = load_instances(write(tmp_path / "rows.json", ROWS, jsonl=False))
    gz = tmp_path / "rows.jsonl.gz"
    with gzip.open(gz, "wt") as fh:
        fh.write("".join(json.dumps(r) + "\n" for r in ROWS))
    c = load_instances(gz)
    assert a.keys() == b.keys() == c.keys() == {"acme__pkg-1", "acme__pkg-2"}
    assert a["acme__pkg-1"].gold_patch == P1 and a["acme__pkg-1"].problem_statement == "x must be 2"


def test_one_record_jsonl_and_dict_of_records(tmp_path: Path) -> None:
    single = write(tmp_path / "one.jsonl", ROWS[:1])
    assert [r["instance_id"] for _, r in read_records(single)] == ["acme__pkg-1"]
    keyed = tmp_path / "preds.json"
    keyed.write_text(
        json.dumps({"acme__pkg-1": {"model_name_or_path": "run-a", "model_patch": P1}})
    )
    (p,) = load_predictions(keyed)
    assert (p.instance_id, p.source, p.patch) == ("acme__pkg-1", "run-a", P1)


def test_predictions_from_many_runs_with_both_report_formats(tmp_path: Path) -> None:
    dataset = write(tmp_path / "rows.jsonl", ROWS)
    run_a = write(tmp_path / "a.jsonl", [
        {"instance_id": "acme__pkg-1", "model_name_or_path": "run-a", "model_patch": P1},
        {"instance_id": "acme__pkg-2", "model_name_or_path": "run-a", "model_patch": P1},
    ])  # fmt: skip
    run_b = write(tmp_path / "b.jsonl", [
        {"instance_id": "acme__pkg-1", "model_name_or_path": "run-b", "model_patch": P1_TWIN},
        {"instance_id": "acme__pkg-2", "model_name_or_path": "run-b", "model_patch": P2},
    ])  # fmt: skip
    run_c = write(tmp_path / "c.jsonl", [
        {"instance_id": "acme__pkg-1", "model_name_or_path": "run-c", "model_patch": None},
    ])  # fmt: skip
    # run-level report (the harness's <model>.<run_id>.json)
    report_a = tmp_path / "a.report.json"
    report_a.write_text(
        json.dumps({"resolved_ids": ["acme__pkg-1"], "unresolved_ids": ["acme__pkg-2"]})
    )
    # per-instance reports in the harness's log layout
    logs = tmp_path / "logs" / "run-b"
    for iid, ok in (("acme__pkg-1", True), ("acme__pkg-2", True)):
        (logs / iid).mkdir(parents=True)
        (logs / iid / "report.json").write_text(
            json.dumps({iid: {"resolved": ok, "tests_status": {}}})
        )
    assert load_report_labels(logs) == {"acme__pkg-1": True, "acme__pkg-2": True}
    pool = pool_from_runs(dataset, [(run_a, report_a), (run_b, logs), (run_c, None)])
    t1, t2 = pool.tasks
    assert [(c.id, c.source, c.resolved) for c in t1.candidates] == [
        ("c01", "run-a", True), ("c02", "run-b", True), ("c03", "run-c", None),
    ]  # fmt: skip
    assert t1.candidates[2].patch == ""  # a run that produced nothing: the empty patch
    assert [(c.source, c.resolved) for c in t2.candidates] == [("run-a", False), ("run-b", True)]
    assert pool.gold == {"acme__pkg-1": P1, "acme__pkg-2": P2}
    # evaluation fields never reach a task
    assert not {"gold_patch", "test_patch", "hints_text"} & set(t1.model_dump())
    dedup = pool_from_runs(
        dataset, [(run_a, report_a), (run_b, logs)], PoolOptions(dedup=True, min_candidates=1)
    )
    assert len(dedup.tasks[0].candidates) == 1  # P1 and its twin are one change


def combined(tmp_path: Path) -> Path:
    cands = [
        {"source": "run-a", "patch": P1, "resolved": True, "source_kind": "full_run"},
        {"source": "run-a", "patch": P2, "resolved": False, "source_kind": "full_run"},
        {"source": "run-b", "patch": P1_TWIN, "resolved": False, "source_kind": "full_run"},
        {
            "source": "leaderboard@lite",
            "patch": P2,
            "resolved": True,
            "source_kind": "resolved_only",
        },
    ]
    rows = [{**ROWS[0], "gold_patch": P1, "candidates": cands},
            {**ROWS[1], "gold_patch": P2, "candidates": cands[:1]}]  # fmt: skip
    return write(tmp_path / "combined.jsonl", rows)


def test_combined_format_filters_caps_and_conflicts(tmp_path: Path) -> None:
    path = combined(tmp_path)
    pool = load_candidates_file(path)
    assert [t.instance_id for t in pool.tasks] == ["acme__pkg-1"]  # the other has one candidate
    assert pool.dropped == {"too_few_candidates": 1}
    assert [c.source for c in pool.tasks[0].candidates] == [
        "run-a",
        "run-a",
        "run-b",
    ]  # full runs only
    everything = load_candidates_file(path, PoolOptions(full_run_only=False, min_candidates=1))
    assert len(everything.tasks[0].candidates) == 4 and len(everything.tasks) == 2
    capped = load_candidates_file(path, PoolOptions(cap_per_source=1))
    assert [c.source for c in capped.tasks[0].candidates] == ["run-a", "run-b"]
    dedup = load_candidates_file(path, PoolOptions(dedup=True))
    assert len(dedup.tasks[0].candidates) == 2 and dedup.label_conflicts == 1


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (
            '{"instance_id": "a", "problem_statement": "x", "candidates": [{"patch": 3}]}\n',
            ":1: candidates[0].patch: missing or not a string",
        ),
        (
            '{"instance_id": "a", "problem_statement": "x", "candidates": [{"patch": "", "resolved": "yes"}]}\n',
            ":1: candidates[0].resolved: expected true, false or null",
        ),
        (
            '{"instance_id": "a", "problem_statement": "x", "candidates": []}\n{"instance_id": "b"}\n',
            ":2: problem_statement: missing required field",
        ),
        (
            '{"instance_id": "a", "problem_statement": "x", "candidates": "none"}\n',
            ":1: candidates: expected list",
        ),
        ('{"instance_id": "a"\n', ":1: invalid JSON"),
        ("[1, 2]", ":1: expected a JSON object, got int"),
    ],
)
def test_malformed_rows_name_file_line_and_field(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(DataError) as info:
        load_candidates_file(path)
    assert str(info.value).startswith(str(path)) and message in str(info.value)


def test_bad_predictions_and_reports(tmp_path: Path) -> None:
    preds = write(tmp_path / "p.jsonl", [{"instance_id": "a", "model_patch": "x"}])
    with pytest.raises(DataError, match=r"p.jsonl:1: model_name_or_path: missing"):
        load_predictions(preds)
    assert load_predictions(preds, source="named")[0].source == "named"
    bad = tmp_path / "r.json"
    bad.write_text(json.dumps({"a": {"status": "ok"}}))
    with pytest.raises(DataError, match="expected an object with a 'resolved' field"):
        load_report_labels(bad)
    # the datasets package is in the dev extra (export-sft's tests): a missing or broken export is
    # named, never a traceback of the datasets library
    with pytest.raises(DataError, match=r"export.parquet: file not found"):
        list(read_records(tmp_path / "export.parquet"))
    (tmp_path / "export.parquet").write_text("not parquet")
    with pytest.raises(DataError, match=r"export.parquet: not a Hugging Face datasets export"):
        list(read_records(tmp_path / "export.parquet"))


def test_import_command_writes_tasks(tmp_path: Path) -> None:
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(
        app, ["import-swebench", "--candidates", str(combined(tmp_path)), "--out", str(out)]
    )
    assert result.exit_code == 0, result.output
    assert "1 tasks, 3 candidates (3 labelled)" in result.output
    (task,) = load_tasks(out)
    assert task.problem_statement == "x must be 2" and task.repo_path is None


# --------------------------------------------------------------------------- harness output shapes

INSTANCE_LOG_APPLY_FAILED = """\
2024-08-20 11:02:13,201 - INFO - Container for acme__pkg-2 created: 6c1e0b2
2024-08-20 11:02:14,012 - INFO - Container for acme__pkg-2 started: 6c1e0b2
2024-08-20 11:02:14,013 - INFO - Intermediate patch for acme__pkg-2 written to logs/run_evaluation/r1/run-b/acme__pkg-2/patch.diff, now applying to container...
2024-08-20 11:02:14,240 - INFO - Failed to apply patch to container, trying again...
2024-08-20 11:02:14,377 - INFO - >>>>> Patch Apply Failed:
patching file pkg/util.py
Hunk #1 FAILED at 1.
1 out of 1 hunk FAILED -- saving rejects to file pkg/util.py.rej

Traceback (most recent call last):
  File "/opt/swebench/harness/run_evaluation.py", line 150, in run_instance
    raise EvaluationError(
swebench.harness.run_evaluation.EvaluationError: Evaluation error for acme__pkg-2: >>>>> Patch Apply Failed:
"""
INSTANCE_LOG_BUILD_ERROR = """\
2024-08-20 11:03:01,100 - INFO - Error building image acme__pkg-3: 500 Server Error
"""


def harness_report(iid: str, resolved: bool) -> dict[str, Any]:
    """A per-instance report.json as the harness writes it."""
    return {
        iid: {
            "patch_is_None": False,
            "patch_exists": True,
            "patch_successfully_applied": True,
            "resolved": resolved,
            "tests_status": {
                "FAIL_TO_PASS": {
                    "success": ["t1"] if resolved else [],
                    "failure": [] if resolved else ["t1"],
                },
                "PASS_TO_PASS": {"success": ["t0"], "failure": []},
                "FAIL_TO_FAIL": {"success": [], "failure": []},
                "PASS_TO_FAIL": {"success": [], "failure": []},
            },
        }
    }


def test_older_results_json_labels_every_listed_prediction(tmp_path: Path) -> None:
    # get_model_report's lists: a generated prediction that is not resolved is unresolved
    results = tmp_path / "results.json"
    results.write_text(json.dumps({
        "no_generation": ["acme__pkg-4"],
        "generated": ["acme__pkg-1", "acme__pkg-2", "acme__pkg-3", "acme__pkg-5"],
        "with_logs": ["acme__pkg-1", "acme__pkg-2", "acme__pkg-3"],
        "install_fail": [], "reset_failed": [],
        "no_apply": ["acme__pkg-3"],
        "applied": ["acme__pkg-1", "acme__pkg-2"],
        "test_errored": [], "test_timeout": [],
        "resolved": ["acme__pkg-1"],
    }))  # fmt: skip
    got = load_report(results)
    assert got.labels == {
        "acme__pkg-1": True, "acme__pkg-2": False, "acme__pkg-3": False, "acme__pkg-4": False,
        "acme__pkg-5": False,
    }  # fmt: skip
    assert got.counts() == {
        "empty_patch": 1, "not_evaluated": 1, "patch_apply_failed": 1, "tests_failed": 1,
    }  # fmt: skip


def test_instance_log_folders_without_a_report_are_unresolved_with_the_reason(
    tmp_path: Path,
) -> None:
    logs = tmp_path / "logs" / "run_evaluation" / "r1" / "run-b"
    for iid in ("acme__pkg-1", "acme__pkg-2", "acme__pkg-3"):
        (logs / iid).mkdir(parents=True)
        (logs / iid / "patch.diff").write_text(P1)
        (logs / iid / "eval.sh").write_text("#!/bin/bash\npytest tests\n")
    (logs / "acme__pkg-1" / "run_instance.log").write_text(
        "2024-08-20 - INFO - >>>>> Applied Patch:\n"
    )
    (logs / "acme__pkg-1" / "report.json").write_text(
        json.dumps(harness_report("acme__pkg-1", True))
    )
    (logs / "acme__pkg-2" / "run_instance.log").write_text(INSTANCE_LOG_APPLY_FAILED)
    (logs / "acme__pkg-3" / "run_instance.log").write_text(INSTANCE_LOG_BUILD_ERROR)
    got = load_report(tmp_path / "logs")
    assert got.labels == {"acme__pkg-1": True, "acme__pkg-2": False, "acme__pkg-3": False}
    assert got.counts() == {"no_report": 1, "patch_apply_failed": 1}
    # through the import command: the reasons are counted in what it prints
    dataset = write(tmp_path / "rows.jsonl", ROWS)
    preds = write(tmp_path / "b.jsonl", [
        {"instance_id": "acme__pkg-1", "model_name_or_path": "run-b", "model_patch": P1},
        {"instance_id": "acme__pkg-2", "model_name_or_path": "run-b", "model_patch": P2},
    ])  # fmt: skip
    out = tmp_path / "tasks.jsonl"
    result = CliRunner().invoke(app, [
        "import-swebench", "--dataset", str(dataset), "--predictions", str(preds),
        "--report", str(tmp_path / "logs"), "--min-candidates", "1", "--out", str(out),
    ])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "unresolved candidates by reason: patch_apply_failed 1" in result.output
    assert [c.resolved for t in load_tasks(out) for c in t.candidates] == [True, False]


def test_a_predictions_record_without_model_patch_is_an_error(tmp_path: Path) -> None:
    preds = write(tmp_path / "p.jsonl", [
        {"instance_id": "acme__pkg-1", "model_name_or_path": "run-a", "model_patch": P1},
        {"instance_id": "acme__pkg-2", "model_name_or_path": "run-a", "patch": P2},
    ])  # fmt: skip
    with pytest.raises(DataError) as info:
        load_predictions(preds)
    message = str(info.value)
    assert (
        message.startswith(f"{preds}:2: model_patch: missing")
        and "instance_id, model_name_or_path and model_patch" in message
    )
    assert "patch" in message.rsplit("has", 1)[1]  # the keys it does have
    # a null model_patch is a run that produced nothing: an empty candidate, not an error
    write(
        preds, [{"instance_id": "acme__pkg-1", "model_name_or_path": "run-a", "model_patch": None}]
    )
    assert load_predictions(preds)[0].patch == ""


def test_runs_sharing_a_model_name_stay_separate_sources(tmp_path: Path) -> None:
    dataset = write(tmp_path / "rows.jsonl", ROWS)

    def sample(patch: str) -> list[dict[str, Any]]:
        return [{"instance_id": "acme__pkg-1", "model_name_or_path": "agent", "model_patch": patch}]

    one, two = write(tmp_path / "s1.jsonl", sample(P1)), write(tmp_path / "s2.jsonl", sample(P2))
    pool = pool_from_runs(dataset, [(one, None), (two, None)], PoolOptions(cap_per_source=1))
    assert [c.source for c in pool.tasks[0].candidates] == ["agent (s1.jsonl)", "agent (s2.jsonl)"]
    named = pool_from_runs(dataset, [(one, None, "first"), (two, None, "second")])
    assert [c.source for c in named.tasks[0].candidates] == ["first", "second"]
    # same model name and same file name: the error names an option that exists
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    a = write(tmp_path / "a" / "all_preds.jsonl", sample(P1))
    b = write(tmp_path / "b" / "all_preds.jsonl", sample(P2))
    with pytest.raises(DataError, match="give each run its own --source NAME"):
        pool_from_runs(dataset, [(a, None), (b, None)])
    runner = CliRunner()
    base = ["import-swebench", "--dataset", str(dataset), "--out", str(tmp_path / "t.jsonl"),
            "--predictions", str(a), "--predictions", str(b)]  # fmt: skip
    refused = runner.invoke(app, base)
    assert refused.exit_code == 2 and "--source NAME" in refused.output
    ok = runner.invoke(app, [*base, "--source", "sample-1", "--source", "sample-2"])
    assert ok.exit_code == 0, ok.output
    assert [c.source for c in load_tasks(tmp_path / "t.jsonl")[0].candidates] == [
        "sample-1",
        "sample-2",
    ]
    # and the option the missing-name error suggests exists too
    nameless = write(tmp_path / "n.jsonl", [{"instance_id": "acme__pkg-1", "model_patch": P1}])
    missing = runner.invoke(app, ["import-swebench", "--dataset", str(dataset), "--out",
                                  str(tmp_path / "t2.jsonl"), "--predictions", str(nameless)])  # fmt: skip
    assert missing.exit_code == 2 and "--source NAME" in missing.output
    given = runner.invoke(app, ["import-swebench", "--dataset", str(dataset), "--out",
                                str(tmp_path / "t2.jsonl"), "--predictions", str(nameless),
                                "--source", "mine", "--min-candidates", "1"])  # fmt: skip
    assert given.exit_code == 0, given.output


def test_unknown_instance_ids_are_listed_by_name(tmp_path: Path) -> None:
    dataset = write(tmp_path / "rows.jsonl", ROWS)
    preds = write(tmp_path / "p.jsonl", [
        {"instance_id": iid, "model_name_or_path": "run-a", "model_patch": P1}
        for iid in ("acme__pkg-1", "acme__pkg-99", "other__lib-7")
    ])  # fmt: skip
    pool = pool_from_runs(dataset, [(preds, None)], PoolOptions(min_candidates=1))
    assert pool.unknown_instances == ["acme__pkg-99", "other__lib-7"]
    result = CliRunner().invoke(app, ["import-swebench", "--dataset", str(dataset), "--predictions",
                                      str(preds), "--min-candidates", "1", "--out", str(tmp_path / "t.jsonl")])  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "not in the dataset: acme__pkg-99, other__lib-7" in result.output
