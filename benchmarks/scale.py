"""Scaling on Ray: the same run with 1 and with 2 Ray workers, against a loopback model server.

    python benchmarks/scale.py --out benchmarks/results

The bundled tasks (copied to make a longer run; each copy's issue names its copy, so that no model call
is answered from the response cache) are judged by the LLM judge on rubrics that have model-judged
items; a loopback OpenAI-compatible server in a separate process answers after a fixed latency. Both
runs use a fresh local Ray cluster with warm workers, the same global limits and the same
configuration; the benchmark reports both wall times, the speed-up (1 worker / 2 workers), the model
calls of each run and how many came from the cache (none), and whether the verdicts are identical.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.rubric.file import load_rubric, write_rubric
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.testing import serve_in_subprocess
from agentic_rubrics.types import Rubric

MODEL_ITEMS = [
    {"id": "SA9", "description": "Fixes the behaviour the issue describes", "weight": 3},
    {"id": "SA8", "description": "Handles the edge cases the issue implies", "weight": 2},
    {"id": "RT9", "description": "Keeps the public behaviour of untouched callers", "weight": 2},
    {"id": "RT8", "description": "Avoids special-casing the reported input", "weight": 2},
]


def prepare(work: Path, copies: int, n_tasks: int | None = None) -> tuple[Path, Path]:
    """A tasks file of the bundled tasks (the first ``n_tasks``, or all) repeated ``copies`` times, and
    rubrics with model items."""
    base = write_tasks_jsonl(work / "bundled.jsonl")
    rows = [r for _, r in read_jsonl(base)][:n_tasks]
    # each copy's issue says which copy it is: its judge prompts differ from every other copy's, so
    # no model call of a run is answered from the response cache (the library is measured, not the cache)
    many = [
        dict(
            r,
            instance_id=f"{r['instance_id']}-{n}",
            problem_statement=f"{r['problem_statement']}\n\n(Benchmark copy {n}.)",
        )
        for n in range(copies)
        for r in rows
    ]
    tasks = work / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(r) + "\n" for r in many))
    static = work / "static"
    run(tasks, static, load_config(None, {"bootstrap_resamples": 0}), stages=("explore",))
    rubrics = work / "rubrics"
    for status in static.glob("rubrics/*/rubrics.yaml"):
        rubric, _ = load_rubric(status)
        data = rubric.model_dump(mode="json")
        data["axes"]["spec_alignment_rubrics"] += [
            i for i in MODEL_ITEMS if i["id"].startswith("SA")
        ]
        data["axes"]["runtime_rubrics"] += [i for i in MODEL_ITEMS if i["id"].startswith("RT")]
        write_rubric(Rubric.model_validate(data), rubrics / status.parent.name / "rubrics.yaml")
    return tasks, rubrics


def timed_run(tasks: Path, out: Path, settings: dict[str, Any]) -> float:
    shutil.rmtree(out, ignore_errors=True)
    started = time.perf_counter()
    run(tasks, out, load_config(None, settings))
    return time.perf_counter() - started


def verdicts(folder: Path) -> list[dict[str, Any]]:
    return sorted((r for _, r in read_jsonl(folder / "verdicts.jsonl")),
                  key=lambda r: (r["instance_id"], r["candidate_id"], r["item_id"], r["repeat"]))  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    import ray

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--copies", type=int, default=3, help="copies of the bundled tasks")
    parser.add_argument(
        "--tasks", type=int, default=None, help="only the first N bundled tasks (default: all 10)"
    )
    parser.add_argument(
        "--latency", type=float, default=0.2, help="seconds the server takes per answer"
    )
    parser.add_argument("--out", type=Path, help="write scale.json here")
    args = parser.parse_args(argv)
    served = contextlib.ExitStack()
    _, url = served.enter_context(serve_in_subprocess(args.latency))
    work = Path(tempfile.mkdtemp(prefix="scale-"))
    try:
        tasks, rubrics = prepare(work, args.copies, args.tasks)
        n_tasks = sum(1 for _ in read_jsonl(tasks))
        settings: dict[str, Any] = {
            "executor": "ray",
            "rubrics_dir": str(rubrics),
            "bootstrap_resamples": 0,
            "selectors": ["rubric", "random"],
            "judge": {
                "kind": "llm",
                "model": {"model": "openai/bench-judge", "api_base": url, "concurrency": 64},
            },
        }
        started_here = not ray.is_initialized()  # a caller (the test suite) may bring its own
        if started_here:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
        timed_run(tasks, work / "warmup", {**settings, "workers": 2})  # start and warm both workers
        # the same requests again would be answered from the warm-up's cache: fresh folders per run
        times = {n: timed_run(tasks, work / f"w{n}", {**settings, "workers": n}) for n in (1, 2)}
        if started_here:
            ray.shutdown()
        identical = verdicts(work / "w1") == verdicts(work / "w2")
        n_rows = len(verdicts(work / "w1"))
        costs = {
            n: json.loads((work / f"w{n}" / "report.json").read_text())["cost"] for n in (1, 2)
        }
    finally:
        served.close()
        shutil.rmtree(work, ignore_errors=True)
    results = {
        "command": "python benchmarks/scale.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "tasks": n_tasks,
        "latency_s": args.latency,
        "cpu_count": os.cpu_count(),
        "seconds": {"1_worker": round(times[1], 2), "2_workers": round(times[2], 2)},
        "speedup": round(times[1] / times[2], 3),
        "identical_verdicts": identical,
        "verdict_rows": n_rows,
        "model_calls": {f"{n}_worker{'s' * (n > 1)}": int(costs[n]["calls"]) for n in (1, 2)},
        "cached_calls": {
            f"{n}_worker{'s' * (n > 1)}": int(costs[n]["cached_calls"]) for n in (1, 2)
        },
    }
    print(
        f"{results['tasks']} tasks, {args.latency * 1000:.0f} ms per model answer, {n_rows} verdict rows,"
        f" {results['model_calls']['1_worker']} model calls per run"
        f" ({results['cached_calls']['1_worker']} from the cache)"
    )
    print(f"  1 Ray worker : {times[1]:6.2f} s")
    print(
        f"  2 Ray workers: {times[2]:6.2f} s   speed-up {results['speedup']:.2f}x   identical verdicts: {identical}"
    )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "scale.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0 if identical else 1


if __name__ == "__main__":
    raise SystemExit(main())
