"""Judge throughput against a loopback OpenAI-compatible server in a separate process.

The server answers every judge prompt after a fixed latency (default 200 ms). The judge makes N calls
in its default batched mode (one call per candidate, all of its items) at a fixed concurrency, through
the whole library: prompt rendering, litellm, reply parsing, the response cache. Each concurrency
(default 8, 32 and 64) makes ``--calls-per-slot`` calls per unit of concurrency (default 60: the ideal
wall time is 12 s at every concurrency).

Reported, all measured in the same run, per concurrency:
- wall time as a ratio of the ideal, calls x latency / concurrency (1.0 = no overhead at all);
- CPU milliseconds per call in this process, and the same for bare ``litellm.acompletion`` calls
  (the baseline, same server, same concurrency); their difference is the CPU this library spends
  per call outside litellm.

Modes (``LLMConfig.processes`` / ``--llm-processes``): ``in-process`` (0: litellm in the event loop),
``auto`` (the default: in this process until the measured calls would saturate a core, then worker
processes; their start-up counts, it happens during the run, and what auto decided is recorded) and
``workers-N`` (N worker processes, started and warmed before the clock).

Also measured: the median round trip of 30 sequential requests on one reused connection to a loopback
server in this process, with and without TCP_NODELAY (Nagle's algorithm delays the body, written after
the headers, until the client's delayed ACK).

    python benchmarks/judge_throughput.py --out benchmarks/results       # 8, 32 and 64; 2 rounds
    python benchmarks/judge_throughput.py --concurrency 32 --rounds 1    # one concurrency, quicker
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Literal

from agentic_rubrics.judge.judges import JudgeConfig, LLMJudge
from agentic_rubrics.llm.door import LLM, LLMConfig, import_litellm
from agentic_rubrics.testing import LoopbackServer, serve_in_subprocess
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


async def judged(
    url: str, calls: int, concurrency: int, processes: int | Literal["auto"]
) -> dict[str, Any]:
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
        if processes != "auto" and processes:  # the workers have imported litellm before the clock
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
        if (
            processes == "auto"
        ):  # what auto measured and decided, and the calls its workers answered
            result["auto"] = llm.pool_decision
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


def round_trip_ms(no_delay: bool, requests: int = 30) -> float:
    """Median milliseconds per request on one reused connection to a loopback server here."""
    import http.client

    server = LoopbackServer()
    server._server.RequestHandlerClass.disable_nagle_algorithm = no_delay  # type: ignore[attr-defined]
    with server:
        host, port = server._server.server_address[:2]
        conn = http.client.HTTPConnection(str(host), int(port))
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]})
        times = []
        for _ in range(requests):
            started = time.perf_counter()
            conn.request("POST", "/v1/chat/completions", body, {"Content-Type": "application/json"})
            conn.getresponse().read()
            times.append(time.perf_counter() - started)
        conn.close()
    return 1000 * statistics.median(times)


def measure(url: str, args: argparse.Namespace, concurrency: int) -> dict[str, Any]:
    """Every mode at one concurrency, ``args.rounds`` times interleaved; medians."""
    calls = args.calls_per_slot * concurrency
    ideal = calls * args.latency / concurrency
    runs: dict[str, list[dict[str, Any]]] = {}
    modes: list[tuple[str, int | Literal["auto"]]] = [("in-process", 0), ("auto", "auto")]
    modes += [(f"workers-{n}", n) for n in args.workers]
    for _ in range(args.rounds):  # interleaved, so drift in the machine's load hits every mode
        runs.setdefault("baseline", []).append(asyncio.run(baseline(url, calls, concurrency)))
        for name, processes in modes:
            runs.setdefault(name, []).append(
                asyncio.run(judged(url, calls, concurrency, processes))
            )
    base = median_run(runs.pop("baseline"))
    litellm_ms = 1000 * base["cpu_s"] / calls
    out: dict[str, Any] = {
        "calls": calls,
        "ideal_s": ideal,
        "baseline_litellm": {
            **base,
            "ratio_of_ideal": ideal / base["wall_s"],
            "cpu_ms_per_call": litellm_ms,
        },
        "modes": {},
    }
    for name, r in runs.items():
        m = median_run(r)
        cpu_ms = 1000 * m["cpu_s"] / calls
        out["modes"][name] = {
            **m,
            "auto_by_round": [x.get("auto") for x in r] if name == "auto" else None,
            "ratio_of_ideal": ideal / m["wall_s"],
            "cpu_ms_per_call_this_process": cpu_ms,
            # in-process the difference to bare litellm is this library's own work; with workers
            # litellm runs elsewhere and this process's CPU is the library's work plus the hand-off
            "cpu_ms_per_call_outside_litellm": cpu_ms - litellm_ms
            if name == "in-process"
            else cpu_ms,
        }
    return out


def _with_bytecode() -> None:
    """Run again with byte-compiled modules kept, as in a normal installation: where the environment
    says PYTHONDONTWRITEBYTECODE, every worker process would compile litellm from source at start
    (about 5 s instead of 3 s of CPU here), and ``auto``'s start-up would be measured slower than any
    user's."""
    if os.environ.get("PYTHONDONTWRITEBYTECODE"):
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--calls-per-slot", type=int, default=60)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, nargs="+", default=[8, 32, 64])
    parser.add_argument(
        "--workers", type=int, nargs="*", default=[2, 4], help="process counts for fixed pools"
    )
    parser.add_argument(
        "--rounds", type=int, default=2, help="runs of each mode, interleaved; medians reported"
    )
    parser.add_argument("--out", type=Path, help="write judge_throughput.json here")
    args = parser.parse_args(argv)
    nagle = {"nagle_ms": round_trip_ms(False), "no_delay_ms": round_trip_ms(True)}
    served = contextlib.ExitStack()
    server, url = served.enter_context(serve_in_subprocess(args.latency))
    try:
        by_concurrency = {c: measure(url, args, c) for c in args.concurrency}
        server_cpu = cpu_seconds(server.pid)
    finally:
        served.close()
    results: dict[str, Any] = {
        "command": "python benchmarks/judge_throughput.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "latency_s": args.latency,
        "calls_per_slot": args.calls_per_slot,
        "cpu_count": os.cpu_count(),
        "loopback_round_trip": nagle,
        "server_cpu_s_total": server_cpu,
        "concurrency": {str(c): r for c, r in by_concurrency.items()},
    }
    print(
        f"loopback round trip on a reused connection: {nagle['nagle_ms']:.1f} ms with Nagle's"
        f" algorithm, {nagle['no_delay_ms']:.1f} ms with TCP_NODELAY"
    )
    for c, r in by_concurrency.items():
        base = r["baseline_litellm"]
        print(
            f"concurrency {c}: {r['calls']} calls, {args.latency * 1000:.0f} ms latency, ideal"
            f" {r['ideal_s']:.2f} s"
        )
        print(
            f"  bare litellm       wall {base['wall_s']:6.2f} s  ratio {base['ratio_of_ideal']:.3f}"
            f"  cpu {base['cpu_ms_per_call']:.2f} ms/call"
        )
        for name, m in r["modes"].items():
            auto = ""
            if name == "auto":
                started = [a for a in m["auto_by_round"] if a and a.get("started")]
                auto = (
                    f"  [auto: {len(started)}/{len(m['auto_by_round'])} rounds started"
                    f" {started[0]['processes']} workers after {started[0]['after_calls']} calls,"
                    f" {started[0]['calls_in_workers']} calls answered by them]"
                    if started
                    else f"  [auto: no workers in {len(m['auto_by_round'])} rounds]"
                )
            print(
                f"  judge {name:<12} wall {m['wall_s']:6.2f} s  ratio {m['ratio_of_ideal']:.3f}  "
                f"cpu here {m['cpu_ms_per_call_this_process']:.2f} ms/call{auto}"
            )
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "judge_throughput.json").write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    _with_bytecode()
    raise SystemExit(main())
