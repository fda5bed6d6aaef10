"""What a study needs from one run: every selector's picks at once, scores with labels and each
selector's values, paired comparisons between selectors, and selectors of a research script's own."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import agentic_rubrics as ar
from agentic_rubrics.cli.app import app
from agentic_rubrics.pipeline.runner import RunConfig, report_folder, run
from agentic_rubrics.rank import metrics
from agentic_rubrics.rubric.file import rubric_to_yaml
from agentic_rubrics.runfolder.folder import safe_name

from .conftest import item, rubric

PATCH = "--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-b\n+{}\n"


@pytest.fixture
def study(tmp_path: Path) -> Path:
    """A finished checks-only run: 6 tasks of 4 to 6 candidates, labels mixed."""
    good = rubric(runtime=[item("RT1", 1, {"adds_match": "^c"}), item("RT2", 2, {"max_files": 3})])
    lines = []
    for t in range(6):
        iid = f"t{t}"
        folder = tmp_path / "rubrics" / iid
        folder.mkdir(parents=True)
        (folder / "rubrics.yaml").write_text(rubric_to_yaml(good))
        candidates = [
            {
                "id": f"c{i}",
                "patch": PATCH.format("cx"[(i + t) % 2] + str(i % 3)),
                "resolved": (i + t) % 3 == 0,
            }
            for i in range(4 + t % 3)
        ]
        lines.append(
            json.dumps({"instance_id": iid, "problem_statement": "x", "candidates": candidates})
        )
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text("\n".join(lines) + "\n")
    config = RunConfig(
        bootstrap_resamples=200,
        rubrics_dir=str(tmp_path / "rubrics"),
        plots=False,
        selectors=["rubric", "self_consistency", "random"],
    )
    assert run(tasks, tmp_path / "out", config) is not None
    return tmp_path / "out"


def _jsonl(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def test_every_selector_writes_its_own_picks_and_stale_ones_go(study: Path) -> None:
    names = sorted(p.stem for p in (study / "selections").glob("*.jsonl"))
    assert names == ["random", "rubric", "self_consistency"]
    scores = _jsonl(study / "scores.jsonl")
    for name in names:
        rows = _jsonl(study / "selections" / f"{name}.jsonl")
        assert {r["model_name_or_path"] for r in rows} == {f"agentic-rubrics/{name}"}
        picked = {(s["instance_id"], s["candidate_id"]) for s in scores if name in s["selected_by"]}
        assert len(rows) == len({i for i, _ in picked}) == 6
    primary = _jsonl(study / "selections.jsonl")
    assert primary == _jsonl(study / "selections" / "rubric.jsonl")
    report_folder(study, selectors=["self_consistency", "rubric"])
    assert sorted(p.stem for p in (study / "selections").glob("*.jsonl")) == [
        "rubric",
        "self_consistency",
    ]
    assert _jsonl(study / "selections.jsonl") == _jsonl(
        study / "selections" / "self_consistency.jsonl"
    )


def test_scores_hold_labels_and_every_selectors_value(study: Path) -> None:
    tasks = {
        json.loads(x)["instance_id"]: json.loads(x)
        for x in (study.parent / "tasks.jsonl").read_text().splitlines()
    }
    for row in _jsonl(study / "scores.jsonl"):
        cand = next(
            c for c in tasks[row["instance_id"]]["candidates"] if c["id"] == row["candidate_id"]
        )
        assert row["resolved"] is cand["resolved"]
        assert set(row["values"]) == {"rubric", "self_consistency", "random"}
        assert row["values"]["rubric"] == row["score"]  # S, not the tiered ranking
        assert row["ranking"]["rubric"] != row["score"] or row["score"] is None


def test_paired_comparisons_recomputed_from_the_picks(study: Path) -> None:
    report = json.loads((study / "report.json").read_text())
    comparisons = report["comparisons"]
    scores = _jsonl(study / "scores.jsonl")
    by_task: dict[str, list[dict[str, Any]]] = {}
    for row in scores:
        by_task.setdefault(row["instance_id"], []).append(row)

    def best(name: str, k: int) -> list[float]:
        out = []
        for rows in by_task.values():
            value = metrics.best_at_k(
                [r["ranking"][name] for r in rows], [r["resolved"] for r in rows], k
            )
            assert value is not None
            out.append(value)
        return out

    for k in comparisons["ks"]:
        a, b = best("self_consistency", k), best("rubric", k)
        diffs = [x - y for x, y in zip(a, b, strict=True)]
        got = comparisons["paired"]["self_consistency"]["rubric"][str(k)]
        assert got["difference"] == pytest.approx(sum(diffs) / len(diffs))
        assert got["better"] == sum(d > 1e-12 for d in diffs)
        assert got["worse"] == sum(d < -1e-12 for d in diffs)
        lo, hi = got["ci"]
        assert lo <= got["difference"] <= hi
        rand = [sum(r["resolved"] for r in rows) / len(rows) for rows in by_task.values()]
        orc = [metrics.pass_at_k([r["resolved"] for r in rows], k) for rows in by_task.values()]
        span = sum(orc) - sum(rand)  # type: ignore[arg-type]
        closed = comparisons["gap_closed"]["self_consistency"][str(k)]["value"]
        if span <= 1e-12:  # K = 1: the oracle is no better than random
            assert closed is None
        else:
            assert closed == pytest.approx((sum(a) - sum(rand)) / span)
    md = (study / "report.md").read_text()
    assert "## Selectors compared" in md and "Share of the random→oracle gap closed" in md


def prefer_full_coverage(task: Any) -> dict[str, float | None]:
    """Ranks by the share of weight that has a verdict."""
    return {cid: s.coverage_weight for cid, s in task.scores.items()}


def test_a_selector_of_a_research_script_own(
    study: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # in Python: a plain function, by itself
    report = report_folder(study, selectors=[prefer_full_coverage, "rubric"])
    name = f"{__name__}:prefer_full_coverage"
    assert report["primary_selector"] == name and name in report["selectors"]
    assert (study / "selections" / f"{safe_name(name)}.jsonl").exists()
    assert ar.register_selector(prefer_full_coverage) == name
    # on the command line: module:attribute from the current directory
    (tmp_path / "mysel.py").write_text(
        "def by_s(task):\n    return {c: s.score for c, s in task.scores.items()}\n"
    )
    monkeypatch.chdir(tmp_path)
    done = CliRunner().invoke(
        app, ["report", "--out", str(study), "--selectors", "mysel:by_s,random", "-q"]
    )
    assert done.exit_code == 0, done.output
    got = json.loads((study / "report.json").read_text())
    assert list(got["selectors"]) == ["mysel:by_s", "random"]
    bad = CliRunner().invoke(
        app, ["report", "--out", str(study), "--selectors", "nosuch:thing", "-q"]
    )
    assert bad.exit_code == 2
    assert "selector 'nosuch:thing': cannot import it" in " ".join(bad.output.split())


def test_the_api_returns_a_typed_report_and_dataframes(study: Path) -> None:
    report = report_folder(study)
    assert isinstance(report, ar.Report)
    assert (
        report.selectors["rubric"].best_at_k["1"] == report["selectors"]["rubric"]["best_at_k"]["1"]
    )
    assert report.counts.tasks == 6 and "cost" in report and report.get("nope") is None
    got = ar.frames(study)
    scores = _jsonl(study / "scores.jsonl")
    assert len(got.scores) == len(scores) and set(got.scores["resolved"]) <= {True, False}
    assert len(got.tasks) == 6 and len(got.verdicts) == len(_jsonl(study / "verdicts.jsonl"))
    assert set(got.selectors["selector"]) == set(report.selectors)
