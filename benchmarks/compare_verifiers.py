"""Every verifier and baseline on the same instances and the same candidates, with the cost table.

    python benchmarks/compare_verifiers.py --out benchmarks/results/compare_verifiers
    python benchmarks/compare_verifiers.py --tests-from-hidden --out /tmp/hidden   # the execution check

One run folder (``DIR/run``): ``agentic-rubrics run --explorer agent --verifiers rubric,tests,similarity``
with the selectors random, self_consistency, patch_classifier, rubric, tests, similarity and hybrid; the
oracle is the labels' Pass@K. Without ``--model`` the shipped fake model plays every role (explorer,
test writer, proxy author, judge, similarity judge, classifier) over the project's loopback server, so
the comparison runs offline. Written: ``DIR/results.json``, ``DIR/results.md`` and ``DIR/best_at_k.png``.

Every figure is the run's own: Best@K with its 95% interval, ROC-AUC and coverage from report.json
(``selectors``, ``oracle_pass_at_k``), costs from report.json's ``cost`` (model spend by phase, the tests
verifier's CPU-seconds) and the artifacts' records (agent turns: the rubric explorer's trajectory,
``tests/<id>/status.json``, ``proxies/<id>/proxy.json``). Nothing is recomputed here.

``--tests-from-hidden`` gives each bundled task's ``hidden_tests/`` as ``--tests DIR``: the tests
verifier's pass/fail must then equal ``labels.json`` for every candidate and its Best@K the oracle's
(checked; exit 1 otherwise).
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from compare_table import METHODS, markdown, plot_best_at_k

from agentic_rubrics.datasets.bundled import (
    EXAMPLES_DIR,
    example_folders,
    load_examples,
    write_tasks_jsonl,
)
from agentic_rubrics.exceptions import DataError
from agentic_rubrics.runfolder.folder import RunFolder

SELECTORS = "rubric,random,self_consistency,patch_classifier,tests,similarity,hybrid"
ARTIFACT_PHASES = {"rubric": ("explore",), "tests": ("tests_writer",), "similarity": ("proxy",)}
"""The model phases that write each verifier's artifact, once per task."""
GRADING_PHASES = {
    "rubric": ("judge",),
    "similarity": ("similarity",),
    "patch_classifier": ("classifier",),
}
"""The model phases that grade each candidate."""
USES = {
    "random": (),
    "oracle": (),
    "self_consistency": (),
    "patch_classifier": ("patch_classifier",),
    "rubric": ("rubric",),
    "tests": ("tests",),
    "similarity": ("similarity",),
    "hybrid": ("rubric", "tests"),
}
"""The verifiers (artifact and grading) each method's score needs."""
K_TOTAL = 16


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise DataError(f"{path}: not readable JSON ({exc})") from exc


def _number(record: Any, *keys: str) -> float:
    """``record[k1][k2]...`` as a number; 0 when absent (a phase that made no call)."""
    for key in keys:
        record = record.get(key) if isinstance(record, dict) else None
    if record is None:
        return 0.0
    if isinstance(record, bool) or not isinstance(record, int | float):
        raise DataError(f"report.json: cost field {'.'.join(keys)} is not a number: {record!r}")
    return float(record)


def _turns(run: Path, ids: list[str]) -> dict[str, float]:
    """Mean agent turns per task of each verifier's artifact writer (0 for a given or static one)."""
    folder = RunFolder(run)
    totals = {"rubric": 0.0, "tests": 0.0, "similarity": 0.0}
    for iid in ids:
        trajectory = _json(folder.trajectory_path(iid)) or {}
        tests = folder.artifact_status("tests", iid)
        proxy = _json(folder.artifact_dir("proxies", iid) / "proxy.json") or {}
        for name, turns in (
            ("rubric", trajectory.get("turns")),
            ("tests", tests.turns if tests is not None else None),
            ("similarity", proxy.get("turns")),
        ):
            if turns is not None and (isinstance(turns, bool) or not isinstance(turns, int)):
                raise DataError(f"{run}: {name} turns of {iid} are not an integer: {turns!r}")
            totals[name] += turns or 0
    return {name: total / max(len(ids), 1) for name, total in totals.items()}


def cost_table(report: dict[str, Any], turns: dict[str, float]) -> dict[str, dict[str, Any]]:
    """Per method: artifact cost per task, grading cost per candidate, and the total at K = 16."""
    tasks = max(int(report["counts"]["tasks"]), 1)
    candidates = max(int(report["counts"]["candidates"]), 1)
    cost = report["cost"]

    def spend(names: tuple[str, ...], per: int) -> dict[str, float]:
        return {
            key: sum(_number(cost, "by_phase", p, key) for p in names) / per
            for key in ("usd", "estimated_usd", "calls")
        }

    verifiers: dict[str, dict[str, Any]] = {}
    for name in ("rubric", "tests", "similarity", "patch_classifier"):
        artifact = spend(ARTIFACT_PHASES.get(name, ()), tasks)
        artifact["agent_turns"] = turns.get(name, 0.0)
        grading = spend(GRADING_PHASES.get(name, ()), candidates)
        artifact["cpu_seconds"] = grading["cpu_seconds"] = 0.0
        if name == "tests":
            artifact["cpu_seconds"] = _number(cost, "execution", "validation_cpu_seconds") / tasks
            grading["cpu_seconds"] = _number(cost, "execution", "cpu_seconds_per_candidate")
        verifiers[name] = {"artifact_per_task": artifact, "grading_per_candidate": grading}
    out: dict[str, dict[str, Any]] = {}
    for method in METHODS:
        parts = [verifiers[v] for v in USES[method]]
        keys = ("usd", "estimated_usd", "cpu_seconds")
        artifact = {
            k: sum(p["artifact_per_task"][k] for p in parts) for k in (*keys, "agent_turns")
        }
        grading = {k: sum(p["grading_per_candidate"][k] for p in parts) for k in keys}
        total = {k: artifact[k] + K_TOTAL * grading[k] for k in keys}
        out[method] = {
            "artifact_per_task": artifact,
            "grading_per_candidate": grading,
            f"total_per_task_at_k{K_TOTAL}": total,
        }
    return out


def figures(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Each method's Best@K (with intervals), ROC-AUC and coverage, as report.json gives them."""
    selectors = report["selectors"]
    out: dict[str, dict[str, Any]] = {}
    for method in METHODS:
        if method == "oracle":  # the labels' Pass@K: no interval, no ranking to score
            labelled = report["counts"]["candidates_labelled"]
            out[method] = {
                "source": "report.json oracle_pass_at_k",
                "best_at_k": report["oracle_pass_at_k"],
                "best_at_k_ci": dict.fromkeys(report["oracle_pass_at_k"]),
                "realised_best_at_1": None,
                "roc_auc": None,
                "roc_auc_ci": None,
                "coverage": {"n": labelled, "of": report["counts"]["candidates"]},
            }
            continue
        if method not in selectors:
            raise DataError(f"report.json: no figures for the selector {method!r}")
        s = selectors[method]
        out[method] = {
            "source": f"report.json selectors.{method}",
            **{k: s.get(k) for k in ("best_at_k", "best_at_k_ci", "realised_best_at_1")},
            **{k: s.get(k) for k in ("roc_auc", "roc_auc_ci")},
            "coverage": s.get("scored_candidates"),
        }
    return out


def task_lines(tasks: Path) -> list[tuple[int, str, list[str]]]:
    """Each task of the tasks file: its line, its instance id and its candidates' ids."""
    out = []
    for number, line in enumerate(tasks.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip():
            continue
        try:
            task = json.loads(line)
            iid, ids = task["instance_id"], [str(c["id"]) for c in task["candidates"]]
        except (ValueError, TypeError, KeyError) as exc:
            raise DataError(
                f"{tasks}:{number}: not a task with an instance_id and candidates ({exc!r})"
            ) from exc
        out.append((number, str(iid), ids))
    return out


def hidden_check(run: Path, report: dict[str, Any], tasks: Path) -> dict[str, Any]:
    """The tests verifier given the hidden tests: its pass/fail for every candidate of the tasks file
    against labels.json, its Best@K against the oracle's."""
    labels = {
        e.task.instance_id: {c.id: c.resolved for c in e.task.candidates if c.resolved is not None}
        for e in load_examples()
    }
    progress = RunFolder(run).progress()
    disagree = []
    checked = 0
    for _, iid, ids in task_lines(tasks):
        row = progress.get(iid)
        rates = ((row.baselines.get("tests") or {}).get("pass_rate") or {}) if row else {}
        for cid in ids:
            checked += 1
            rate, resolved = rates.get(cid), labels.get(iid, {}).get(cid)
            if rate is None or resolved is None or (rate == 1.0) != resolved:
                disagree.append({"instance_id": iid, "candidate_id": cid, "pass_rate": rate})
    tests = report["selectors"]["tests"]["best_at_k"]
    oracle = report["oracle_pass_at_k"]
    off = {k: (tests.get(k), v) for k, v in oracle.items() if abs((tests.get(k) or -1) - v) > 1e-9}
    # the oracle's pick among all of a task's candidates solves it when any candidate is resolved
    pools = [[labels.get(iid, {}).get(c) for c in ids] for _, iid, ids in task_lines(tasks)]
    solvable = sum(any(pool) for pool in pools) / max(len(pools), 1)
    realised = report["selectors"]["tests"]["realised_best_at_1"]
    return {
        "candidates_checked": checked,
        "pass_fail_disagrees_with_labels": disagree,
        "best_at_k_differs_from_oracle": off,
        "tests_best_at_1": tests.get("1"),
        "oracle_best_at_1": oracle.get("1"),
        "tests_realised_best_at_1": realised,
        "oracle_realised_best_at_1": solvable,
        "ok": checked > 0 and not disagree and not off and abs(realised - solvable) < 1e-9,
    }


def given_hidden_tests(tasks: Path, dest: Path) -> Path:
    """``dest/<instance_id>/``: each task's bundled hidden_tests/ (every task must be a bundled one)."""
    bundled = {p.name for p in example_folders()}
    for number, iid, _ in task_lines(tasks):
        if iid not in bundled or not (EXAMPLES_DIR / iid / "hidden_tests").is_dir():
            raise DataError(f"{tasks}:{number}: {iid!r} is not a bundled task with hidden_tests/")
        shutil.copytree(EXAMPLES_DIR / iid / "hidden_tests", dest / iid, dirs_exist_ok=True)
    return dest


def run_all(args: argparse.Namespace, tasks: Path, run: Path) -> None:
    """The one run folder every method is measured in."""
    settings = args.out / "settings.yaml"
    settings.write_text(f"bootstrap_resamples: {args.bootstrap}\nplots: false\n", encoding="utf-8")
    command = [sys.executable, "-c", "from agentic_rubrics.cli import main; main()", "run",
               "--tasks", str(tasks), "--out", str(run), "--config", str(settings),
               "--explorer", "agent", "--verifiers", "rubric,tests,similarity",
               "--selectors", SELECTORS, "--test-reruns", str(args.test_reruns), "--quiet"]  # fmt: skip
    if args.tests_from_hidden:
        command += ["--tests", str(given_hidden_tests(tasks, args.out / "hidden_tests"))]
    with ExitStack() as stack:
        if args.model:
            command += ["--model", args.model] + (
                ["--api-base", args.api_base] * bool(args.api_base)
            )
        else:
            from agentic_rubrics.testing import LoopbackServer, fake_model

            server = stack.enter_context(LoopbackServer(fake_model()))
            command += ["--model", "openai/fake", "--api-base", server.url]
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tasks", type=Path, help="tasks JSONL (default: the bundled tasks)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--tests-from-hidden", action="store_true")
    parser.add_argument("--model", help="a real model for every role (default: the shipped fake)")
    parser.add_argument("--api-base")
    parser.add_argument("--bootstrap", type=int, default=1000, help="resamples of the intervals")
    parser.add_argument("--test-reruns", type=int, default=1)
    args = parser.parse_args(argv)
    try:
        return _compare(args)
    except DataError as exc:
        print(f"compare_verifiers: {exc}", file=sys.stderr)
        return 2


def _compare(args: argparse.Namespace) -> int:
    args.out.mkdir(parents=True, exist_ok=True)
    tasks = args.tasks or write_tasks_jsonl(args.out / "tasks.jsonl")
    run = args.out / "run"
    run_all(args, tasks, run)
    report = _json(run / "report.json")
    if not isinstance(report, dict):
        raise SystemExit(f"{run / 'report.json'}: missing or not a JSON object")
    ids = [t["instance_id"] for t in report["tasks"]]
    results: dict[str, Any] = {
        "schema": "compare-verifiers/1",
        "model": args.model or "the shipped fake (scripted: figures measure the machinery)",
        "tests_from_hidden": args.tests_from_hidden,
        "tasks": report["counts"]["tasks"],
        "candidates": report["counts"]["candidates"],
        "max_pool": report["counts"]["max_pool"],
        "methods": figures(report),
        "cost": cost_table(report, _turns(run, ids)),
        "hybrid_weights": (report.get("fitted_weights") or {}).get("hybrid"),
    }
    if args.tests_from_hidden:
        results["hidden_check"] = hidden_check(run, report, tasks)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    (args.out / "results.md").write_text(markdown(results), encoding="utf-8")
    plot_best_at_k(results, args.out / "best_at_k.png")
    print(f"wrote {args.out / 'results.json'}, results.md, best_at_k.png")
    check = results.get("hidden_check")
    if check is not None:
        print(
            f"hidden tests as the artifact: {check['candidates_checked']} candidates, "
            f"{len(check['pass_fail_disagrees_with_labels'])} disagree with labels.json; tests "
            f"Best@1 {check['tests_best_at_1']} vs oracle {check['oracle_best_at_1']}, Best@K "
            f"{'equals' if not check['best_at_k_differs_from_oracle'] else 'differs from'} the"
            f" oracle's; its pick among all candidates solves {check['tests_realised_best_at_1']}"
            f" of the tasks, the oracle's {check['oracle_realised_best_at_1']}"
        )
        return 0 if check["ok"] else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
