"""The main job end to end on the offline default, on the bundled tasks."""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import load_examples, write_tasks_jsonl
from agentic_rubrics.exceptions import ConfigError
from agentic_rubrics.pipeline.runner import RunConfig, report_folder, run
from agentic_rubrics.rank.content import WEIGHTS_FILE
from agentic_rubrics.rank.offline import shipped
from agentic_rubrics.rank.rerank import selection_evidence
from agentic_rubrics.runfolder.files import read_jsonl

FAST = RunConfig(bootstrap_resamples=50, plots=False)  # plots: test_reporting.py
# the tests that read the module's demo run share one pytest-xdist worker, so it is made once
SHARES_DEMO_RUN = pytest.mark.xdist_group("test_pipeline.demo_run")


@pytest.fixture(scope="module")
def tasks_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_tasks_jsonl(tmp_path_factory.mktemp("tasks") / "tasks.jsonl")


@pytest.fixture(scope="module")
def demo_run(tasks_file: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("runs") / "demo"
    run(tasks_file, out, RunConfig(bootstrap_resamples=200))
    return out


def rows(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in read_jsonl(path)]


def sorted_rows(path: Path) -> list[dict[str, Any]]:
    """Verdict rows in a canonical order (tasks finish in any order when run concurrently)."""
    return sorted(
        rows(path), key=lambda r: (r["instance_id"], r["candidate_id"], r["item_id"], r["repeat"])
    )


# --------------------------------------------------------------------------- independent recomputation


def selection_probability(values: list[float], i: int, k: int) -> float:
    """P(candidate i is picked from a uniform K-subset; ties uniform), derived per candidate."""
    n = len(values)
    k = min(k, n)
    below = sum(1 for j, v in enumerate(values) if j != i and v < values[i])
    tied = sum(1 for j, v in enumerate(values) if j != i and v == values[i])
    total = 0.0
    for t in range(0, min(tied, k - 1) + 1):
        ways = math.comb(tied, t) * math.comb(below, k - 1 - t)
        total += ways / (t + 1)
    return total / math.comb(n, k)


def expected_best(values: list[float | None], labels: list[int], k: int) -> float:
    keyed = [-math.inf if v is None else v for v in values]  # no score ranks below every score
    return sum(y * selection_probability(keyed, i, k) for i, y in enumerate(labels))


def recompute(folder: Path) -> dict[str, Any]:
    """Every headline number of report.json from verdicts.jsonl, the rubrics and the labels alone."""
    progress = {r["instance_id"]: r for r in rows(folder / "progress.jsonl")}
    verdicts = rows(folder / "verdicts.jsonl")
    by_cand: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for v in verdicts:
        by_cand[(v["instance_id"], v["candidate_id"])].append(v)
    out: dict[str, Any] = {"S": {}, "value": {}, "decision": Counter(), "labels": {}}
    for iid, p in progress.items():
        rubric_ok = p["rubric"]["status"] == "ok"
        items: dict[str, dict[str, Any]] = {}
        if rubric_ok:
            doc = yaml.safe_load((folder / "rubrics" / iid / "rubrics.yaml").read_text())
            for axis_items in doc["axes"].values():
                for it in axis_items:
                    items[it["id"]] = it
        for cand in p["candidates"]:
            cid = cand["id"]
            got = {v["item_id"]: v for v in by_cand[(iid, cid)]}
            valued = [
                (items[i]["weight"], v["value"]) for i, v in got.items() if v["value"] is not None
            ]
            s = sum(w * x for w, x in valued) / sum(w for w, _ in valued) if valued else None
            wt = sum(it["weight"] for it in items.values())
            cov = sum(w for w, _ in valued) / wt if wt else 0
            gates = [i for i, it in items.items() if it.get("gate")]
            failed = [g for g in gates if got.get(g, {}).get("value") == 0]
            gate_missing = [g for g in gates if got.get(g, {}).get("value") is None]
            nothing = any(v.get("reason") == "no_behaviour_change" for v in got.values())
            if cand["empty"] or nothing:
                tier, decision = 0, "reject"
            elif failed:
                tier, decision = 2, "reject"
            elif s is None:
                tier, decision = 1, "inconclusive"
            elif cov < 0.5 or gate_missing:
                tier, decision = 3, "inconclusive"
            else:
                tier = 4
                decision = "accept" if s >= 0.85 else "review" if s >= 0.60 else "reject"
            out["S"][(iid, cid)] = s
            out["value"][(iid, cid)] = 2 * tier + (s or 0.0)
            out["decision"][decision] += 1
            out["labels"][(iid, cid)] = int(bool(cand["resolved"]))
    return out


RELATIVE = (
    ("s", "max"),
    ("agreement", "max"),
    ("agreement", "mean"),
    ("file_agreement", "max"),
    ("log_changed_lines", "median"),
)


def linear_values(
    progress: dict[str, dict[str, Any]],
    s: dict[tuple[str, str], float | None],
    key: str = "offline_features",
    relative: tuple[tuple[str, str], ...] = RELATIVE,
    weights: dict[str, float] | None = None,
    bias: float | None = None,
) -> dict[tuple[str, str], float | None]:
    """A linear score from the recorded features (``key``) and S, with the shipped weights."""
    if weights is None or bias is None:
        weights, bias, _ = shipped()
    out: dict[tuple[str, str], float | None] = {}
    for iid, p in progress.items():
        feats = p["baselines"][key]
        usable = {c: dict(f, s=s[(iid, c)] or 0.0) for c, f in feats.items() if f is not None}
        for name, how in relative:
            vals = sorted(r[name] for r in usable.values())
            ref = {"max": vals[-1], "mean": sum(vals) / len(vals), "median": vals[len(vals) // 2]}[
                how
            ]
            for r in usable.values():
                r[f"{name}_rel_{how}"] = r[name] - ref
        for c, f in feats.items():
            if f is None:
                out[(iid, c)] = None
            else:
                row = usable[c]
                out[(iid, c)] = bias + sum(w * row[k] for k, w in weights.items())
    return out


def content_values(
    progress: dict[str, dict[str, Any]], s: dict[tuple[str, str], float | None]
) -> dict[tuple[str, str], float | None]:
    """The offline_content score, with the weights of the shipped file read here."""
    shipped = json.loads(WEIGHTS_FILE.read_text())
    relative = (*RELATIVE, ("func_agreement", "max"))
    return linear_values(
        progress, s, "content_features", relative, shipped["weights"], shipped["bias"]
    )


@SHARES_DEMO_RUN
def test_every_number_of_the_report_recomputed_from_verdicts_and_labels(demo_run: Path) -> None:
    report = json.loads((demo_run / "report.json").read_text())
    mine = recompute(demo_run)
    progress = {r["instance_id"]: r for r in rows(demo_run / "progress.jsonl")}
    tasks = sorted(progress)
    assert report["counts"]["tasks"] == len(tasks) >= 3
    assert report["counts"]["candidates"] == len(mine["S"])
    assert report["counts"]["resolved"] == sum(mine["labels"].values())
    assert report["decisions"] == {
        d: mine["decision"][d] for d in ("accept", "review", "reject", "inconclusive")
    }

    verdicts = rows(demo_run / "verdicts.jsonl")
    assert report["verdicts"]["rows"] == len(verdicts)
    assert report["verdicts"]["origins"] == {
        o: sum(1 for v in verdicts if v["origin"] == o) for o in ("judged", "checked", "missing")
    }
    assert report["verdicts"]["missing_by_reason"] == dict(
        Counter(v["reason"] for v in verdicts if v["origin"] == "missing")
    )
    scored = [s for s in mine["S"].values() if s is not None]
    assert report["coverage"]["candidates_with_score"]["n"] == len(scored)

    def pools(
        values: dict[tuple[str, str], float | None],
    ) -> dict[str, tuple[list[Any], list[int]]]:
        out: dict[str, tuple[list[Any], list[int]]] = {}
        for iid in tasks:
            ids = [c["id"] for c in progress[iid]["candidates"]]
            out[iid] = ([values[(iid, c)] for c in ids], [mine["labels"][(iid, c)] for c in ids])
        return out

    rubric_pools = pools(mine["value"])
    empty = {
        (iid, c["id"]): c.get("empty", False) for iid in tasks for c in progress[iid]["candidates"]
    }
    sc = {  # an empty patch ranks last
        (iid, c): None if empty[(iid, c)] else v
        for iid in tasks
        for c, v in progress[iid]["baselines"]["self_consistency"].items()
    }
    random_pools = pools(dict.fromkeys(mine["value"], 0.0))
    offline = linear_values(progress, mine["S"])
    content = content_values(progress, mine["S"])
    # every selector but random ranks what fixes nothing last: empty, or no behaviour change
    nothing = {
        (iid, c)
        for iid in tasks
        for c, row in progress[iid]["baselines"]["guard"].items()
        if row["behaviour"] == "unchanged" or empty[(iid, c)]
    }
    assert nothing - {k for k, e in empty.items() if e}, "the demo has no-op candidates"

    def guarded(values: dict[tuple[str, str], float | None]) -> dict[Any, float | None]:
        return {k: None if k in nothing else v for k, v in values.items()}

    for name, pool in (
        ("offline_content", pools(guarded(content))),
        ("rubric", pools(guarded(mine["value"]))),
        ("self_consistency", pools(guarded(sc))),
        ("random", random_pools),
        ("offline", pools(guarded(offline))),
    ):
        got = report["selectors"][name]
        for k, value in got["best_at_k"].items():
            want = sum(expected_best(v, y, int(k)) for v, y in pool.values()) / len(pool)
            assert value == pytest.approx(want, abs=1e-9), (name, k)
            lo, hi = got["best_at_k_ci"][k]
            assert lo - 1e-9 <= value <= hi + 1e-9
    for k, value in report["oracle_pass_at_k"].items():
        want = 0.0
        for _, y in rubric_pools.values():
            n, c = len(y), sum(y)
            want += (
                1.0 if int(k) >= n and c else 1 - math.comb(n - c, int(k)) / math.comb(n, int(k))
            )
        assert value == pytest.approx(want / len(tasks))
    assert report["random_at_k"] == pytest.approx(
        sum(sum(y) / len(y) for _, y in rubric_pools.values()) / len(tasks)
    )
    # ROC-AUC and average precision of S over the candidates that have one (sklearn imported here:
    # at module level every test worker would pay its import while collecting)
    from sklearn.metrics import average_precision_score, roc_auc_score

    pairs = [(s, mine["labels"][key]) for key, s in mine["S"].items() if s is not None]
    rubric = report["selectors"]["rubric"]
    assert rubric["roc_auc"] == pytest.approx(
        roc_auc_score([y for _, y in pairs], [s for s, _ in pairs])
    )
    assert rubric["pr_auc"] == pytest.approx(
        average_precision_score([y for _, y in pairs], [s for s, _ in pairs])
    )
    assert rubric["scored_candidates"] == {
        "value": len(pairs) / len(mine["S"]),
        "n": len(pairs),
        "of": len(mine["S"]),
    }
    # realised Best@1: the label of the patch actually written to selections.jsonl
    selections = rows(demo_run / "selections.jsonl")
    assert [s["instance_id"] for s in selections] == tasks
    assert {s["model_name_or_path"] for s in selections} == {"agentic-rubrics/self_consistency"}
    by_patch = {}
    for ex in load_examples():
        for c in ex.task.candidates:
            by_patch[(ex.task.instance_id, c.patch)] = c
    picked = [by_patch[(s["instance_id"], s["model_patch"])] for s in selections]
    assert report["selectors"]["self_consistency"]["realised_best_at_1"] == pytest.approx(
        sum(bool(c.resolved) for c in picked) / len(tasks)
    )
    # the pick is a top-ranked candidate, never an empty patch
    for s, c in zip(selections, picked, strict=True):
        values = [
            sc[(s["instance_id"], x["id"])]
            for x in progress[s["instance_id"]]["candidates"]
            if sc[(s["instance_id"], x["id"])] is not None
        ]
        assert sc[(s["instance_id"], c.id)] == max(values) and c.patch.strip()
    md = (demo_run / "report.md").read_text()
    assert (
        "| K | tasks with ≥ K | self_consistency | offline_content | offline | rubric | random"
        " | oracle Pass@K | Random@K |" in md
    )
    assert "Flakiness: n/a" in md and "PR-AUC (average precision)" in md


@SHARES_DEMO_RUN
def test_the_report_says_where_the_primary_selectors_weights_came_from(
    demo_run: Path, tmp_path: Path
) -> None:
    evidence = selection_evidence()["selectors"]
    weights = json.loads((demo_run / "report.json").read_text())["selection"]["weights"]
    lite = evidence["self_consistency"]["lite"]
    assert weights["source"] == "none" and weights["figures"] == evidence["self_consistency"]
    said = weights["out_of_sample"]
    assert f"Best@16 {100 * lite['best_at_16']:.1f}" in said and "choose_default.py" in said
    assert "the no-model default: no other method passed the rule" in said
    md = (demo_run / "report.md").read_text()
    assert "Its weights: none, nothing is fitted" in md and said in md
    # shipped weights: where they came from, and the held-out figures of their fit, said as such
    copy = tmp_path / "copy"
    shutil.copytree(demo_run, copy)
    for first, source in (("offline_content", "shipped"), ("random", "none")):
        w = report_folder(copy, selectors=[first, "self_consistency"])["selection"]["weights"]
        assert w["source"] == source and w["figures"] == evidence[first], first
    assert "fitted on lite_candidates.jsonl.gz (200 instances)" in w_of(copy, "offline_content")
    assert "not the shipped weights themselves" in w_of(copy, "offline_content", "out_of_sample")


def w_of(folder: Path, first: str, key: str = "fitted_on") -> str:
    """What the report says of the primary selector's weights, ``first`` leading."""
    return str(report_folder(folder, selectors=[first, "random"])["selection"]["weights"][key])


@SHARES_DEMO_RUN
def test_a_report_rerun_reads_its_intervals_back(demo_run: Path, tmp_path: Path) -> None:
    """Intervals are computed once; a rerun on the unchanged folder computes none (the cache is not
    rewritten) and gives the same report; changed inputs compute afresh."""
    import shutil

    from agentic_rubrics.report.build import INTERVALS_FILE, build_report_and_results
    from agentic_rubrics.runfolder.folder import RunFolder

    folder = tmp_path / "copy"
    shutil.copytree(demo_run, folder)
    cache = folder / INTERVALS_FILE
    first = json.loads((folder / "report.json").read_text())
    before = cache.stat()
    again = build_report_and_results(RunFolder(folder))[0]
    after = cache.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    assert again.to_json()["selectors"] == first["selectors"]
    cached = json.loads(cache.read_text())["intervals"]
    assert len(cached) == len(set(cached)) >= 4 * 4  # one per selector and statistic at least
    other = build_report_and_results(RunFolder(folder), n_resamples=60)[0]
    assert cache.stat().st_ino != before.st_ino  # new intervals were remembered
    assert other.selectors["rubric"].roc_auc_ci != first["selectors"]["rubric"]["roc_auc_ci"]
    cache.unlink()  # no cache: computed again, the same numbers
    assert (
        build_report_and_results(RunFolder(folder))[0].to_json()["selectors"] == first["selectors"]
    )


@SHARES_DEMO_RUN
def test_the_report_seed_is_the_bootstrap_seed(demo_run: Path, tmp_path: Path) -> None:
    """``report --seed`` resamples the tasks with that seed: the pure-Python bootstrap over the same
    per-task values gives the same interval, and another seed another one."""
    import shutil

    from agentic_rubrics.rank import metrics
    from agentic_rubrics.report.build import build_report_and_results
    from agentic_rubrics.runfolder.folder import RunFolder

    folder = tmp_path / "copy"
    shutil.copytree(demo_run, folder)
    intervals = {}
    for seed in (0, 7):
        report, results = build_report_and_results(RunFolder(folder), seed=seed)
        labelled = [t for t in results if t.labelled]
        per_task = []
        for t in labelled:
            ids = t.labelled_ids
            values = [t.rankings["rubric"][c] for c in ids]
            per_task.append(
                metrics.best_at_ks(values, [int(bool(t.labels[c])) for c in ids], [2])[0]
            )
        want = metrics.bootstrap_ci(per_task, metrics.mean, n_resamples=200, seed=seed)
        got = report.selectors["rubric"].best_at_k_ci["2"]
        assert want is not None and got is not None
        assert got == pytest.approx(want, abs=1e-12), seed
        intervals[seed] = got
    assert intervals[0] != intervals[7]


@SHARES_DEMO_RUN
def test_a_negative_seed_is_refused_with_its_source(
    demo_run: Path, tasks_file: Path, tmp_path: Path
) -> None:
    """A seed below 0 (the bootstrap's generator takes none) is refused before any work, naming where
    it came from: the command line, the configuration, or an older folder's config.json."""
    import shutil

    runner = CliRunner()
    folder = tmp_path / "copy"
    shutil.copytree(demo_run, folder)
    before = (folder / "report.json").read_bytes()
    done = runner.invoke(app, ["report", "--out", str(folder), "--seed=-1", "-q"])
    assert (
        done.exit_code == 2 and "--seed is -1: expected a whole number of 0 or more" in done.output
    )
    recorded = json.loads((folder / "config.json").read_text())
    recorded["config"]["seed"] = -1
    (folder / "config.json").write_text(json.dumps(recorded))
    done = runner.invoke(app, ["report", "--out", str(folder), "-q"])
    assert done.exit_code == 2 and "config.json's seed is -1" in done.output
    assert (folder / "report.json").read_bytes() == before  # nothing half-written
    assert runner.invoke(app, ["report", "--out", str(folder), "--seed=3", "-q"]).exit_code == 0
    done = runner.invoke(app, ["run", "--tasks", str(tasks_file), "--out", str(tmp_path / "new"),
                               "--seed", "-1", "-q"])  # fmt: skip
    assert done.exit_code == 2 and "seed: Input should be greater than or equal to 0" in done.output
    assert not (tmp_path / "new" / "verdicts.jsonl").exists()


@SHARES_DEMO_RUN
def test_records_hold_no_contents_or_environment(demo_run: Path) -> None:
    secrets = [
        v for k, v in os.environ.items() if len(v) >= 12 and k not in ("PATH", "HOME", "PWD")
    ]
    examples = load_examples()
    snippets = [
        c.patch.splitlines()[-1] for ex in examples for c in ex.task.candidates if c.patch.strip()
    ]
    snippets += [ex.task.problem_statement.splitlines()[0] for ex in examples]
    scores = rows(demo_run / "scores.jsonl")
    report = json.loads((demo_run / "report.json").read_text())
    assert len(scores) == report["counts"]["candidates"]
    assert Counter(r["decision"] for r in scores) == {
        k: v for k, v in report["decisions"].items() if v
    }
    picked = Counter(name for r in scores for name in r["selected_by"])
    assert all(picked[name] == report["counts"]["tasks"] for name in report["selectors"])
    for name in ("verdicts.jsonl", "progress.jsonl", "report.json", "config.json", "scores.jsonl"):
        text = (demo_run / name).read_text()
        for s in secrets:
            assert s not in text, name
        for snippet in snippets:
            if len(snippet.strip()) > 20:
                assert snippet not in text, (name, snippet)
    row = rows(demo_run / "verdicts.jsonl")[0]
    assert set(row) == {
        "schema",
        "instance_id",
        "candidate_id",
        "item_id",
        "axis",
        "weight",
        "origin",
        "value",
        "reason",
        "repeat",
    }
    p = rows(demo_run / "progress.jsonl")[0]
    assert (
        p["judge"] == "checks"
        and p["rubric"]["hash"].startswith("sha256:")
        and p["base_commit"].startswith("tree-")
    )


def test_evaluation_fields_are_never_read(tasks_file: Path, tmp_path: Path) -> None:
    records = [r for _, r in read_jsonl(tasks_file)]
    loaded, stripped = [], []
    for r in records:
        full = dict(
            r,
            gold_patch="diff --git a/x b/x\n",
            test_patch="+assert 0\n",
            hints_text="it is in x",
            FAIL_TO_PASS=["t"],
            PASS_TO_PASS=["u"],
            difficulty="hard",
        )
        loaded.append(full)
        bare = dict(r.items())
        bare["candidates"] = [{"id": c["id"], "patch": c["patch"]} for c in r["candidates"]]
        stripped.append(bare)
    a, b = tmp_path / "full.jsonl", tmp_path / "bare.jsonl"
    a.write_text("".join(json.dumps(r) + "\n" for r in loaded))
    b.write_text("".join(json.dumps(r) + "\n" for r in stripped))
    run(a, tmp_path / "ra", FAST, stages=("explore", "judge"))
    run(b, tmp_path / "rb", FAST, stages=("explore", "judge"))
    assert sorted_rows(tmp_path / "ra" / "verdicts.jsonl") == sorted_rows(
        tmp_path / "rb" / "verdicts.jsonl"
    )
    for rubric in (tmp_path / "ra" / "rubrics").glob("*/rubrics.yaml"):
        twin = tmp_path / "rb" / "rubrics" / rubric.parent.name / "rubrics.yaml"
        assert rubric.read_bytes() == twin.read_bytes()


@SHARES_DEMO_RUN
def test_stages_one_by_one_equal_the_whole_run(
    demo_run: Path, tasks_file: Path, tmp_path: Path
) -> None:
    runner = CliRunner()
    out = tmp_path / "staged"
    cfg = tmp_path / "same.yaml"
    cfg.write_text("bootstrap_resamples: 200\n")  # the demo run's settings
    common = ["--tasks", str(tasks_file), "--out", str(out), "--config", str(cfg)]
    r1 = runner.invoke(app, ["judge", *common])
    assert r1.exit_code == 2 and "run 'explore' first" in r1.output
    assert runner.invoke(app, ["explore", *common]).exit_code == 0
    assert not (out / "verdicts.jsonl").exists() and len(list((out / "rubrics").iterdir())) == len(
        load_examples()
    )
    assert runner.invoke(app, ["judge", *common]).exit_code == 0
    rep = runner.invoke(app, ["report", "--out", str(out), "--tasks", str(tasks_file)])
    assert rep.exit_code == 0 and "# agentic-rubrics report" in rep.output
    assert json.loads((out / "report.json").read_text()) == json.loads(
        (demo_run / "report.json").read_text()
    )
    assert (out / "selections.jsonl").read_text() == (demo_run / "selections.jsonl").read_text()


def test_resuming_with_another_configuration_is_refused(tasks_file: Path, tmp_path: Path) -> None:
    two = tmp_path / "two.jsonl"  # two tasks are enough to refuse and to restart
    two.write_text("".join(tasks_file.read_text().splitlines(keepends=True)[:2]))
    tasks_file, out = two, tmp_path / "r"
    run(tasks_file, out, FAST, stages=("explore",))
    other = RunConfig.model_validate({"bootstrap_resamples": 50, "explorer": {"max_turns": 5}})
    with pytest.raises(ConfigError, match="started with another configuration"):
        run(tasks_file, out, other, stages=("explore",))
    runner = CliRunner()
    refused = runner.invoke(
        app, ["run", "--tasks", str(tasks_file), "--out", str(out), "--max-turns", "5", "-q"]
    )
    assert refused.exit_code == 2 and "--restart" in refused.output
    ok = runner.invoke(
        app,
        [
            "run",
            "--tasks",
            str(tasks_file),
            "--out",
            str(out),
            "--max-turns",
            "5",
            "--restart",
            "-q",
        ],
    )
    assert ok.exit_code == 0, ok.output
    assert json.loads((out / "config.json").read_text())["config"]["explorer"]["max_turns"] == 5


@SHARES_DEMO_RUN
def test_reused_rubrics_give_the_same_verdicts_and_a_broken_one_fails_honestly(
    demo_run: Path, tasks_file: Path, tmp_path: Path
) -> None:
    reused = tmp_path / "reused"
    run(
        tasks_file,
        reused,
        RunConfig(bootstrap_resamples=50, plots=False, rubrics_dir=str(demo_run / "rubrics")),
    )
    assert sorted_rows(reused / "verdicts.jsonl") == sorted_rows(demo_run / "verdicts.jsonl")
    # break one rubric: its task's candidates become inconclusive, never 0
    broken_dir = tmp_path / "rubrics"
    for src in (demo_run / "rubrics").glob("*/rubrics.yaml"):
        dst = broken_dir / src.parent.name / "rubrics.yaml"
        dst.parent.mkdir(parents=True)
        dst.write_text(src.read_text())
    victim = sorted(broken_dir.iterdir())[0]
    (victim / "rubrics.yaml").write_text("metadata: [\n")
    out = tmp_path / "broken"
    report = run(
        tasks_file, out, RunConfig(bootstrap_resamples=50, plots=False, rubrics_dir=str(broken_dir))
    )
    assert report is not None
    assert report["rubrics"]["failed"] == {"rubric_invalid": 1}
    task = next(t for t in report["tasks"] if t["instance_id"] == victim.name)
    (example,) = [ex for ex in load_examples() if ex.task.instance_id == victim.name]
    empties = sum(1 for c in example.task.candidates if not c.patch.strip())
    expected = {"inconclusive": task["candidates"] - empties} | (
        {"reject": empties} if empties else {}
    )
    assert task["decisions"] == expected
    assert not any(v["instance_id"] == victim.name for v in rows(out / "verdicts.jsonl"))


def test_killed_run_resumes_without_redoing_finished_tasks(
    tasks_file: Path, tmp_path: Path
) -> None:
    # the 10 bundled tasks, one at a time: the kill lands after the third with seven still to do
    many = [dict(r, instance_id=f"{r['instance_id']}-0") for _, r in read_jsonl(tasks_file)]
    assert len(many) >= 10
    big = tmp_path / "many.jsonl"
    big.write_text("".join(json.dumps(r) + "\n" for r in many))
    out = tmp_path / "killed"
    cfg = tmp_path / "cfg.yaml"
    cfg.write_text("bootstrap_resamples: 50\ntask_concurrency: 1\nplots: false\n")
    cmd = [
        str(Path(sys.executable).parent / "agentic-rubrics"),
        "run",
        "--tasks",
        str(big),
        "--out",
        str(out),
        "--config",
        str(cfg),
        "-q",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    progress = out / "progress.jsonl"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if progress.exists() and progress.read_text().count("\n") >= 3:
            break
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = progress.read_text()
    done_before = [json.loads(line)["instance_id"] for line in before.splitlines() if line.strip()]
    assert 3 <= len(done_before) < len(many), "the kill must land mid-run"
    stamps = {i: (out / "rubrics" / i / "status.json").stat().st_mtime_ns for i in done_before}
    # the same command resumes it and makes a fresh run, in this process (no start-up to pay again)
    resumed = CliRunner().invoke(app, cmd[1:])
    assert resumed.exit_code == 0, resumed.output
    after = progress.read_text()
    assert after.startswith(before.rsplit("\n", 1)[0])  # finished rows kept as they were
    ids = [json.loads(line)["instance_id"] for line in after.splitlines()]
    assert sorted(ids) == sorted(r["instance_id"] for r in many) and len(ids) == len(set(ids))
    assert {
        i: (out / "rubrics" / i / "status.json").stat().st_mtime_ns for i in done_before
    } == stamps
    fresh = tmp_path / "fresh"
    again = CliRunner().invoke(app, [*cmd[1:5], str(fresh), *cmd[6:]])
    assert again.exit_code == 0, again.output
    assert json.loads((out / "report.json").read_text()) == json.loads(
        (fresh / "report.json").read_text()
    )
    key = lambda r: (r["instance_id"], r["candidate_id"], r["item_id"])  # noqa: E731
    assert sorted(rows(out / "verdicts.jsonl"), key=key) == sorted(
        rows(fresh / "verdicts.jsonl"), key=key
    )


def test_demo_command_names_a_fresh_folder_and_prints_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(app, ["demo", "--config", str(_fast_config(tmp_path))])
    assert result.exit_code == 0, result.output
    assert "# agentic-rubrics report" in result.output and "## Best@K" in result.output
    (folder,) = (tmp_path / "runs").iterdir()
    assert (
        folder.name.startswith("demo-")
        and f"run folder: {Path('runs') / folder.name}" in result.output
    )
    assert (folder / "report.json").exists() and (folder / "selections.jsonl").exists()
    second = CliRunner().invoke(app, ["demo", "--config", str(_fast_config(tmp_path)), "-q"])
    assert second.exit_code == 0 and len(list((tmp_path / "runs").iterdir())) == 2


def _fast_config(tmp_path: Path) -> Path:
    path = tmp_path / "fast.yaml"
    path.write_text("bootstrap_resamples: 20\n")
    return path


def test_bad_inputs_fail_with_file_line_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "tasks.jsonl"
    bad.write_text(
        '{"instance_id": "a", "problem_statement": "x", "candidates": []}\n{"instance_id": "b"}\n'
    )
    result = CliRunner().invoke(app, ["run", "--tasks", str(bad), "--out", str(tmp_path / "o")])
    assert result.exit_code == 2 and f"{bad}:2: problem_statement: Field required" in result.output
    bad.write_text(
        '{"instance_id": "a", "problem_statement": "x", "candidates": [{"patch": ""}]}\n'
    )
    result = CliRunner().invoke(app, ["run", "--tasks", str(bad), "--out", str(tmp_path / "o")])
    assert f"{bad}:1: candidates[0].id: missing required field" in result.output
    bad.write_text("not json\n")
    assert (
        "invalid JSON"
        in CliRunner()
        .invoke(app, ["run", "--tasks", str(bad), "--out", str(tmp_path / "o")])
        .output
    )
    cfg = tmp_path / "c.yaml"
    cfg.write_text("judge: {kind: telepathy}\n")
    result = CliRunner().invoke(
        app, ["run", "--tasks", str(bad), "--out", str(tmp_path / "o"), "--config", str(cfg)]
    )
    assert result.exit_code == 2 and f"{cfg}: judge.kind" in result.output


@SHARES_DEMO_RUN
def test_the_public_functions_take_paths_as_strings(demo_run: Path, tmp_path: Path) -> None:
    """A notebook passes "runs/x", not Path("runs/x"): each of these raised AttributeError or
    TypeError on a str."""
    import agentic_rubrics as ar
    from agentic_rubrics.datasets.bundled import EXAMPLES_DIR
    from agentic_rubrics.pipeline.config import load_config

    tasks = str(ar.write_tasks_jsonl(str(tmp_path / "tasks.jsonl"), root=str(EXAMPLES_DIR)))
    assert len(ar.load_examples(str(EXAMPLES_DIR))) == 10
    (tmp_path / "c.yaml").write_text("seed: 3\n")
    assert load_config(str(tmp_path / "c.yaml")).seed == 3
    assert len(ar.load_tasks(tasks)) == 10
    folder = ar.RunFolder(str(demo_run))
    assert folder.root == demo_run and folder.config()["config_hash"]
    (rubric,) = list(demo_run.glob("rubrics/*/rubrics.yaml"))[:1]
    assert ar.load_rubric(str(rubric))[0].items()
    copy = tmp_path / "copy"
    shutil.copytree(demo_run, copy)
    assert ar.report_folder(str(copy), tasks_file=tasks).counts.tasks == 10
    assert ar.audit_items(str(copy)).config_hash == ar.compare_methods(str(copy)).config_hash
    one = tmp_path / "one.jsonl"
    one.write_text(Path(tasks).read_text().splitlines(keepends=True)[0])
    again = ar.run(str(one), str(tmp_path / "again"), FAST)
    assert again is not None and again.counts.candidates == 15
