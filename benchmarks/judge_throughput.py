"""Judge throughput against a loopback OpenAI-compatible server in a separate process.

The server answers every judge prompt after a fixed latency (default 200 ms). The judge makes N calls
in its default batched mode (one call per candidate, all of its items) at a fixed concurrency
(default 32), through the whole library: prompt rendering, litellm, reply parsing, the response cache.

Reported, all measured in the same run:
- wall time as a ratio of the ideal, calls x latency / concurrency (1.0 = no overhead at all);
- CPU milliseconds per call in this process, and the same for bare ``litellm.acompletion`` calls
  (the baseline, same server, same concurrency); their difference is the CPU this library spends
  per call outside litellm.

Modes: ``in-process`` (litellm in the event loop, the default) and ``workers-N`` (litellm in N worker
processes, ``LLMConfig.processes`` / ``--llm-processes``).

    python benchmarks/judge_throughput.py                       # 2000 calls, 200 ms, concurrency 32
    python benchmarks/judge_throughput.py --calls 500 --out benchmarks/results
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentic_rubrics.judge import JudgeConfig, LLMJudge
from agentic_rubrics.llm import LLM, LLMConfig, import_litellm
from agentic_rubrics.testing import serve_in_subprocess
from agentic_rubrics.types import Rubric

ISSUE = "Parser.parse_header returns None for an empty header instead of raising ValueError."
RUBRIC = Rubric.model_validate(
    {
        "metadata": {"task_summary": "raise on empty headers", "underlying_bug": "returns None"},
        "axes": {
            "file_change_rubrics": [
                {"id": "FC1", "description": "Modifies parse_header in src/parser.py", "weight": 3}
            ],
            "spec_alignment_rubrics": [
                {"id": "SA1", "description": "Raises ValueError for an empty header", "weight": 3},
                {"id": "SA2", "description": "Keeps returning a list otherwise", "weight": 2},
            ],
            "integrity_rubrics": [
                {"id": "IN1", "description": "Removes no assertion from tests", "weight": 2}
            ],
            "runtime_rubrics": [],
        },
    }
)


def patch(i: int) -> str:
    return (
        f"--- a/src/parser.py\n+++ b/src/parser.py\n@@ -10,3 +10,3 @@ class Parser:\n"
        f"     def parse_header(self, text):\n-        return None\n+        raise ValueError('empty {i}')\n"
        f"     # end\n"
    )


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def baseline(url: str, calls: int, concurrency: int) -> dict[str, float]:
    """Bare litellm.acompletion calls with a judge-sized prompt."""
    litellm = import_litellm()
    limit = asyncio.Semaphore(concurrency)
    content = (
        "Answer for exactly these item ids: "
        + json.dumps(["FC1", "SA1", "SA2", "IN1"])
        + "\n"
        + ISSUE
    )

    async def one(i: int) -> None:
        async with limit:
            await litellm.acompletion(
                model="openai/bench-judge",
                messages=[{"role": "user", "content": content + patch(i)}],
                api_base=url,
                api_key="bench",
                timeout=60,
                max_retries=0,
            )

    await one(-1)
    wall, cpu = time.perf_counter(), time.process_time()
    await asyncio.gather(*(one(i) for i in range(calls)))
    return {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}


async def judged(url: str, calls: int, concurrency: int, processes: int) -> dict[str, Any]:
    """The library's judge: ``calls`` candidates, one batched call each, with a response cache."""
    config = LLMConfig(
        model="openai/bench-judge",
        api_base=url,
        concurrency=concurrency,
        processes=processes,
        timeout=60,
    )
    with tempfile.TemporaryDirectory() as cache:
        llm = LLM(config, api_key="bench", cache_dir=Path(cache))
        judge = LLMJudge(llm, JudgeConfig(kind="llm", model=config))
        await judge.judge(
            instance_id="warm", issue=ISSUE, rubric=RUBRIC, candidate_id="w", patch=patch(-1)
        )
        if processes:  # every worker has imported litellm before the clock starts
            await asyncio.gather(
                *(
                    judge.judge(
                        instance_id="warm",
                        issue=ISSUE,
                        rubric=RUBRIC,
                        candidate_id=f"w{i}",
                        patch=patch(-2 - i),
                    )
                    for i in range(4 * processes)
                )
            )
        sent_before = llm.requests_sent
        wall, cpu = time.perf_counter(), time.process_time()
        verdicts = await asyncio.gather(
            *(
                judge.judge(
                    instance_id="bench",
                    issue=ISSUE,
                    rubric=RUBRIC,
                    candidate_id=f"c{i}",
                    patch=patch(i),
                )
                for i in range(calls)
            )
        )
        result = {"wall_s": time.perf_counter() - wall, "cpu_s": time.process_time() - cpu}
        result["requests"] = llm.requests_sent - sent_before
        result["judged"] = sum(1 for vs in verdicts for v in vs if v.origin == "judged")
        await llm.aclose()
    return result


def median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """Median wall and CPU over rounds, with the range of the wall time."""
    walls = sorted(r["wall_s"] for r in runs)
    out = dict(runs[0])
    out["wall_s"] = statistics.median(walls)
    out["cpu_s"] = statistics.median(r["cpu_s"] for r in runs)
    out["wall_s_range"] = [walls[0], walls[-1]]
    out["rounds"] = len(runs)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument(
        "--workers", type=int, nargs="*", default=[2, 4], help="process counts for the workers mode"
    )
    parser.add_argument(
        "--rounds", type=int, default=3, help="runs of each mode, interleaved; medians reported"
    )
    parser.add_argument("--out", type=Path, help="write judge_throughput.json here")
    args = parser.parse_args(argv)
    server, url = serve_in_subprocess(args.latency)
    try:
        ideal = args.calls * args.latency / args.concurrency
        runs: dict[str, list[dict[str, Any]]] = {}
        for _ in range(args.rounds):  # interleaved, so drift in the machine's load hits every mode
            runs.setdefault("baseline", []).append(
                asyncio.run(baseline(url, args.calls, args.concurrency))
            )
            runs.setdefault("in-process", []).append(
                asyncio.run(judged(url, args.calls, args.concurrency, 0))
            )
            for n in args.workers:
                runs.setdefault(f"workers-{n}", []).append(
                    asyncio.run(judged(url, args.calls, args.concurrency, n))
                )
        base = median_run(runs.pop("baseline"))
        modes = {name: median_run(r) for name, r in runs.items()}
        server_cpu = cpu_seconds(server.pid)
    finally:
        server.kill()
    litellm_ms = 1000 * base["cpu_s"] / args.calls
    results: dict[str, Any] = {
        "command": "python benchmarks/judge_throughput.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "calls": args.calls,
        "latency_s": args.latency,
        "concurrency": args.concurrency,
        "ideal_s": ideal,
        "cpu_count": os.cpu_count(),
        "baseline_litellm": {
            **base,
            "ratio_of_ideal": ideal / base["wall_s"],
            "cpu_ms_per_call": litellm_ms,
        },
        "server_cpu_s_total": server_cpu,
        "modes": {},
    }
    for name, r in modes.items():
        cpu_ms = 1000 * r["cpu_s"] / args.calls
        results["modes"][name] = {
            **r,
            "ratio_of_ideal": ideal / r["wall_s"],
            "cpu_ms_per_call_this_process": cpu_ms,
            # in-process the difference to bare litellm is this library's own work; with workers
            # litellm runs elsewhere and this process's CPU is the library's work plus the hand-off
            "cpu_ms_per_call_outside_litellm": cpu_ms - litellm_ms
            if name == "in-process"
            else cpu_ms,
        }
    print(
        f"{args.calls} calls, {args.latency * 1000:.0f} ms latency, concurrency {args.concurrency}: ideal {ideal:.2f} s"
    )
    print(
        f"  bare litellm       wall {base['wall_s']:6.2f} s  ratio {ideal / base['wall_s']:.3f}  cpu {litellm_ms:.2f} ms/call"
    )
    for name, m in results["modes"].items():
        print(
            f"  judge {name:<12} wall {m['wall_s']:6.2f} s  ratio {m['ratio_of_ideal']:.3f}  "
            f"cpu here {m['cpu_ms_per_call_this_process']:.2f} ms/call, outside litellm "
            f"{m['cpu_ms_per_call_outside_litellm']:.2f} ms/call  ({m['requests']} requests, {m['judged']} verdicts)"
        )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "judge_throughput.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
