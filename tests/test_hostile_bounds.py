"""Hostile rubrics and ids against the run's bounds: a rubric's item count, catastrophic regexes
refused at validation, one CPU budget for all of a rubric's checks on a patch, and ids too long for a
file name. Every hostile input is built here."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.exceptions import RubricError
from agentic_rubrics.pipeline.runner import RunConfig, run
from agentic_rubrics.rubric.check_regex import regex_time_limit, rubric_time_limit
from agentic_rubrics.rubric.check_verdicts import check_verdicts
from agentic_rubrics.rubric.file import MAX_ITEMS, parse_rubric, rubric_to_yaml
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.names import safe_name

from .conftest import item, rubric

HEAD = "metadata: {task_summary: a, underlying_bug: b}\naxes:\n  runtime_rubrics:\n"


def _items(n: int, pattern: str) -> str:
    return "".join(
        f"    - id: RT{i}\n      description: Adds line {i}\n      weight: 1\n"
        f"      check: {{adds_match: '{pattern}'}}\n"
        for i in range(n)
    )


def test_a_rubric_of_ten_thousand_catastrophic_items_is_refused_at_once() -> None:
    text = HEAD + _items(10_000, "^(a|aa)+$")
    start = time.process_time()
    with pytest.raises(RubricError) as err:
        parse_rubric(text, "hostile.yaml")
    took = time.process_time() - start
    assert f"10000 items; a rubric holds at most {MAX_ITEMS}" in str(err.value)
    assert "hostile.yaml:2" in str(err.value)
    assert took < 5.0, took  # read up to the refusal: no item is built or probed


def test_a_catastrophic_regex_is_refused_at_validation_with_its_line() -> None:
    text = HEAD + _items(1, "^\\s*def ") + _items(1, "(x+x+)+y").replace("RT0", "RT9")
    with pytest.raises(RubricError) as err:
        parse_rubric(text, "r.yaml")
    (problem,) = err.value.problems
    assert problem.line == 11 and "backtracks catastrophically" in problem.message


def test_all_checks_of_a_rubric_share_one_cpu_budget_per_patch() -> None:
    """50 items whose regex passes validation and backtracks for ever on one line of the patch: each
    would take its whole time (0.1 s here), 5 s for the rubric; the rubric's budget (0.3 s) stops
    them, and the items it did not reach are missing with their reason, never guessed."""
    r = rubric(runtime=[item(f"RT{i}", 1, {"adds_match": "^(abc|abcabc)+$"}) for i in range(50)])
    patch = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-b\n+" + "abc" * 40 + "!\n"
    start = time.process_time()
    with regex_time_limit(0.1), rubric_time_limit(0.3):
        got = check_verdicts(r, patch, instance_id="t", candidate_id="c")
    took = time.process_time() - start
    assert took < 1.0, took
    details = [v.detail for v in got.values()]
    assert all(v.origin == "missing" and v.reason == "check_error" for v in got.values())
    assert details.count("timeout") in (3, 4) and details.count("rubric_timeout") >= 46


def test_a_long_instance_id_with_reused_rubrics(tmp_path: Path) -> None:
    long_id = "org/" + "x" * 300
    good = rubric(runtime=[item("RT1", 1, {"max_files": 3})])
    folder = tmp_path / "rubrics" / safe_name(long_id)  # as a run folder's rubrics/ holds it
    folder.mkdir(parents=True)
    (folder / "rubrics.yaml").write_text(rubric_to_yaml(good))
    patch = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-b\n+c\n"
    tasks = tmp_path / "tasks.jsonl"
    # no rubric: the literal id is tried as a path too (DIR/org/ exists, as where rubrics are kept by
    # their owner/name ids), and its 300-character name is too long for the file system
    absent = "org/" + "y" * 300
    (tmp_path / "rubrics" / "org").mkdir()
    tasks.write_text(
        "".join(
            json.dumps(
                {
                    "instance_id": i,
                    "problem_statement": "x",
                    "candidates": [{"id": "c", "patch": patch}],
                }
            )
            + "\n"
            for i in (long_id, absent)
        )
    )
    config = RunConfig(bootstrap_resamples=0, rubrics_dir=str(tmp_path / "rubrics"), plots=False)
    report = run(tasks, tmp_path / "out", config)
    assert report is not None
    statuses = {
        json.loads(p.read_text())["instance_id"]: json.loads(p.read_text())
        for p in (tmp_path / "out" / "rubrics").glob("*/status.json")
    }
    assert statuses[long_id]["status"] != "failed"
    assert statuses[absent]["reason"] == "rubric_not_found"
    rows = [r for _, r in read_jsonl(tmp_path / "out" / "verdicts.jsonl")]
    assert rows and all(r["instance_id"] == long_id for r in rows)


def _finished_run(tmp_path: Path) -> tuple[Path, Path]:
    """A finished checks-only run of two tasks; returns its tasks file and folder."""
    good = rubric(runtime=[item("RT1", 1, {"max_files": 3}), item("RT2", 2, {"adds_match": "^c"})])
    patch = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-b\n+c\n"
    lines = []
    for iid in ("t1", "t2"):
        folder = tmp_path / "rubrics" / iid
        folder.mkdir(parents=True)
        (folder / "rubrics.yaml").write_text(rubric_to_yaml(good))
        candidates = [{"id": c, "patch": patch, "resolved": c == "c1"} for c in ("c1", "c2")]
        lines.append(
            json.dumps({"instance_id": iid, "problem_statement": "x", "candidates": candidates})
        )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    settings = {"bootstrap_resamples": 0, "rubrics_dir": str(tmp_path / "rubrics"), "plots": False}
    (tmp_path / "c.yaml").write_text(json.dumps(settings))
    assert run(tasks, tmp_path / "out", RunConfig(**settings)) is not None
    return tasks, tmp_path / "out"


def _edit_verdicts(out: Path, edit: Callable[[list[dict[str, Any]]], list[dict[str, Any]]]) -> None:
    path = out / "verdicts.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    path.write_text("".join(json.dumps(r) + "\n" for r in edit(rows)))


def test_a_verdict_row_of_the_wrong_shape_is_named_by_file_line_and_field(tmp_path: Path) -> None:
    tasks, out = _finished_run(tmp_path)

    def value_two(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows[2]["value"] = 2
        return rows

    _edit_verdicts(out, value_two)
    runner = CliRunner()
    resume = ["run", "--tasks", str(tasks), "--out", str(out), "--config", str(tmp_path / "c.yaml")]
    for args in (["report", "--out", str(out)], resume):
        result = runner.invoke(app, [*args, "-q"])
        assert result.exit_code == 2, result.output
        assert f"{out / 'verdicts.jsonl'}:3: value" in result.output
        assert "Traceback" not in result.output


def test_two_rows_for_one_verdict_are_refused_naming_both_lines(tmp_path: Path) -> None:
    _, out = _finished_run(tmp_path)

    def twice(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        flipped = dict(rows[0], value=1 - rows[0]["value"], reason=rows[0]["reason"])
        return [*rows, flipped]

    _edit_verdicts(out, twice)
    first = json.loads((out / "verdicts.jsonl").read_text().splitlines()[0])
    result = CliRunner().invoke(app, ["report", "--out", str(out), "-q"])
    assert result.exit_code == 2, result.output
    said = " ".join(result.output.split())
    key = (
        f"{first['instance_id']} candidate {first['candidate_id']} item {first['item_id']} repeat 0"
    )
    assert f":9: a second verdict row for {key}" in said
    assert "(the first is line 1)" in said


def test_hand_edited_verdicts_are_reported(tmp_path: Path) -> None:
    _, out = _finished_run(tmp_path)
    progress = [json.loads(x) for x in (out / "progress.jsonl").read_text().splitlines()]
    assert all(p["verdicts_digest"].startswith("sha256:") for p in progress)
    result = CliRunner().invoke(app, ["report", "--out", str(out), "-q"])
    assert result.exit_code == 0 and "no longer holds" not in result.output

    def flip(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        edited = next(r for r in rows if r["instance_id"] == "t2" and r["item_id"] == "RT2")
        edited["value"] = 1 - edited["value"]
        return rows

    _edit_verdicts(out, flip)
    result = CliRunner().invoke(app, ["report", "--out", str(out)])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["verdicts_changed"] == ["t2"]
    warning = "verdicts.jsonl no longer holds the rows 1 task(s) wrote"
    assert warning in result.output and warning in (out / "report.md").read_text()


def test_a_run_whose_analyses_crashed_says_so_at_the_end() -> None:
    """The README example without its guard lost 750 of the demo's 3,120 verdicts as
    analysis_crashed: a quarter of the rows, but every one the post-image analysis decides, so the
    phase failed for everyone (fatal, exit code 1). A few crashes are a warning; a report that did not
    count the repository-aware rows is judged against all its rows."""
    from agentic_rubrics.report.problems import diagnose
    from agentic_rubrics.runfolder.report import Report

    data = json.loads((Path(__file__).parent / "data" / "demo_reference.json").read_text())
    report = data["report"] | {"config_hash": "sha256:x"}
    rows = report["verdicts"]["rows"]
    # the demo's rubrics decide 1050 of them on the tree (750 before changes_behaviour joined them)
    assert (rows, report["verdicts"]["repository_aware_rows"]) == (3120, 1050)
    for crashed, aware, fatal in (
        (750, 750, True),
        (400, 750, True),
        (40, 750, False),
        (750, None, False),
        (2000, None, True),
    ):
        report["verdicts"]["repository_aware_rows"] = aware
        report["verdicts"]["check_error_by_detail"] = {"analysis_crashed": crashed}
        problems = diagnose(Report.model_validate(report))
        said = [p for p in [*problems.warnings, *problems.fatal] if "analysis_crashed" in p]
        share = f"of {aware} repository-aware" if aware else f"of {rows}"
        assert len(said) == 1 and f"{crashed} {share} item verdicts missing" in said[0]
        assert (said[0] in problems.fatal) == fatal


def test_the_report_says_which_k_each_pool_reaches(tmp_path: Path) -> None:
    good = rubric(runtime=[item("RT1", 1, {"adds_match": "^c"})])
    lines = []
    for iid, n in (("small", 2), ("large", 4)):
        folder = tmp_path / "rubrics" / iid
        folder.mkdir(parents=True)
        (folder / "rubrics.yaml").write_text(rubric_to_yaml(good))
        patch = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-b\n+{}\n"
        candidates = [
            {"id": f"c{i}", "patch": patch.format("cx"[i % 2]), "resolved": i == 0}
            for i in range(n)
        ]
        lines.append(
            json.dumps({"instance_id": iid, "problem_statement": "x", "candidates": candidates})
        )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    config = RunConfig(bootstrap_resamples=0, rubrics_dir=str(tmp_path / "rubrics"), plots=False)
    report = run(tasks, tmp_path / "out", config)
    assert report is not None
    counts = report["counts"]
    assert counts["tasks_with_pool_at_least"] == {"1": 2, "2": 2, "3": 1, "4": 1}
    assert counts["max_pool"] == 4 and counts["max_k"] == 16
    assert list(report["selectors"]["rubric"]["best_at_k"]) == ["1", "2", "3", "4"]
    md = " ".join((tmp_path / "out" / "report.md").read_text().split())
    assert "from K = 3 on, not every task reaches K" in md
    assert "K stops at 4, the largest pool: Best@16 (max_k) is not defined" in md


def test_the_checks_cost_one_budget_per_candidate_whatever_the_repeats(tmp_path: Path) -> None:
    """With --repeats N the model judge asked the checks again on every repeat, and each time they
    could spend the rubric's whole budget: N budgets per candidate (6 x 0.3 s here), for verdicts
    that cannot vary. They are decided once per patch, and every repeat reads that decision."""
    import asyncio

    from agentic_rubrics.judge.judges import JudgeConfig, LLMJudge
    from agentic_rubrics.llm.door import LLM, LLMConfig, import_litellm
    from agentic_rubrics.pipeline.verifiers.rubric_judging import judge_task
    from agentic_rubrics.testing import LoopbackServer, judge_answer
    from agentic_rubrics.types import Candidate, Task

    import_litellm()  # its import's CPU is not what is measured
    slow = [item(f"RT{i}", 1, {"adds_match": "^(abc|abcabc)+$"}) for i in range(10)]
    r = rubric(spec_alignment=[item("SA1", 2)], runtime=slow)
    patch = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-b\n+" + "abc" * 40 + "!\n"
    task = Task(instance_id="t", problem_statement="x", candidates=[Candidate(id="c", patch=patch)])
    with LoopbackServer(judge_answer(1)) as srv:
        config = LLMConfig(model="openai/judge-under-test", api_base=srv.url, timeout=30.0)
        llm = LLM(config, cache_dir=tmp_path / "cache")
        judge = LLMJudge(llm, JudgeConfig(kind="llm", model=config))

        async def go() -> list[dict[str, Any]]:
            try:
                return [
                    v.to_row() for v in await judge_task(task, r, judge, repeats=6, concurrency=6)
                ]
            finally:
                await llm.aclose()

        start = time.process_time()
        with regex_time_limit(0.1), rubric_time_limit(0.3):
            rows = asyncio.run(go())
        took = time.process_time() - start
    assert len(srv.requests) == 6  # the model item, once per repeat
    judged = [x for x in rows if x["item_id"] == "SA1"]
    assert [x["value"] for x in judged] == [1] * 6
    checks = [x for x in rows if x["item_id"] != "SA1"]
    assert all(x["reason"] == "check_error" for x in checks)  # never decided, never guessed
    by_repeat = {
        k: sorted((x["item_id"], x["detail"]) for x in checks if x["repeat"] == k) for k in range(6)
    }
    assert all(got == by_repeat[0] for got in by_repeat.values())  # one decision for every repeat
    assert took < 1.0, took  # 6 x 0.3 s of checks before


def test_failed_model_rubrics_say_what_the_explorer_did_in_the_failure_summary() -> None:
    """Some rubrics failed (a warning per reason): each reason gives its first tasks' turns and the
    validator's last error, the way status.json holds them; a failure with neither says nothing more."""
    from agentic_rubrics.report.problems import explore_problems
    from agentic_rubrics.runfolder.rows import RubricStatus

    def status(iid: str, reason: str | None, turns: int | None, error: str | None) -> RubricStatus:
        state = "ok" if reason is None else "failed"
        return RubricStatus(
            instance_id=iid,
            source="explorer:agent",
            status=state,
            reason=reason,
            turns=turns,
            last_validation_error=error,
        )

    long = "rubrics.yaml:6: weight: expected 1, 2 or 3 " + "x" * 400
    problems = explore_problems(
        [
            status("a", None, 7, None),
            status("b", "invalid_rubric", 30, long),
            status("c", "invalid_rubric", 30, "rubrics.yaml:2: no axes"),
            status("d", "invalid_rubric", 30, "rubrics.yaml:9: never shown"),
            status("e", "turn_budget_exhausted", 30, None),
            status("f", "no_repository:fetch_failed", None, None),
        ]
    )
    assert not problems.fatal
    lines = {line.split(":")[0]: line for line in problems.warnings}
    invalid = lines["3 rubric(s) failed"]
    assert "b (30 turns; the validator's last error: rubrics.yaml:6: weight: expected" in invalid
    assert "c (30 turns; the validator's last error: rubrics.yaml:2: no axes)" in invalid
    assert "never shown" not in invalid and len(invalid) < 600  # two examples, each capped
    (budget,) = [w for w in problems.warnings if "turn_budget_exhausted" in w]
    assert budget.endswith("e (30 turns; no file it wrote was validated)")
    (fetch,) = [w for w in problems.warnings if "fetch_failed" in w]
    assert fetch == "1 rubric(s) failed: no_repository:fetch_failed"
