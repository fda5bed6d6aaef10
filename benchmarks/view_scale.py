"""The HTML view at scale: `agentic-rubrics view` on a synthetic run of 500 tasks x 16 candidates.

    python benchmarks/view_scale.py [--tasks 500] [--candidates 16] [--work DIR] [--browser] [--out DIR]

The run folder is written with the library's own writers (RunFolder.open and record_task, write_rubric,
the trajectory rows) and reported by write_report, as a real run would be: 12-item rubrics (4 decided by
a check, 8 judged three times by an LLM judge, with flips and missing verdicts of three reasons), 40-line
patches, a 1,500-character issue and a 10-step trajectory per task. The benchmark times the report and
the view, and gives the view's size (whole, index, task pages). With --browser (Playwright and
/usr/bin/chromium), it also opens the index from file:// and times its first render, a sort and a filter.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.inputs import patch_rows, task_inputs, text_hash
from agentic_rubrics.datasets.labels import from_tasks
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import write_report
from agentic_rubrics.report.view_index import write_view
from agentic_rubrics.rubric.file import write_rubric
from agentic_rubrics.runfolder.digests import rows_digest
from agentic_rubrics.runfolder.files import atomic_write_json
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.rows import ProgressRow, RubricSummary, Step, Trajectory
from agentic_rubrics.types import Candidate, Rubric, Task, Verdict

AXES = ["file_change_rubrics", "spec_alignment_rubrics", "integrity_rubrics", "runtime_rubrics"]
MISSING = ["provider_error", "context_window", "truncated"]


def synthetic_task(n: int, k: int, rng: random.Random) -> Task:
    """One task: an issue and k 40-line patches, about a third of them resolved."""
    module = f"pkg{n % 7}/mod{n % 13}.py"
    issue = f"Task {n}: calling `handler()` in {module} fails on empty input.\n" + (
        "The traceback shows the value is read before it is checked. " * 24
    )
    candidates = []
    for c in range(k):
        body = "".join(f"+    value_{c}_{i} = compute({i}, {c})  # step {i}\n" for i in range(36))
        patch = (
            f"diff --git a/{module} b/{module}\n--- a/{module}\n+++ b/{module}\n"
            f"@@ -10,3 +10,39 @@ def handler(x):\n     x = read(x)\n-    return x\n{body}+    return x\n"
        )
        candidates.append(Candidate(id=f"c{c + 1:02d}", patch=patch, resolved=rng.random() < 0.35))
    return Task(
        instance_id=f"synth__repo{n % 25}-{n}",
        repo=f"synth/repo{n % 25}",
        base_commit=f"{n:040x}",
        problem_statement=issue,
        candidates=candidates,
    )


def synthetic_rubric(task: Task) -> Rubric:
    """Twelve items: one checked and two judged per axis."""
    axes: dict[str, list[dict[str, Any]]] = {a: [] for a in AXES}
    for a, axis in enumerate(AXES):
        prefix = {0: "FC", 1: "SA", 2: "IN", 3: "RT"}[a]
        axes[axis].append(
            {"id": f"{prefix}1", "description": "Changes the handler's module", "weight": 2}
            | {"check": {"touches": "pkg*/mod*.py"}}
        )
        for i in (2, 3):
            axes[axis].append(
                {
                    "id": f"{prefix}{i}",
                    "description": f"Judged criterion {i} of {axis}",
                    "weight": i - 1,
                }
            )
    meta = {"task_summary": task.problem_statement[:80], "underlying_bug": "read before check"}
    return Rubric.model_validate({"metadata": meta, "axes": axes})


def synthetic_verdicts(task: Task, rubric: Rubric, rng: random.Random) -> list[Verdict]:
    """Checked items once; judged items three times (a few flips and missing verdicts)."""
    out = []
    for cand in task.candidates:
        good = 0.85 if cand.resolved else 0.6
        for axis, item in rubric.items():
            base = {
                "instance_id": task.instance_id,
                "candidate_id": cand.id,
                "item_id": item.id,
                "axis": axis,
                "weight": item.weight,
            }
            if item.check is not None:
                out.append(Verdict(**base, origin="checked", value=1, reason="touches"))
                continue
            first = int(rng.random() < good)
            for repeat in range(3):
                if rng.random() < 0.03:
                    reason = rng.choice(MISSING)
                    out.append(
                        Verdict(**base, origin="missing", value=None, reason=reason, repeat=repeat)
                    )
                else:
                    value = first if rng.random() > 0.05 else 1 - first
                    out.append(Verdict(**base, origin="judged", value=value, repeat=repeat))
    return out


def write_run(root: Path, n_tasks: int, k: int, seed: int = 0) -> Path:
    """The synthetic run folder, written and reported; returns it."""
    rng = random.Random(seed)
    tasks = [synthetic_task(n, k, rng) for n in range(n_tasks)]
    tasks_file = root / "tasks.jsonl"
    tasks_file.write_text("".join(t.model_dump_json() + "\n" for t in tasks))
    config = load_config(
        None,
        {
            "judge": {"kind": "llm", "model": {"model": "openai/synthetic"}, "repeats": 3},
            "selectors": ["rubric", "random"],
            "bootstrap_resamples": 0,
        },
    )
    folder = RunFolder(root / "run")
    wanted = {**config.model_dump(mode="json"), "tasks_file": str(tasks_file.resolve())}
    folder.open(wanted, config.content_hash())
    for task in tasks:
        rubric = synthetic_rubric(task)
        write_rubric(rubric, folder.rubric_path(task.instance_id))
        verdicts = synthetic_verdicts(task, rubric, rng)
        summary = RubricSummary(
            status="ok", hash=rubric.content_hash(), source="explorer:static", items=12
        )
        inputs = task_inputs(task)
        progress = ProgressRow(
            instance_id=task.instance_id,
            repo=task.repo,
            problem_hash=text_hash(task.problem_statement),
            base_commit=task.base_commit,
            candidates=inputs.candidates,
            explorer="static",
            judge="llm",
            repeats=3,
            rubric=summary,
            verdict_rows=len(verdicts),
            verdicts_digest=rows_digest(v.to_row() for v in verdicts),
            cost={"judging": {"calls": k, "usd": 0.01 * k}},
        )
        folder.record_task(verdicts, progress, patch_rows(task))
        steps = [
            Step(tool="bash", argument=f"grep -rn handler pkg{s}", exit_code=0) for s in range(10)
        ]
        trajectory = Trajectory(
            instance_id=task.instance_id, explorer="static", status="ok", turns=10, steps=steps
        )
        atomic_write_json(folder.trajectory_path(task.instance_id), trajectory.to_json())
    write_report(folder, labels=from_tasks(tasks, f"tasks file {tasks_file}"))
    return folder.root


def browse(view: Path) -> dict[str, float]:
    """Seconds to open the index and render its first page, to sort by a column, to filter."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium")
        page = browser.new_page()
        started = time.perf_counter()
        page.goto((view / "index.html").as_uri())
        page.wait_for_selector("#tasks tbody tr")
        opened = time.perf_counter() - started
        started = time.perf_counter()
        page.click('th[data-key="coverage"]')
        sorted_ = time.perf_counter() - started
        started = time.perf_counter()
        page.select_option("#filter", "flaky")
        filtered = time.perf_counter() - started
        browser.close()
    return {"open_s": opened, "sort_s": sorted_, "filter_s": filtered}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=500)
    parser.add_argument("--candidates", type=int, default=16)
    parser.add_argument("--work", type=Path, default=None, help="Keep the run folder here.")
    parser.add_argument("--browser", action="store_true", help="Also time the index in chromium.")
    parser.add_argument("--out", type=Path, default=None, help="Write view_scale.json here.")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="view-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    run = write_run(work, args.tasks, args.candidates)
    built = time.perf_counter() - started
    cpu = time.process_time()
    written = write_view(run)
    cpu = time.process_time() - cpu
    pages = sorted(p.stat().st_size for p in (written.folder / "tasks").iterdir())
    result: dict[str, Any] = {
        "tasks": args.tasks,
        "candidates": args.candidates,
        "verdict_rows": sum(1 for _ in (run / "verdicts.jsonl").open()),
        "run_written_and_reported_s": round(built, 1),
        "view_s": round(written.seconds, 2),
        "view_cpu_s": round(cpu, 2),
        "view_mb": round(written.bytes / 1e6, 1),
        "index_kb": round((written.folder / "index.html").stat().st_size / 1e3, 1),
        "task_page_kb_median": round(pages[len(pages) // 2] / 1e3, 1),
        "task_page_kb_max": round(pages[-1] / 1e3, 1),
    }
    if args.browser:
        result.update({k: round(v, 2) for k, v in browse(written.folder).items()})
    print(json.dumps(result, indent=2))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "view_scale.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
