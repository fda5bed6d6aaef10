"""CPU time and peak memory of the offline default run on the SWE-bench development files.

    python benchmarks/offline_speed.py --out benchmarks/results
    python benchmarks/offline_speed.py --expect benchmarks/results/offline_speed.json   # outputs unchanged?

For each file (Lite and Verified development files in ``--data-dir``; full-run candidates, instances with
at least two, as ``swebench_rerank.py`` reads them) a fresh process imports the library, writes the tasks
file, then runs the offline default (static issue-only rubric, checks-only judge, report with 1000
bootstrap resamples) into a temporary run folder, and measures:

- CPU seconds of the process (user + system, all threads) for the run (explore and judge), the report,
  and a second ``report`` on the unchanged folder (the rerun a user makes after looking at the first);
- CPU milliseconds per candidate and seconds per 1000 candidates for the whole run with its report;
- peak resident memory of that process (``ru_maxrss``), and the same after the imports alone.

A separate process then runs the Lite file under cProfile and prints the functions with the most time of
their own (profiling slows the run down, so its times are not the figures above).

``--baseline DIR`` compares whole commands against another checkout of the project that has its own
``.venv`` (for example the release before a change, ``git worktree add DIR <commit>`` then
``make -C DIR install``): for each file, that checkout's ``agentic-rubrics run`` and this one's, on the
same tasks file, in turn (A B A B …, ``--pairs`` times after one warm-up each), the offline default
with its report; CPU seconds of each command (its process and the children it waited for), and their
ratio pair by pair, so that a drift in the machine's speed hits both alike.

Identical outputs: every file's rubrics, verdict rows and candidate scores (S and decision) are hashed in
a canonical order. ``--expect FILE`` compares them with a results file written before a change and exits
1 if any differs: a speed-up must not change what is written.
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FILES = {"lite": "lite_candidates.jsonl.gz", "verified": "verified_candidates.jsonl.gz"}
DEFAULT_DATA = Path("../shared/data/swebench")
"""Where the data lives beside a clone of the repository (relative to the working directory)."""


def _digest(parts: list[str]) -> str:
    h = hashlib.sha256()
    for p in sorted(parts):
        h.update(p.encode("utf-8", "surrogatepass") + b"\n")
    return h.hexdigest()


ISSUE_ONLY = {"repos": {"url_template": "none"}}
"""The static rubric from the issue alone, no repository fetched (as ``swebench_rerank.py`` runs it)."""


def output_digests(folder: Path) -> dict[str, str]:
    """Hashes of the rubrics, the verdict rows and the scores (S, decision) of a run folder."""
    rubrics = [
        f"{p.parent.name}\t{hashlib.sha256(p.read_bytes()).hexdigest()}"
        for p in (folder / "rubrics").glob("*/rubrics.yaml")
    ]
    verdicts = (folder / "verdicts.jsonl").read_text(encoding="utf-8").splitlines()
    scores = []
    for line in (folder / "scores.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        keep = ("instance_id", "candidate_id", "score", "decision", "reasons", "rank_tier")
        scores.append(json.dumps({k: row[k] for k in keep}, sort_keys=True))
    return {"rubrics": _digest(rubrics), "verdicts": _digest(verdicts), "scores": _digest(scores)}


def _cpu() -> float:
    t = resource.getrusage(resource.RUSAGE_SELF)
    return t.ru_utime + t.ru_stime


def measure_one(data: Path, work: Path, rerun: bool = True) -> dict[str, Any]:
    """Run in a fresh process: time the offline run of one file (see the module docstring)."""
    cpu0 = _cpu()
    import matplotlib.pyplot  # noqa: F401  (imported by the report's plots: not the run's work)

    import agentic_rubrics.explore.issue_static
    import agentic_rubrics.explore.static
    import agentic_rubrics.judge.judges
    import agentic_rubrics.report.build
    import agentic_rubrics.report.plots  # noqa: F401
    from agentic_rubrics.datasets.swebench import PoolOptions, load_candidates_file, write_tasks
    from agentic_rubrics.pipeline.config import load_config
    from agentic_rubrics.pipeline.runner import run, write_report
    from agentic_rubrics.runfolder.folder import RunFolder

    imports_cpu = _cpu() - cpu0
    rss_after_imports = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    pool = load_candidates_file(data, PoolOptions())
    tasks_file = write_tasks(pool, work / "tasks.jsonl")
    candidates = sum(len(t.candidates) for t in pool.tasks)
    folder = work / "run"
    config = load_config(None, ISSUE_ONLY)
    t0 = _cpu()
    run(tasks_file, folder, config, restart=True, stages=("explore", "judge"))
    t1 = _cpu()
    write_report(RunFolder(folder), pool.tasks)
    t2 = _cpu()
    if rerun:
        write_report(RunFolder(folder), pool.tasks)
    t3 = _cpu()
    total = t2 - t0
    return {
        "tasks": len(pool.tasks),
        "candidates": candidates,
        "cpu_s": {
            "imports": round(imports_cpu, 3),
            "explore_and_judge": round(t1 - t0, 3),
            "report": round(t2 - t1, 3),
            "run_with_report": round(total, 3),
            "report_rerun": round(t3 - t2, 3) if rerun else None,
        },
        "cpu_ms_per_candidate": round(1000 * total / candidates, 3),
        "cpu_s_per_1000_candidates": round(1000 * total / candidates, 3),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        "rss_after_imports_mb": round(rss_after_imports, 1),
        "outputs": output_digests(folder),
    }


def profile_one(data: Path, work: Path, top: int) -> str:
    """The run of one file under cProfile; the ``top`` functions by time of their own."""
    from agentic_rubrics.datasets.swebench import PoolOptions, load_candidates_file, write_tasks
    from agentic_rubrics.pipeline.config import load_config
    from agentic_rubrics.pipeline.runner import run

    pool = load_candidates_file(data, PoolOptions())
    tasks_file = write_tasks(pool, work / "tasks.jsonl")
    profiler = cProfile.Profile()
    profiler.enable()
    run(tasks_file, work / "run", load_config(None, ISSUE_ONLY), restart=True)
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def _cli_run(cli: Path, tasks: Path, out: Path, env: dict[str, str]) -> dict[str, float]:
    """One ``agentic-rubrics run`` of the offline default as a whole command: its CPU seconds (the
    process and the children it waited for) and wall seconds."""
    help_text = subprocess.run(
        [str(cli), "run", "--help"], capture_output=True, text=True, env=env, check=False
    ).stdout
    # releases before repositories were fetched have no --repo-url: their offline run is issue-only
    extra = ["--repo-url", "none"] if "--repo-url" in help_text else []
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    done = subprocess.run(
        [str(cli), "run", "--tasks", str(tasks), "--out", str(out), *extra],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{cli} run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"cpu_s": cpu, "wall_s": wall}


def compare_commands(data: Path, baseline: Path, pairs: int) -> dict[str, Any]:
    """This checkout's ``agentic-rubrics run`` against ``baseline``'s, in turn, on one tasks file."""
    import statistics

    from agentic_rubrics.datasets.swebench import PoolOptions, load_candidates_file, write_tasks

    here = Path(sys.executable).parent / "agentic-rubrics"
    there = baseline / ".venv" / "bin" / "agentic-rubrics"
    if not there.exists():
        raise SystemExit(f"{there}: not found (make -C {baseline} install)")
    env = _env()
    with tempfile.TemporaryDirectory(prefix="offline_speed_") as tmp:
        pool = load_candidates_file(data, PoolOptions())
        tasks = write_tasks(pool, Path(tmp) / "tasks.jsonl")
        candidates = sum(len(t.candidates) for t in pool.tasks)
        runs: dict[str, list[dict[str, float]]] = {"baseline": [], "this": []}
        for n in range(pairs + 1):  # the first pair warms both up (byte-compiled modules)
            for name, cli in (("baseline", there), ("this", here)):
                found = _cli_run(cli, tasks, Path(tmp) / f"{name}-{n}", env)
                if n:
                    runs[name].append(found)
    ratios = [b["cpu_s"] / t["cpu_s"] for b, t in zip(runs["baseline"], runs["this"], strict=True)]
    out: dict[str, Any] = {"baseline": str(baseline), "pairs": pairs, "candidates": candidates}
    for name, found in runs.items():
        cpu = statistics.median(r["cpu_s"] for r in found)
        out[name] = {
            "cpu_s_median": round(cpu, 3),
            "cpu_s_range": [round(min(r["cpu_s"] for r in found), 3),
                            round(max(r["cpu_s"] for r in found), 3)],
            "wall_s_median": round(statistics.median(r["wall_s"] for r in found), 3),
            "cpu_ms_per_candidate": round(1000 * cpu / candidates, 3),
        }  # fmt: skip
    out["cpu_ratio_baseline_over_this"] = {
        "median": round(statistics.median(ratios), 3),
        "range": [round(min(ratios), 3), round(max(ratios), 3)],
    }
    return out


def _env() -> dict[str, str]:
    # byte-compiled modules are read (and written the first time) as in a normal installation; one
    # hash seed, so that runs compare (before agentic_rubrics made the static rubric independent of
    # it, set iteration order could change a few issue-only rubrics between processes)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return {**env, "MPLBACKEND": "Agg", "PYTHONHASHSEED": "0"}


def _child(args: list[str]) -> str:
    done = subprocess.run(
        [sys.executable, __file__, *args], capture_output=True, text=True, check=False, env=_env()
    )
    if done.returncode != 0:
        raise SystemExit(f"child {args} failed:\n{done.stderr[-4000:]}")
    return done.stdout


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data-dir", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--files", nargs="+", choices=sorted(FILES), default=list(FILES))
    parser.add_argument("--out", type=Path, help="write offline_speed.json here")
    parser.add_argument("--expect", type=Path, help="an earlier offline_speed.json: same outputs?")
    parser.add_argument("--profile", type=int, default=25, help="top functions (0: no profile)")
    parser.add_argument(
        "--baseline", type=Path, help="another checkout with its .venv: whole commands compared"
    )
    parser.add_argument("--pairs", type=int, default=3, help="counted pairs with --baseline")
    parser.add_argument("--warm-up", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--profile-one", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--work", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)

    if args.warm_up:
        import matplotlib.pyplot  # noqa: F401

        import agentic_rubrics.datasets.swebench
        import agentic_rubrics.explore.issue_static
        import agentic_rubrics.pipeline.runner
        import agentic_rubrics.report.build
        import agentic_rubrics.report.plots  # noqa: F401

        return 0
    if args.one:
        print(json.dumps(measure_one(args.one, args.work)))
        return 0
    if args.profile_one:
        print(profile_one(args.profile_one, args.work, args.profile))
        return 0

    started = time.monotonic()
    results: dict[str, Any] = {
        "command": "python benchmarks/offline_speed.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "files": {},
    }
    _child(["--warm-up"])  # modules byte-compiled before anything is timed
    for name in args.files:
        data = args.data_dir / FILES[name]
        if not data.exists():
            print(f"{data}: not found, skipped")
            continue
        with tempfile.TemporaryDirectory(prefix="offline_speed_") as tmp:
            found = json.loads(_child(["--one", str(data), "--work", tmp]).splitlines()[-1])
        results["files"][name] = found
        c = found["cpu_s"]
        print(
            f"{name}: {found['tasks']} tasks, {found['candidates']} candidates:"
            f" {c['run_with_report']:.2f} s CPU ({c['explore_and_judge']:.2f} run +"
            f" {c['report']:.2f} report), {found['cpu_ms_per_candidate']:.2f} ms per candidate,"
            f" report rerun {c['report_rerun']:.2f} s, peak {found['peak_rss_mb']:.0f} MB"
            f" ({found['rss_after_imports_mb']:.0f} MB after imports)"
        )
        if args.baseline:
            vs = compare_commands(data, args.baseline, args.pairs)
            found["vs_baseline"] = vs
            ratio = vs["cpu_ratio_baseline_over_this"]
            print(
                f"{name}: whole commands, {args.pairs} pairs: {args.baseline}"
                f" {vs['baseline']['cpu_s_median']:.2f} s CPU"
                f" ({vs['baseline']['cpu_ms_per_candidate']:.2f} ms per candidate), this checkout"
                f" {vs['this']['cpu_s_median']:.2f} s ({vs['this']['cpu_ms_per_candidate']:.2f} ms);"
                f" ratio {ratio['median']:.2f} [{ratio['range'][0]:.2f}, {ratio['range'][1]:.2f}]"
            )
    if args.profile and "lite" in args.files and (args.data_dir / FILES["lite"]).exists():
        with tempfile.TemporaryDirectory(prefix="offline_speed_") as tmp:
            data = args.data_dir / FILES["lite"]
            print(
                _child(["--profile-one", str(data), "--work", tmp, "--profile", str(args.profile)])
            )
    results["seconds"] = round(time.monotonic() - started, 1)
    status = 0
    if args.expect:
        expected = json.loads(args.expect.read_text())["files"]
        for name, found in results["files"].items():
            if name not in expected:
                continue
            before, now = expected[name]["outputs"], found["outputs"]
            same = {k: before[k] == now[k] for k in now}
            print(f"{name}: outputs identical to {args.expect}: {same}")
            status |= not all(same.values())
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "offline_speed.json").write_text(json.dumps(results, indent=2) + "\n")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
