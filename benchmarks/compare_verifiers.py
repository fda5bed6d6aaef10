"""Every verifier and baseline on the same instances and the same candidates, with the cost table.

    python benchmarks/compare_verifiers.py --out benchmarks/results/compare_verifiers
    python benchmarks/compare_verifiers.py --tests-from-hidden --out /tmp/hidden   # the execution check
    python benchmarks/compare_verifiers.py --tasks my_tasks.jsonl --out /tmp/mine  # your own tasks

One run folder (``DIR/run``): ``agentic-rubrics run --explorer agent --verifiers rubric,tests,similarity``
with the selectors random, self_consistency, patch_classifier, rubric, tests, similarity and hybrid (those
the verifiers given allow); the oracle is the labels' Pass@K. Without ``--model`` the shipped fake model
plays every role (explorer, test writer, proxy author, judge, similarity judge, classifier) over the
project's loopback server, on the bundled tasks or any tasks file, so the comparison runs offline.
Written: ``DIR/results.json``, ``DIR/results.md``, ``DIR/best_at_k.png``, and the run folder's own
``comparison.json`` and ``comparison.md``.

``--tasks FILE`` is the tasks JSONL of docs/spec.md (labels: ``resolved`` per candidate; a task without
any counts in no figure, and how many is said); repositories come as in any run (a task's
``repo_path``, or ``--repo-url``/``--repo-cache``). The run's options a user needs are passed through
to ``agentic-rubrics run`` as they are (``--help`` lists them); the API key is read from
``AGENTIC_RUBRICS_API_KEY`` by the run itself, never put on a command line.

The tables are :func:`agentic_rubrics.compare_methods`'s — what ``agentic-rubrics compare RUN`` writes
from any reported run folder — so the benchmark and the command cannot disagree: Best@K with its 95%
interval, ROC-AUC and coverage from report.json, costs from its spend by phase, the tests verifier's
CPU-seconds and the artifacts' status files (agent turns). Nothing is recomputed here.

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

from compare_table import markdown, plot_best_at_k

from agentic_rubrics.datasets.bundled import (
    EXAMPLES_DIR,
    example_folders,
    load_examples,
    write_tasks_jsonl,
)
from agentic_rubrics.exceptions import AgenticRubricsError, DataError
from agentic_rubrics.report.method_comparison import compare_methods
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.types import Task

SELECTORS = {
    "rubric": ("rubric",),
    "random": (),
    "self_consistency": (),
    "patch_classifier": (),
    "tests": ("tests",),
    "similarity": ("similarity",),
    "hybrid": ("rubric", "tests"),
}
"""The selectors of the run, the first the primary one, each with the verifiers it needs."""
PASSED = {
    "--model": "a real model for every role (default: the shipped fake over the loopback server)",
    "--judge-model": "the judge's model (overrides --model)",
    "--explorer-model": "the explorer's and the writers' model (overrides --model)",
    "--api-base": "an OpenAI-compatible server URL for --model",
    "--explorer": "static, agent or issue-only (default: agent)",
    "--sandbox": "auto, bubblewrap, local-copy, swerex-local, swerex-docker or swerex-modal",
    "--repo-url": "where a task without repo_path gets its repository ({repo}, {owner}, {name}; none)",
    "--repo-cache": "folder of fetched repositories",
    "--rubrics": "reuse DIR/<instance_id>/rubrics.yaml",
    "--tests": "reuse DIR/<instance_id>/ as the test script",
    "--proxies": "reuse DIR/<instance_id>/proxy.diff as the proxy patch",
    "--test-reruns": "extra runs of each candidate's tests (default: 1)",
    "--test-python": "the Python (with pytest) the tests run with",
    "--test-env-spec": "venv specs by owner/name[@version] (env-check's --env-spec)",
    "--test-env-cache": "where built venvs are kept",
    "--test-docker": "run the tests in docker: swebench, local (build-env's images) or a JSON file",
    "--max-turns": "the agents' turn budget",
    "--max-cost": "stop starting model calls after this many dollars",
    "--timeout": "seconds per model call",
    "--llm-concurrency": "model calls in flight at once",
    "--llm-processes": "auto, N or 0: worker processes for litellm",
    "--repeats": "judge each candidate R times (majority verdict)",
    "--seed": "tie-break, shuffle and bootstrap seed",
}
"""The options of ``agentic-rubrics run`` passed through as given (its ``--help`` says more)."""
FLAGS = {
    "--unsafe-local-sandbox": "let a model's commands run unisolated here",
    "--restart": "discard DIR/run's results instead of resuming",
}
"""The flags passed through."""
ROLES = ("--model", "--judge-model", "--explorer-model")
"""Any of these given: a real model; none: the shipped fake in every role."""


def task_lines(tasks: Path) -> list[tuple[int, Task]]:
    """Each task of the tasks file with its line, validated as a run reads it (a bad line, a field of
    another type, a repeated id or a ``repo_path`` that is no folder: refused with file:line)."""
    loaded = load_tasks(tasks)
    lines = [number for number, _ in read_jsonl(tasks)]  # the records load_tasks read, in order
    out = list(zip(lines, loaded, strict=True))
    for number, task in out:
        if task.repo_path and not Path(task.repo_path).is_dir():
            raise DataError(f"{tasks}:{number}: repo_path {task.repo_path!r} is not a folder")
    return out


def unlabelled(tasks: Path, lines: list[tuple[int, Task]]) -> int:
    """Tasks with no labelled candidate (they count in no figure); none labelled at all: refused."""
    without = sum(1 for _, t in lines if all(c.resolved is None for c in t.candidates))
    if without == len(lines):
        raise DataError(
            f"{tasks}: no candidate has a label (resolved: true or false), and every figure of the"
            " comparison rests on labels"
        )
    return without


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
    pools = []
    for _, task in task_lines(tasks):
        iid, ids = task.instance_id, [c.id for c in task.candidates]
        row = progress.get(iid)
        rates = ((row.baselines.get("tests") or {}).get("pass_rate") or {}) if row else {}
        for cid in ids:
            checked += 1
            rate, resolved = rates.get(cid), labels.get(iid, {}).get(cid)
            if rate is None or resolved is None or (rate == 1.0) != resolved:
                disagree.append({"instance_id": iid, "candidate_id": cid, "pass_rate": rate})
        pools.append([labels.get(iid, {}).get(c) for c in ids])
    tests = report["selectors"]["tests"]["best_at_k"]
    oracle = report["oracle_pass_at_k"]
    off = {k: (tests.get(k), v) for k, v in oracle.items() if abs((tests.get(k) or -1) - v) > 1e-9}
    # the oracle's pick among all of a task's candidates solves it when any candidate is resolved
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
    for number, task in task_lines(tasks):
        iid = task.instance_id
        if iid not in bundled or not (EXAMPLES_DIR / iid / "hidden_tests").is_dir():
            raise DataError(f"{tasks}:{number}: {iid!r} is not a bundled task with hidden_tests/")
        shutil.copytree(EXAMPLES_DIR / iid / "hidden_tests", dest / iid, dirs_exist_ok=True)
    return dest


def _selectors(verifiers: str) -> str:
    """The selectors the verifiers allow, a verifier's first (it writes selections.jsonl)."""
    names = {v.strip() for v in verifiers.split(",") if v.strip()}
    out = [s for s, needs in SELECTORS.items() if set(needs) <= names]
    lead = [s for s in out if SELECTORS[s]][:1]
    return ",".join(lead + [s for s in out if s not in lead])


def _passed(args: argparse.Namespace) -> list[str]:
    out = []
    for flag in PASSED:
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and flag != "--explorer":
            out += [flag, str(value)]
    return out + [f for f in FLAGS if getattr(args, f[2:].replace("-", "_"))]


def _models(args: argparse.Namespace) -> str:
    given = [(r[2:], getattr(args, r[2:].replace("-", "_"))) for r in ROLES]
    said = [value if role == "model" else f"{role} {value}" for role, value in given if value]
    return ", ".join(said) or "the shipped fake (scripted: figures measure the machinery)"


def run_all(args: argparse.Namespace, tasks: Path, run: Path) -> None:
    """The one run folder every method is measured in."""
    settings = args.out / "settings.yaml"
    settings.write_text(f"bootstrap_resamples: {args.bootstrap}\nplots: false\n", encoding="utf-8")
    command = [sys.executable, "-c", "from agentic_rubrics.cli import main; main()", "run",
               "--tasks", str(tasks), "--out", str(run), "--config", str(settings),
               "--explorer", args.explorer or "agent", "--verifiers", args.verifiers,
               "--selectors", _selectors(args.verifiers), "--quiet", *_passed(args)]  # fmt: skip
    if args.tests_from_hidden:
        command += ["--tests", str(given_hidden_tests(tasks, args.out / "hidden_tests"))]
    with ExitStack() as stack:
        if not any(getattr(args, r[2:].replace("-", "_")) for r in ROLES):
            from agentic_rubrics.testing import LoopbackServer, fake_model

            server = stack.enter_context(LoopbackServer(fake_model()))
            command += ["--model", "openai/fake", "--api-base", server.url]
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"the run failed (exit {done.returncode}):\n{done.stderr[-3000:]}")


def parser() -> argparse.ArgumentParser:
    """The script's options: its own, then those passed through to ``agentic-rubrics run``."""
    out = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    out.add_argument("--tasks", type=Path, help="tasks JSONL (default: the bundled tasks)")
    out.add_argument("--out", type=Path, required=True)
    out.add_argument("--tests-from-hidden", action="store_true")
    out.add_argument("--verifiers", default="rubric,tests,similarity", help="the run's verifiers")
    out.add_argument("--bootstrap", type=int, default=1000, help="resamples of the intervals")
    for flag, text in PASSED.items():
        out.add_argument(flag, help=f"agentic-rubrics run {flag}: {text}")
    for flag, text in FLAGS.items():
        out.add_argument(flag, action="store_true", help=f"agentic-rubrics run {flag}: {text}")
    return out


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return _compare(args)
    except AgenticRubricsError as exc:
        print(f"compare_verifiers: {exc}", file=sys.stderr)
        return 2


def _compare(args: argparse.Namespace) -> int:
    if args.tests_from_hidden and args.tests:
        raise DataError("--tests-from-hidden gives the tests itself: leave out --tests")
    args.out.mkdir(parents=True, exist_ok=True)
    tasks = args.tasks or write_tasks_jsonl(args.out / "tasks.jsonl")
    lines = task_lines(tasks)  # refused with file:line before anything runs
    without = unlabelled(tasks, lines)
    if without:
        print(f"{tasks}: {without} of {len(lines)} tasks have no label: they count in no figure")
    run = args.out / "run"
    run_all(args, tasks, run)
    comparison = compare_methods(run)
    table = comparison.to_json()
    results: dict[str, Any] = {
        "schema": "compare-verifiers/1",
        "model": _models(args),
        "tests_from_hidden": args.tests_from_hidden,
        "tasks": comparison.tasks,
        "tasks_without_labels": comparison.tasks_without_labels,
        "candidates": comparison.candidates,
        "max_pool": comparison.max_pool,
        "methods": table["methods"],
        "cost": table["cost"],
        "hybrid_weights": comparison.hybrid_weights,
    }
    if args.tests_from_hidden:
        report = json.loads((run / "report.json").read_text(encoding="utf-8"))
        results["hidden_check"] = hidden_check(run, report, tasks)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    (args.out / "results.md").write_text(markdown(results, comparison), encoding="utf-8")
    plot_best_at_k(results, args.out / "best_at_k.png")
    print(f"wrote {args.out / 'results.json'}, results.md, best_at_k.png; {run / 'comparison.md'}")
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
