"""What one command costs in the bubblewrap sandbox, next to the same command run unisolated.

Measured in the same run, on the bundled example repository: the start of a sandbox (copy, holder,
capped overlay) and the median wall time of ``true`` run N times through the sandbox, next to the same
``true`` through the unisolated ``local-copy`` sandbox (the baseline: the same asyncio subprocess path,
without namespaces). The ratio is what isolation costs per command; an agent's turn waits seconds for its
model, so milliseconds here are small beside it.

    python benchmarks/sandbox_overhead.py                      # 40 commands
    python benchmarks/sandbox_overhead.py --commands 100 --out benchmarks/results
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR
from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox, bwrap_problem
from agentic_rubrics.sandbox.local import LocalCopySandbox

REPO = EXAMPLES_DIR / "harbourline__pagewise-214" / "repo"


async def _measure(make: Any, commands: int) -> dict[str, float]:
    started = time.perf_counter()
    sandbox = await asyncio.to_thread(make, REPO)
    start_ms = (time.perf_counter() - started) * 1000
    times = []
    try:
        for _ in range(commands):
            t = time.perf_counter()
            result = await sandbox.run("true")
            times.append((time.perf_counter() - t) * 1000)
            assert result.exit_code == 0, result
    finally:
        await sandbox.close()
    return {"start_ms": round(start_ms, 1), "command_median_ms": round(statistics.median(times), 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--commands", type=int, default=40)
    parser.add_argument("--out", type=Path, default=None, help="write sandbox_overhead.json here")
    args = parser.parse_args()
    problem = bwrap_problem()
    if problem is not None:
        raise SystemExit(f"bubblewrap cannot run here: {problem}")
    baseline = asyncio.run(_measure(LocalCopySandbox, args.commands))
    isolated = asyncio.run(_measure(BubblewrapSandbox, args.commands))
    result = {
        "commands": args.commands,
        "as_root": os.geteuid() == 0,
        "local_copy": baseline,
        "bubblewrap": isolated,
        "command_ratio": round(isolated["command_median_ms"] / baseline["command_median_ms"], 1),
        "cpus": os.cpu_count(),
        "command": f"python benchmarks/sandbox_overhead.py --commands {args.commands}",
    }
    print(json.dumps(result, indent=2))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "sandbox_overhead.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
