"""Paid once, budgeted once: one writer per run folder, a budget and a cost that span kills and resumes,
and a response cache that never answers for another server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentic_rubrics.data import read_jsonl
from agentic_rubrics.exceptions import RunFolderBusy
from agentic_rubrics.pipeline import run
from agentic_rubrics.testing import LoopbackServer, judge_answer

from .test_llm_pipeline import cfg, make_inputs

CLI = str(Path(sys.executable).parent / "agentic-rubrics")


def rows(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in read_jsonl(path)]


def command(
    tasks: Path, out: Path, rubrics: Path, server: LoopbackServer, *extra: str
) -> list[str]:
    return [
        CLI, "run", "--tasks", str(tasks), "--out", str(out), "--rubrics", str(rubrics),
        "--model", "openai/judge-under-test", "--api-base", server.url, "-q", *extra,
    ]  # fmt: skip


def wait_for(check: Any, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting")


def test_one_process_writes_a_run_folder_at_a_time(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=4)
    out = tmp_path / "out"
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"bootstrap_resamples": 0, "task_concurrency": 1}))
    with LoopbackServer(judge_answer(1), latency=0.3) as srv:
        first = subprocess.Popen(
            command(tasks, out, rubrics, srv, "--config", str(config)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: (out / "config.json").exists())
        second = subprocess.run(
            command(tasks, out, rubrics, srv, "--config", str(config)),
            capture_output=True,
            text=True,
        )
        assert second.returncode == 3, second.stderr
        assert "another process is writing to this run folder (process" in second.stderr
        assert f"process {first.pid} on" in second.stderr
        assert first.wait(timeout=120) == 0
        assert len(srv.requests) == 4 * (2 + 2)  # judge and classifier calls, none paid twice
    assert len(rows(out / "verdicts.jsonl")) == 4 * 4 * 4  # tasks x candidates x items, once
    assert len(rows(out / "progress.jsonl")) == 4
    # a process killed while holding the lock leaves nothing that blocks the next one
    with LoopbackServer(judge_answer(1), latency=0.3) as srv:
        killed = subprocess.Popen(
            command(tasks, tmp_path / "k", rubrics, srv, "--config", str(config)),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for(lambda: len(srv.requests) >= 1)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        assert (tmp_path / "k" / ".lock").exists()
        report = run(tasks, tmp_path / "k", cfg(srv, rubrics), restart=True)
    assert report is not None and report["counts"]["tasks"] == 4


def test_the_lock_refuses_in_process_too(tmp_path: Path) -> None:
    from agentic_rubrics.lock import folder_lock

    tasks, rubrics = make_inputs(tmp_path, n_tasks=1)
    busy = pytest.raises(RunFolderBusy, match=r"another process is writing .* --out")
    with LoopbackServer(judge_answer(1)) as srv, folder_lock(tmp_path / "out"), busy:
        run(tasks, tmp_path / "out", cfg(srv, rubrics))


PRICE = (
    1e-4  # dollars per prompt token; the loopback server bills 100 prompt tokens: $0.01 a request
)


def test_budget_and_cost_span_kills_and_resumes(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=12)
    out = tmp_path / "out"
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "bootstrap_resamples": 0,
                "task_concurrency": 1,
                "judge": {"model": {"input_cost_per_token": PRICE}, "concurrency": 1},
            }
        )
    )
    with LoopbackServer(judge_answer(1), latency=0.05) as srv:
        base = command(tasks, out, rubrics, srv, "--config", str(config), "--llm-concurrency", "2")
        for _ in range(2):  # two kills, each after a few more answers
            before = len(srv.answered)
            proc = subprocess.Popen(base, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            wait_for(lambda before=before: len(srv.answered) >= before + 5)
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        spent_before = len(srv.answered) * 0.01
        assert spent_before >= 0.10 - 1e-9
        budget = round(spent_before + 0.04, 4)
        finished = subprocess.run(
            [*base, "--max-cost", str(budget)], capture_output=True, text=True
        )
        assert finished.returncode == 0, finished.stderr
        received, answered = len(srv.requests), len(srv.answered)
    # the resumed run counted what the killed ones spent: the whole run stays within the budget,
    # overshooting by at most the requests in flight (2 at --llm-concurrency 2)
    assert answered * 0.01 <= budget + 2 * 0.01 + 1e-9
    assert answered < 12 * 2  # the budget really stopped it
    report = json.loads((out / "report.json").read_text())
    missing = report["verdicts"]["missing_by_reason"]
    assert missing.get("budget", 0) > 0
    cost = report["cost"]
    # the report's cost is the whole run's: every request the server received, every dollar it billed
    assert cost["requests"] >= received and cost["requests"] <= received + 2 * 2
    assert cost["calls"] <= answered <= cost["calls"] + cost["in_flight_unknown"]
    assert cost["usd"] == pytest.approx(cost["calls"] * 0.01)
    assert cost["max_cost_usd"] == budget
    md = (out / "report.md").read_text()
    assert "Cost of the whole run (every process and resume)" in md and "Budget: $" in md


def test_restart_discards_the_cache_and_the_new_server_answers(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=1)
    out = tmp_path / "out"
    with LoopbackServer(judge_answer(1)) as old:
        run(tasks, out, cfg(old, rubrics))
    assert {r["value"] for r in rows(out / "verdicts.jsonl") if r["origin"] == "judged"} == {1}
    with LoopbackServer(judge_answer(0)) as new:
        report = run(tasks, out, cfg(new, rubrics), restart=True)
        assert len(new.requests) == 2  # asked again, not served from the old server's answers
    assert report is not None
    assert {r["value"] for r in rows(out / "verdicts.jsonl") if r["origin"] == "judged"} == {0}
    config = json.loads((out / "config.json").read_text())["config"]
    assert config["judge"]["model"]["api_base"] == new.url
    assert report["cost"]["calls"] == 2 and report["cost"]["cached_calls"] == 0
