"""The gaming suite on the bundled tasks: how often a non-fixing candidate ranks with the real fixes.

    python benchmarks/gaming.py --out /tmp/gaming            # writes benchmarks/results/gaming.json

``agentic-rubrics sanity`` on the ten bundled tasks with the offline default (static explorer,
checks-only judge) plus the tests verifier given each task's hidden tests (``--tests DIR``, as
``compare_verifiers.py --tests-from-hidden``), so the selectors are the offline default's with ``tests``
and ``hybrid``, and the checks-only reward. Every attack kind is measured alone in each task's pool.
``--test-reruns 0``: the hidden tests are deterministic (``compare_verifiers.py --tests-from-hidden``
checks they give the labels), and a rerun would double the suite's execution time.

Written: ``--result`` (default ``benchmarks/results/gaming.json``): the suite's ``sanity.json``, the
command that made it and the code version (commit, and whether the work tree had changes). Exit code:
the command's (0 done; 1 a phase failed for everyone; 2 refused). Nothing here recomputes a figure.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from compare_verifiers import given_hidden_tests

from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.runfolder.files import atomic_write_json

ROOT = Path(__file__).resolve().parent.parent
RESULT = ROOT / "benchmarks" / "results" / "gaming.json"


def code_version() -> dict[str, Any]:
    """The commit measured, and whether the work tree differed from it."""

    def git(*args: str) -> str:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
        return done.stdout.strip() if done.returncode == 0 else ""

    return {"commit": git("rev-parse", "HEAD") or None, "dirty": bool(git("status", "--porcelain"))}


def command(out: Path, tasks: Path, hidden: Path, extra: list[str]) -> list[str]:
    return [
        "agentic-rubrics", "sanity", "--tasks", str(tasks), "--out", str(out / "suite"),
        "--verifiers", "rubric,tests", "--tests", str(hidden), "--test-reruns", "0", *extra,
    ]  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, required=True, help="work folder (tasks, suite)")
    parser.add_argument("--result", type=Path, default=RESULT)
    parser.add_argument("--kinds", help="comma-separated attack kinds (default: all)")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    tasks = write_tasks_jsonl(args.out / "tasks.jsonl")
    hidden = given_hidden_tests(tasks, args.out / "hidden_tests")
    shown = command(args.out, tasks, hidden, ["--kinds", args.kinds] if args.kinds else [])
    entry = "from agentic_rubrics.cli import main; main()"
    done = subprocess.run([sys.executable, "-c", entry, *shown[1:]], text=True)
    if done.returncode != 0:
        print(f"gaming: the suite ended with exit code {done.returncode}", file=sys.stderr)
        return done.returncode
    sanity = json.loads((args.out / "suite" / "sanity.json").read_text(encoding="utf-8"))
    atomic_write_json(
        args.result,
        {
            "schema": "gaming/1",
            "command": " ".join(["python", "benchmarks/gaming.py", *(argv or sys.argv[1:])]),
            "suite_command": " ".join(shown),
            "code_version": code_version(),
            "sanity": sanity,
        },
    )
    print(f"wrote {args.result}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
