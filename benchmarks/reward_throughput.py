"""Rewards per second against the shipped loopback fake model, batched and one at a time.

The fake (``python -m agentic_rubrics.testing serve``) runs in its own process and answers every judge
prompt after ``--latency`` seconds (default 0.5 s: a hosted model's short JSON answer). The patches are
the bundled tasks' 150 candidates (10 tasks x 15); each task gets one rubric of 2 checked and 4
model-judged items. Each mode starts from an empty response cache (its own state folder):

- ``one at a time``: ``RewardScorer.score`` per patch in a loop, as verl's naive reward manager calls
  ``compute_score`` (``--sequential`` patches: the mode is latency-bound);
- ``batched``: ``RewardScorer.score_many`` on all patches at once (``compute_score_batch``), within the
  judge's concurrency and the model's limit (``--llm-concurrency``);
- ``batched, cached``: the same batch again on the same scorer (every answer from the response cache:
  GRPO's repeated rollouts);
- ``server``: ``--clients`` threads posting to ``serve-reward``'s endpoint (``RewardServer``) at once;
- ``checks only``: the batch with the deterministic checks alone (no model).

Before each mode one patch outside the set is scored (litellm's import and first connection are not a
cost per reward).

Reported per mode: rewards per second, wall seconds, and the judge's efficiency — model calls per
patch and model-judged items per call (all of a patch's items go in one call; identical patches are
judged once).

    .venv/bin/python benchmarks/reward_throughput.py --out benchmarks/results
"""

from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.bundled import write_tasks_jsonl
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.reward import Reward, RewardScorer, RewardServer
from agentic_rubrics.rubric.file import rubric_to_yaml
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.testing import serve_in_subprocess
from agentic_rubrics.types import Rubric, Task

RUBRIC = Rubric.model_validate(
    {
        "metadata": {"task_summary": "fix the reported bug", "underlying_bug": "as reported"},
        "axes": {
            "file_change_rubrics": [
                {
                    "id": "FC1",
                    "description": "Changes source code",
                    "weight": 2,
                    "check": {"adds_match": "\\S", "not_in": "*tests/*"},
                },
                {
                    "id": "FC2",
                    "description": "Changes at most 3 files",
                    "weight": 1,
                    "check": {"max_files": 3},
                },
            ],
            "spec_alignment_rubrics": [
                {"id": "SA1", "description": "Fixes the behaviour the issue reports", "weight": 3},
                {"id": "SA2", "description": "Keeps the public signature compatible", "weight": 2},
            ],
            "integrity_rubrics": [{"id": "IN1", "description": "Weakens no test", "weight": 2}],
            "runtime_rubrics": [
                {"id": "RT1", "description": "Raises no new exception on valid input", "weight": 1}
            ],
        },
    }
)


def _inputs(root: Path) -> tuple[list[Task], Path]:
    tasks = load_tasks(write_tasks_jsonl(root / "tasks.jsonl"))
    for t in tasks:
        folder = root / "rubrics" / t.instance_id
        folder.mkdir(parents=True)
        (folder / "rubrics.yaml").write_text(rubric_to_yaml(RUBRIC), encoding="utf-8")
    return tasks, root / "rubrics"


def _scorer(
    url: str | None, rubrics: Path, tasks: list[Task], state: Path, conc: int
) -> RewardScorer:
    overrides: dict[str, Any] = {"rubrics_dir": str(rubrics)}
    if url is not None:
        model = {"model": "openai/fake", "api_base": url, "concurrency": conc, "timeout": 60.0}
        overrides["judge"] = {"kind": "llm", "model": model}
    return RewardScorer(
        load_config(None, overrides), rubrics_dir=rubrics, tasks=tasks, state_dir=state
    )


def _figures(
    name: str,
    rewards: list[Reward],
    seconds: float,
    before: dict[str, float],
    after: dict[str, float],
) -> dict[str, Any]:
    calls = after["model_calls"] - before["model_calls"]
    judged = sum(1 for r in rewards for v in r.verdicts if v.status == "judged")
    return {
        "mode": name,
        "patches": len(rewards),
        "seconds": round(seconds, 3),
        "rewards_per_second": round(len(rewards) / seconds, 2),
        "model_calls": int(calls),
        "cached_calls": int(after["cached_calls"] - before["cached_calls"]),
        "calls_per_patch": round(calls / len(rewards), 3) if rewards else None,
        "judged_items_per_call": round(judged / calls, 2) if calls else None,
        "scored": sum(1 for r in rewards if r.score is not None),
    }


WARM_UP = "diff --git a/warm_up.py b/warm_up.py\n--- a/warm_up.py\n+++ b/warm_up.py\n@@ -1 +1 @@\n-a\n+b\n"
"""A patch outside the measured set: its call imports litellm and opens the connection pool before the
clock starts (seconds, once per process: not a cost per reward)."""


def _timed(name: str, scorer: RewardScorer, fn: Any) -> dict[str, Any]:
    scorer.score(next(iter(scorer.tasks or {"x": None})), WARM_UP)
    before = scorer.efficiency()
    started = time.perf_counter()
    rewards = fn()
    seconds = time.perf_counter() - started
    return _figures(name, rewards, seconds, before, scorer.efficiency())


def _serve(scorer: RewardScorer, pairs: list[tuple[str, str]], clients: int) -> list[Reward]:
    server = RewardServer(scorer, concurrency=clients, queue=len(pairs)).start()
    host, port = server.url.removeprefix("http://").split(":")
    out: list[Reward] = []
    todo = list(pairs)
    lock = threading.Lock()

    def client() -> None:
        conn = http.client.HTTPConnection(host, int(port), timeout=120)
        while True:
            with lock:
                if not todo:
                    break
                iid, patch = todo.pop()
            body = json.dumps({"instance_id": iid, "patch": patch})
            conn.request("POST", "/score", body, {"Content-Type": "application/json"})
            answer = json.loads(conn.getresponse().read())
            answer["score"] = answer.pop("S")
            with lock:
                out.append(Reward.model_validate(answer))
        conn.close()

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    server.stop()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--sequential", type=int, default=20, help="patches scored one at a time")
    parser.add_argument("--llm-concurrency", type=int, default=16)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    served = contextlib.ExitStack()
    _, url = served.enter_context(serve_in_subprocess(args.latency))
    rows = []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            tasks, rubrics = _inputs(root)
            pairs = [(t.instance_id, c.patch) for t in tasks for c in t.candidates]
            conc = args.llm_concurrency
            with _scorer(url, rubrics, tasks, root / "s1", conc) as s:
                few = pairs[: args.sequential]
                rows.append(_timed("one at a time", s, lambda: [s.score(i, p) for i, p in few]))
            with _scorer(url, rubrics, tasks, root / "s2", conc) as s:
                rows.append(_timed("batched", s, lambda: s.score_many(pairs)))
                rows.append(_timed("batched, cached", s, lambda: s.score_many(pairs)))
            with _scorer(url, rubrics, tasks, root / "s3", conc) as s:
                rows.append(_timed("server", s, lambda: _serve(s, pairs, args.clients)))
            with _scorer(None, rubrics, tasks, root / "s4", conc) as s:
                rows.append(_timed("checks only", s, lambda: s.score_many(pairs)))
    finally:
        served.close()
    result = {
        "latency_s": args.latency,
        "llm_concurrency": args.llm_concurrency,
        "clients": args.clients,
        "modes": rows,
    }
    print(json.dumps(result, indent=2))
    if args.out is not None:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "reward_throughput.json").write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    main()
