"""Plots in every report, calibration across runs, progress bars, and the audit notebook on the demo run."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.cli.progress import RunProgress
from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.pipeline.runner import RunConfig, run
from agentic_rubrics.rank.metrics import roc_curve as roc_points
from agentic_rubrics.report import audit
from agentic_rubrics.report.calibration import brier, calibrate, ece, load_calibration, reliability

ROOT = Path(__file__).resolve().parents[1]
# the tests that read the module's two runs share one pytest-xdist worker, so they are made once
SHARES_HALVES = pytest.mark.xdist_group("test_reporting.halves")


@pytest.fixture(scope="module")
def halves(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two runs over disjoint halves of the bundled tasks."""
    root = tmp_path_factory.mktemp("halves")
    rows = write_tasks_jsonl(root / "all.jsonl").read_text().splitlines()
    out = []
    for n, part in enumerate((rows[:5], rows[5:])):
        tasks = root / f"half{n}.jsonl"
        tasks.write_text("\n".join(part) + "\n")
        run(tasks, root / f"run{n}", RunConfig(bootstrap_resamples=50))
        out.append(root / f"run{n}")
    return out[0], out[1]


@SHARES_HALVES
def test_every_report_embeds_its_plots(halves: tuple[Path, Path]) -> None:
    folder = halves[0]
    report = json.loads((folder / "report.json").read_text())
    assert report["plots"] == [
        "plots/best_at_k.png",
        "plots/s_by_label.png",
        "plots/axis_by_label.png",
        "plots/roc.png",
    ]
    md = (folder / "report.md").read_text()
    for path in report["plots"]:
        data = (folder / path).read_bytes()
        assert data.startswith(b"\x89PNG") and len(data) > 5000
        assert f"]({path})" in md
    assert "## Plots" in md


@SHARES_HALVES
def test_plots_false_draws_none_and_changes_no_number(
    halves: tuple[Path, Path], tmp_path: Path
) -> None:
    """``plots: false`` writes no PNG and no plot section; every other field of the report is the
    same as the run that drew them."""
    tasks = halves[0].parent / "half0.jsonl"
    run(tasks, tmp_path / "run", RunConfig(bootstrap_resamples=50, plots=False))
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    drawn = json.loads((halves[0] / "report.json").read_text())
    assert report["plots"] == [] and not (tmp_path / "run" / "plots").exists()
    assert "## Plots" not in (tmp_path / "run" / "report.md").read_text()
    assert {k: v for k, v in report.items() if k != "plots"} == {
        k: v for k, v in drawn.items() if k != "plots"
    }


def test_roc_points() -> None:
    assert roc_points([0.9, 0.8, 0.1], [1, 0, 0]) == [
        (0.0, 0.0),
        (0.0, 1.0),
        (0.5, 1.0),
        (1.0, 1.0),
    ]
    assert roc_points([0.5, 0.5], [1, 0]) == [(0.0, 0.0), (1.0, 1.0)]
    assert roc_points([0.5], [1]) == []


@SHARES_HALVES
def test_calibration_fitted_on_one_run_applied_to_another(
    halves: tuple[Path, Path], tmp_path: Path
) -> None:
    fit_on, apply_to = halves
    result = calibrate(fit_on, apply_to, tmp_path / "cal")
    cal = load_calibration(tmp_path / "cal" / "calibration.json")
    assert cal.x == sorted(cal.x) and cal.y == sorted(cal.y)  # isotonic: monotone
    assert all(0.0 <= y <= 1.0 for y in cal.y)
    assert result["applied_to"] != result["calibration"]["fitted_on"]
    bins = result["reliability"]["calibrated"]
    assert sum(b["count"] for b in bins) == result["candidates"] == 75
    assert (tmp_path / "cal" / "reliability.png").read_bytes().startswith(b"\x89PNG")
    # the numbers follow their definitions
    assert brier([0.0, 1.0], [0, 1]) == 0.0 and brier([0.5, 0.5], [1, 0]) == 0.25
    assert ece(reliability([0.05, 0.95], [0, 1])) == pytest.approx(0.05)
    assert result["ece"]["calibrated"] <= result["ece"]["s_as_probability"]
    out = CliRunner().invoke(
        app,
        [
            "calibrate",
            "--fit",
            str(fit_on),
            "--apply",
            str(apply_to),
            "--out",
            str(tmp_path / "c2"),
        ],
    )
    assert out.exit_code == 0 and "75 candidates; Brier" in out.output


def test_calibration_refuses_runs_that_share_instances(
    halves: tuple[Path, Path], tmp_path: Path
) -> None:
    fit_on = halves[0]
    with pytest.raises(DataError, match="share 5 instance"):
        calibrate(fit_on, fit_on, tmp_path / "same")
    assert not (tmp_path / "same").exists()
    runner = CliRunner()
    args = ["calibrate", "--fit", str(fit_on), "--apply", str(fit_on), "--out", str(tmp_path / "c")]
    refused = runner.invoke(app, args)
    assert refused.exit_code == 2 and "--allow-overlap" in refused.output
    loud = runner.invoke(app, [*args, "--allow-overlap"])
    assert loud.exit_code == 0 and "WARNING: fitted and applied on 5 shared" in loud.output
    assert json.loads((tmp_path / "c" / "calibration.json").read_text())["shared_instances"] == 5


def test_calibration_needs_both_labels(tmp_path: Path) -> None:
    rows = write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()[:1]
    record = json.loads(rows[0])
    for c in record["candidates"]:
        c["resolved"] = False
    tasks = tmp_path / "one.jsonl"
    tasks.write_text(json.dumps(record) + "\n")
    run(tasks, tmp_path / "r", RunConfig(bootstrap_resamples=0))
    with pytest.raises(DataError, match="needs resolved and unresolved"):
        calibrate(tmp_path / "r", tmp_path / "r", allow_overlap=True)


@SHARES_HALVES
def test_fit_writes_weights_with_their_evidence_and_fitted_uses_them(
    halves: tuple[Path, Path], tmp_path: Path
) -> None:
    weights = tmp_path / "weights.json"
    args = ["fit", str(halves[0]), str(halves[1]), "--out", str(weights), "--resamples", "200"]
    out = CliRunner().invoke(app, args)
    assert out.exit_code == 0, out.output
    assert "held out (10 pools): Best@16" in out.output
    written = json.loads(weights.read_text())
    # the command warns exactly when the held-out interval of the difference holds 0 or less
    beats = written["evidence"]["beats_self_consistency"]
    lo = written["evidence"]["difference"]["ci"][0]
    assert beats == (lo > 0)
    warned = "WARNING: the fit does not beat self-consistency out of sample" in out.output
    assert warned == (not beats)
    fitted_on, evidence = written["fitted_on"], written["evidence"]
    assert [r["run"] for r in fitted_on["runs"]] == [str(h) for h in halves]
    assert (fitted_on["instances"], fitted_on["repositories"], fitted_on["candidates"]) == (
        10,
        10,
        150,
    )
    assert fitted_on["library_version"] and "conditional logit" in fitted_on["method"]
    assert len(written["fit_instance_sha256"]) == 10
    for who in ("fitted", "self_consistency"):
        assert set(evidence[who]) == {"best_at_16", "best_at_16_ci", "roc_auc", "roc_auc_ci"}
        assert evidence[who]["best_at_16_ci"] and evidence[who]["roc_auc_ci"]
    assert "outer folds by repository" in evidence["how"]
    # ranking with them: a copy of one half (its five tasks were in the fit)
    run0 = tmp_path / "run0"
    shutil.copytree(halves[0], run0)
    name = f"fitted:{weights}"
    shown = CliRunner().invoke(app, ["report", "--out", str(run0), "--selectors", f"{name},random"])
    assert shown.exit_code == 0, shown.output
    report = json.loads((run0 / "report.json").read_text())
    assert report["primary_selector"] == name
    fit = report["fitted_weights"][name]
    assert fit["run_instances_in_fit"] == 5 and fit["out_of_sample"]["pools"] == 10
    warned = [w for w in report["problems"]["warnings"] if "in the fit of the" in w]
    assert len(warned) == 1 and f"{name!r} selector's weights (2 labelled run(s))" in warned[0]
    # the selector that wrote selections.jsonl: where its weights came from, and their evidence
    said = report["selection"]["weights"]
    assert (
        said["source"] == "fitted"
        and "fitted by `agentic-rubrics fit` on 10 instances of 2 run(s)" in said["fitted_on"]
    )
    assert said["out_of_sample"].startswith("nested cross-validation on its 10 pools: Best@16")
    assert said["figures"] == evidence
    assert f"Out of sample: {said['out_of_sample']}." in (run0 / "report.md").read_text()


@SHARES_HALVES
def test_fit_refuses_too_few_instances_and_runs_without_a_resolved_candidate(
    halves: tuple[Path, Path], tmp_path: Path
) -> None:
    runner = CliRunner()
    few = runner.invoke(app, ["fit", str(halves[0]), "--out", str(tmp_path / "w.json")])
    assert few.exit_code == 2 and "5 labelled instance(s)" in few.output
    assert "needs at least 10" in few.output and not (tmp_path / "w.json").exists()
    record = json.loads(write_tasks_jsonl(tmp_path / "all.jsonl").read_text().splitlines()[0])
    for c in record["candidates"]:
        c["resolved"] = False
    tasks = tmp_path / "one.jsonl"
    tasks.write_text(json.dumps(record) + "\n")
    run(tasks, tmp_path / "r", RunConfig(bootstrap_resamples=0, plots=False))
    none = runner.invoke(app, ["fit", str(tmp_path / "r"), "--out", str(tmp_path / "w.json")])
    assert none.exit_code == 2 and "no resolved candidate among 15 labelled" in none.output
    absent = runner.invoke(app, ["fit", str(tmp_path / "nowhere"), "--out", str(tmp_path / "w")])
    assert absent.exit_code == 2 and "not a run folder" in absent.output
    # one run twice, or with a copy of itself: its pools would count twice (the intervals narrowed)
    shutil.copytree(halves[0], tmp_path / "copy")
    for twice in ([halves[0], halves[1], halves[0]], [halves[0], tmp_path / "copy", halves[1]]):
        args = ["fit", *map(str, twice), "--out", str(tmp_path / "w.json")]
        again = runner.invoke(app, args)
        assert again.exit_code == 2 and "the same run as" in again.output, again.output
    assert not (tmp_path / "w.json").exists()


def test_progress_counts_and_stays_quiet_off_a_terminal() -> None:
    with RunProgress(3, force=True) as bar:
        bar.console.file = io.StringIO()
        bar("judged", "a", {"missing": 2, "usd": 0.5, "calls": 3})
        bar("skipped", "b", {"missing": 0})
        bar("explored", "c", {"usd": 0.75, "calls": 4})
        assert bar.progress.tasks[0].completed == 2
        assert bar.missing == 2 and bar.status == "missing verdicts 2 · $0.7500"
    quiet = RunProgress(1)  # pytest's stderr is not a terminal
    assert quiet.progress.disable


@SHARES_HALVES
def test_audit_finds_disagreements_with_their_deciding_items(
    halves: tuple[Path, Path], tmp_path: Path
) -> None:
    a = audit.load_audit(halves[1])
    rows = audit.disagreements(a)
    assert rows, "the static rubric disagrees with the tests somewhere"
    for row in rows:
        if row["case"] == "tests pass, S low":
            assert row["resolved"] and row["s"] < 0.7
        else:
            assert not row["resolved"] and row["s"] >= 0.85
        assert row["deciding_items"]
    first = rows[0]
    audit.label(
        rows, first["instance_id"], first["candidate_id"], "band-aid fix", note="checked by hand"
    )
    with pytest.raises(DataError, match="unknown utility label"):
        audit.label(rows, first["instance_id"], first["candidate_id"], "nice")
    path = audit.save_labels(rows, tmp_path / "labels.csv")
    again = audit.merge_saved_labels(audit.disagreements(a), path)
    assert again[0]["utility"] == "band-aid fix" and again[0]["utility_group"] == "high"
    with path.open() as fh:
        assert next(iter(csv.DictReader(fh)))["note"] == "checked by hand"


@SHARES_HALVES
def test_the_audit_notebook_runs_on_the_demo_run(halves: tuple[Path, Path], tmp_path: Path) -> None:
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(ROOT / "notebooks" / "rubric_utility_audit.ipynb", as_version=4)
    # no AUDIT_RUN: the notebook, started in notebooks/, finds the run `make demo` wrote beside it
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "demo-20250101-000000").symlink_to(halves[0], target_is_directory=True)
    (tmp_path / "notebooks").mkdir()
    assert "AUDIT_RUN" not in os.environ
    NotebookClient(
        notebook,
        timeout=300,
        kernel_name="python3",
        resources={"metadata": {"path": str(tmp_path / "notebooks")}},
    ).execute()
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    text = json.dumps([o.get("data", {}) for o in outputs])
    assert "tests pass, S low" in text and "Saved" in text
    assert (halves[0] / "audit_labels.csv").exists()


def test_the_audit_says_how_to_point_it_at_a_run(tmp_path: Path) -> None:
    assert "AUDIT_RUN" not in os.environ
    with pytest.raises(DataError, match=r"set the environment variable AUDIT_RUN .*make demo"):
        audit.find_run(tmp_path)
    older, newer = tmp_path / "runs" / "demo-1", tmp_path / "runs" / "demo-2"
    for n, folder in enumerate((older, newer)):
        folder.mkdir(parents=True)
        (folder / "report.json").write_text("{}")
        os.utime(folder, (1_000_000 + n, 1_000_000 + n))
    (tmp_path / "notebooks").mkdir()
    assert audit.find_run(tmp_path / "notebooks") == newer.resolve()


def test_the_notebook_extra_installs_what_the_notebook_imports() -> None:
    """Every module the audit notebook imports comes from the package's own dependencies, or from
    the ``notebook`` extra (directly, or as a requirement of one of its packages)."""
    import json
    import re
    import sys
    import tomllib
    from importlib.metadata import packages_distributions, requires

    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    name = lambda spec: re.split(r"[<>=!~\[ ;]", spec, maxsplit=1)[0].lower()  # noqa: E731
    core = {name(d) for d in meta["dependencies"]}
    extra = {name(d) for d in meta["optional-dependencies"]["notebook"]}
    assert {"jupyterlab", "ipykernel"} <= extra
    # the page on the notebook says how to install it: the one extra
    assert "pip install -e '.[notebook]'" in (ROOT / "docs" / "reports.md").read_text()
    beneath = {name(r) for e in extra for r in (_requires(requires, e) or [])}
    nb = json.loads((ROOT / "notebooks" / "rubric_utility_audit.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    modules = set(re.findall(r"^\s*(?:from|import)\s+(\w+)", code, re.M))
    found = packages_distributions()
    for module in modules - set(sys.stdlib_module_names) - {"agentic_rubrics"}:
        dists = {d.lower() for d in found.get(module, [])}
        assert dists & (core | extra | beneath), (module, dists)


def _requires(requires: Any, dist: str) -> list[str] | None:
    try:
        found: list[str] | None = requires(dist)
    except Exception:  # not installed here (jupyterlab is not in the dev extra)
        return None
    return found
