"""What a study needs from one run: every selector's picks at once, scores with labels and each
selector's values, paired comparisons between selectors, and selectors of a research script's own."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

import agentic_rubrics as ar
from agentic_rubrics.cli.app import app
from agentic_rubrics.pipeline.runner import RunConfig, report_folder, run
from agentic_rubrics.rank import metrics
from agentic_rubrics.rubric.file import rubric_to_yaml
from agentic_rubrics.runfolder.names import safe_name

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
    """Differences, their paired intervals and the gap closed, recomputed here from scores.jsonl's
    per-task rankings and labels with the pure-Python bootstrap (the report's 200 resamples, seed 0)."""
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

    def interval(units: list[Any], statistic: Any) -> list[float] | None:
        ci = metrics.bootstrap_ci(units, statistic, n_resamples=200, seed=0)
        return list(ci) if ci else None

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs)

    def ratio(units: list[tuple[float, float, float]]) -> float | None:
        num, den = sum(b - r for b, r, _ in units), sum(o - r for _, r, o in units)
        return num / den if den > 1e-12 else None

    assert comparisons["ks"] == [1, 4, 6]  # 1, 4 and the largest pool (8 and 16 out of reach)
    assert set(comparisons["paired"]) == {"self_consistency", "random", "rubric"}
    assert set(comparisons["paired"]["random"]) == {"rubric", "self_consistency"}
    assert set(comparisons["paired"]["rubric"]) == {"self_consistency"}
    rand = [mean([r["resolved"] for r in rows]) for rows in by_task.values()]
    spans = 0
    for k in comparisons["ks"]:
        orc = [
            metrics.pass_at_k([r["resolved"] for r in rows], k) or 0.0 for rows in by_task.values()
        ]
        for name, others in comparisons["paired"].items():
            for other, by_k in others.items():
                diffs = [x - y for x, y in zip(best(name, k), best(other, k), strict=True)]
                got = by_k[str(k)]
                assert got["difference"] == pytest.approx(mean(diffs))
                assert got["better"] == sum(d > 1e-12 for d in diffs)
                assert got["worse"] == sum(d < -1e-12 for d in diffs)
                assert got["tasks"] == 6
                assert got["ci"] == pytest.approx(interval(diffs, mean), abs=1e-12)
        for name in ("rubric", "self_consistency", "random"):
            units = list(zip(best(name, k), rand, orc, strict=True))
            closed = comparisons["gap_closed"][name][str(k)]
            if sum(orc) - sum(rand) <= 1e-12:  # K = 1: the oracle is no better than random
                assert closed == {"value": None, "ci": None}
                continue
            spans += 1
            assert closed["value"] == pytest.approx(ratio(units))
            assert closed["ci"] == pytest.approx(interval(units, ratio), abs=1e-12)
    assert spans == 6  # K = 4 and 6, three selectors each
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


# research scripts' selectors that are wrong in one way each, and what the report says of them
def gives_a_list(task: Any) -> Any:
    return list(task.scores)


def gives_words(task: Any) -> Any:
    return dict.fromkeys(task.scores, "high")


def gives_nan(task: Any) -> Any:
    return dict.fromkeys(task.scores, float("nan"))


def raises(task: Any) -> Any:
    raise KeyError("coverage")


def names_other_candidates(task: Any) -> Any:
    return {f"candidate-{i}": 1.0 for i, _ in enumerate(task.scores)}


class NeedsArguments:
    def __init__(self, weight: float) -> None:
        self.weight = weight

    def ranking(self, task: Any) -> Any:
        return {}


BROKEN = {
    gives_a_list: "its ranking of t0 is a list: expected a dict {candidate id: number or None}",
    gives_words: "its ranking of t0: candidate 'c0' has 'high': expected a number (not NaN) or None",
    gives_nan: "its ranking of t0: candidate 'c0' has nan: expected a number (not NaN) or None",
    raises: "its ranking of t0 raised KeyError: 'coverage'",
    names_other_candidates: "its ranking of t0 names 4 candidate(s) the task does not have"
    " ('candidate-0', 'candidate-1', 'candidate-2'); its candidates are 'c0', 'c1', 'c2' ...",
    NeedsArguments: "NeedsArguments() failed (TypeError: ",
}


def test_a_broken_selector_is_named_with_what_was_expected(study: Path) -> None:
    before = (study / "report.json").read_text()
    for fn, expected in BROKEN.items():
        name = f"{__name__}:{fn.__qualname__}"
        with pytest.raises(ar.ConfigError) as caught:
            report_folder(study, selectors=[fn, "rubric"])
        assert f"selector {name!r}" in str(caught.value), fn
        assert expected in str(caught.value), (fn, str(caught.value))
    assert (study / "report.json").read_text() == before  # nothing was written
    # on the command line too: exit 2, one line, no traceback
    done = CliRunner().invoke(
        app, ["report", "--out", str(study), "--selectors", f"{__name__}:gives_nan,rubric", "-q"]
    )
    assert done.exit_code == 2 and "Traceback" not in done.output
    assert BROKEN[gives_nan] in " ".join(done.output.split())


class OnlyRanking:
    """A class with ranking() alone: the other members take their defaults."""

    def ranking(self, task: Any) -> Any:
        import numpy as np

        # numpy numbers (float32 is no Python float) and booleans are numbers; a left-out
        # candidate has no value
        ids = list(task.scores)
        return {ids[0]: np.float32(0.5), ids[1]: True, ids[2]: np.int64(-3)}


def test_a_selector_class_with_ranking_alone_works_and_its_numbers_are_floats(study: Path) -> None:
    report = report_folder(study, selectors=[OnlyRanking, "rubric"])
    name = f"{__name__}:OnlyRanking"
    assert report.primary_selector == name and report.selectors[name].tasks == 6
    rows = _jsonl(study / "scores.jsonl")
    for row in rows:
        assert row["ranking"][name] in (0.5, 1.0, -3.0, None)
        assert row["values"][name] == row["ranking"][name]
    assert {r["candidate_id"] for r in rows if name in r["selected_by"]} == {"c1"}


def test_a_selector_without_a_name_a_later_report_could_use_is_refused(study: Path) -> None:
    def local(task: Any) -> Any:
        return {}

    for fn in (lambda task: {}, local):
        with pytest.raises(ar.ConfigError, match="has no name a later report could know it by"):
            report_folder(study, selectors=[fn, "rubric"])
        with pytest.raises(ar.ConfigError, match="register_selector\\(fn, name='my_selector'\\)"):
            RunConfig(selectors=[fn])
    assert ar.register_selector(lambda task: {}, name="no_opinion") == "no_opinion"
    report = report_folder(study, selectors=["rubric", "no_opinion"])
    assert list(report.selectors) == ["rubric", "no_opinion"]


def test_a_selector_the_run_was_handed_is_named_where_a_later_report_misses_it(
    study: Path,
) -> None:
    # config.json names a selector some other process handed over; this one has never seen it
    config = json.loads((study / "config.json").read_text())
    config["config"]["selectors"] = ["handed_over_elsewhere", "rubric"]
    (study / "config.json").write_text(json.dumps(config))
    done = CliRunner().invoke(app, ["report", "--out", str(study), "-q"])
    said = " ".join(done.output.split())
    assert done.exit_code == 2, said
    assert f"{study / 'config.json'}'s selectors: selectors must be distinct names" in said
    assert "give the report its selectors: `report --selectors`" in said
    # a script's own function, named in __main__: said so
    done = CliRunner().invoke(
        app, ["report", "--out", str(study), "--selectors", "__main__:mine", "-q"]
    )
    assert done.exit_code == 2
    assert "handed over by a script or notebook" in " ".join(done.output.split())
    assert CliRunner().invoke(
        app, ["report", "--out", str(study), "--selectors", "rubric", "-q"]
    ).exit_code in (0, 1)


def test_the_selections_folder_must_be_the_run_folders_own(study: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.jsonl").write_text("{}\n")
    shutil.rmtree(study / "selections")
    (study / "selections").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(ar.DataError, match="selections: expected the run folder's own directory"):
        report_folder(study)
    assert (elsewhere / "keep.jsonl").read_text() == "{}\n"  # neither removed nor replaced
    assert sorted(p.name for p in elsewhere.iterdir()) == ["keep.jsonl"]
    (study / "selections").unlink()
    (study / "selections").write_text("not a folder")
    done = CliRunner().invoke(app, ["report", "--out", str(study), "-q"])
    assert done.exit_code == 2 and "found a file" in " ".join(done.output.split())
    # a stale link in it goes, never what it points to
    (study / "selections").unlink()
    (study / "selections").mkdir()
    (study / "selections" / "gone.jsonl").symlink_to(elsewhere / "keep.jsonl")
    report_folder(study)
    assert not (study / "selections" / "gone.jsonl").is_symlink()
    assert (elsewhere / "keep.jsonl").read_text() == "{}\n"


def test_scores_rows_are_typed_and_an_older_file_still_reads(study: Path) -> None:
    from agentic_rubrics.runfolder.records import run_folder_schema
    from agentic_rubrics.runfolder.rows import ScoreRow

    rows = _jsonl(study / "scores.jsonl")
    assert [ScoreRow.model_validate(r).to_json() for r in rows] == rows
    assert "rank_tier" in run_folder_schema()["score_row"]["properties"]
    # a file written before labels and values were recorded: read with their defaults
    old = [{k: v for k, v in r.items() if k not in ("resolved", "values")} for r in rows]
    (study / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    got = ar.frames(study).scores
    assert got["resolved"].isna().all() and all(v == {} for v in got["values"])
    # a hand-edited row is named by its line and field
    old[2]["rank_tier"] = "top"
    (study / "scores.jsonl").write_text("".join(json.dumps(r) + "\n" for r in old))
    with pytest.raises(ar.DataError, match=r"scores.jsonl:3: rank_tier: Input should be a valid"):
        ar.frames(study)
