"""Paid once, budgeted once: one writer per run folder, a budget and a cost that span kills and resumes,
and a response cache that never answers for another server.

Where a separate process is the point (a second writer, a killed one) the tests start real ones,
gated by pipes rather than by sleeping; they run without a model, which keeps them quick to start (a
process that imports litellm takes seconds). A run interrupted while a request is in flight is
interrupted here as Ctrl-C does it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.exceptions import RunFolderBusy
from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.llm.spend import read_spending
from agentic_rubrics.pipeline.runner import run, run_async
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.testing import LoopbackServer, Reply, judge_answer

from .test_llm_pipeline import cfg, make_inputs

ROOMY = {"timeout": 60.0}  # seconds: only a hang reaches it; the timeout is not what is tested here


def rows(path: Path) -> list[dict[str, Any]]:
    return [r for _, r in read_jsonl(path)]


# a run that holds its folder mid-run: its progress hook stops after the first task until told to go on
HOLDER = r"""
import sys
from pathlib import Path

from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run

held = []


def hook(event, instance_id, info):
    if event == "judged" and not held:
        held.append(instance_id)
        print("holding", flush=True)
        sys.stdin.readline()


tasks, out, config = map(Path, sys.argv[1:4])
run(tasks, out, load_config(config), hook=hook, stages=("explore", "judge"))
"""


def hold(tasks: Path, out: Path, config: Path) -> subprocess.Popen[str]:
    """A process running ``run`` on ``out``, stopped after its first task (it holds the lock)."""
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(tasks), str(out), str(config)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdout.readline() == "holding\n"
    return proc


def test_one_process_writes_a_run_folder_at_a_time(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=3)
    out = tmp_path / "out"
    config = tmp_path / "c.yaml"
    config.write_text(
        yaml.safe_dump(
            {"rubrics_dir": str(rubrics), "bootstrap_resamples": 0, "task_concurrency": 1}
        )
    )
    first = hold(tasks, out, config)
    runner = CliRunner()
    args = ["--tasks", str(tasks), "--out", str(out), "--config", str(config), "-q"]
    for command in (["run", *args], ["judge", *args], ["report", "--out", str(out), "-q"]):
        second = runner.invoke(app, command)
        assert second.exit_code == 3, second.output
        assert "another process is writing to this run folder (process" in second.output
        assert f"process {first.pid} on" in second.output
    assert len(rows(out / "progress.jsonl")) == 1  # nothing written by the second process
    first.communicate("\n", timeout=120)
    assert first.returncode == 0
    assert len(rows(out / "verdicts.jsonl")) == 3 * 4 * 4  # tasks x candidates x items, once
    assert len(rows(out / "progress.jsonl")) == 3
    # a process killed while holding the lock leaves nothing that blocks the next one
    with hold(tasks, tmp_path / "k", config) as killed:  # its pipes closed, it reaped
        killed.kill()
    assert json.loads((tmp_path / "k" / ".lock").read_text())["pid"] == killed.pid
    resumed = runner.invoke(app, ["judge", *args[:2], "--out", str(tmp_path / "k"), *args[4:]])
    assert resumed.exit_code == 0, resumed.output
    assert len(rows(tmp_path / "k" / "progress.jsonl")) == 3


def test_the_lock_refuses_in_process_too(tmp_path: Path) -> None:
    from agentic_rubrics.runfolder.lock import folder_lock

    tasks, rubrics = make_inputs(tmp_path, n_tasks=1)
    busy = pytest.raises(RunFolderBusy, match=r"another process is writing .* --out")
    with LoopbackServer(judge_answer(1)) as srv, folder_lock(tmp_path / "out"), busy:
        run(tasks, tmp_path / "out", cfg(srv, rubrics))
    assert not (tmp_path / "out" / "config.json").exists()


PRICE = (
    1e-4  # dollars per prompt token; the loopback server bills 100 prompt tokens: $0.01 a request
)


def budget_config(srv: LoopbackServer, rubrics: Path, max_cost: float | None = None) -> Any:
    """Strictly one request at a time: which requests are sent is then the same on any machine."""
    model = {**ROOMY, "input_cost_per_token": PRICE, "concurrency": 1}
    return cfg(srv, rubrics, model=model, judge={"concurrency": 1}, task_concurrency=1,
               bootstrap_resamples=0, max_cost_usd=max_cost)  # fmt: skip


def interrupted(tasks: Path, out: Path, config: Any, arrived: threading.Event) -> None:
    """Run until ``arrived`` is set (by the server, holding a request), then interrupt the run as
    Ctrl-C does (``asyncio.run`` cancels its main task): that request stays in flight, unanswered."""

    async def go() -> None:
        job = asyncio.create_task(run_async(tasks, out, config))
        await asyncio.to_thread(arrived.wait, 120)
        assert not job.done(), job
        job.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await job

    asyncio.run(go())


def test_budget_and_cost_span_interruptions_and_resumes(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=6)  # 2 requests a task: c1 (and its twin c2), c3
    out = tmp_path / "out"
    arrived, stuck = threading.Event(), threading.Event()
    answer = judge_answer(1)

    def script(body: dict[str, Any], n: int) -> Reply:
        if n == 5:  # in flight when the run is interrupted: sent, maybe billed, never answered
            arrived.set()
            stuck.wait(120)
        return answer(body, n)

    with LoopbackServer(script) as srv:
        try:
            interrupted(tasks, out, budget_config(srv, rubrics), arrived)
        finally:
            stuck.set()
        assert len(srv.requests) == 6 and len(rows(out / "progress.jsonl")) == 2
        # 5 requests answered ($0.05) and one in flight (counted at the mean, $0.01): the resumed
        # run starts requests while less than $0.085 is counted: 3 more
        report = run(tasks, out, budget_config(srv, rubrics, max_cost=0.085))
        assert report is not None
        assert len(srv.requests) == 6 + 3
        cost = report["cost"]
        assert cost["requests"] == len(srv.requests)  # every request the server received
        assert (cost["calls"], cost["in_flight_unknown"], cost["failed_calls"]) == (8, 1, 0)
        assert cost["usd"] == pytest.approx(0.08)
        assert cost["budget_charge_usd"] == pytest.approx(0.09)
        assert cost["max_cost_usd"] == 0.085
        assert cost["cached_calls"] == 1  # task 2's first answer, received before the interruption
        assert report["verdicts"]["missing_by_reason"]["budget"] == 2 * 3 * 3  # tasks 4, 5: c1-c3
        md = (out / "report.md").read_text()
        assert "Cost of the whole run (every process and resume)" in md and "Budget: $" in md
        # resuming without the budget judges exactly what the budget left out, nothing twice
        done = run(tasks, out, budget_config(srv, rubrics))
        assert done is not None and "budget" not in done["verdicts"]["missing_by_reason"]
        assert len(srv.requests) == 6 * 2 + 1  # every request once; the one in flight twice
        assert done["cost"]["requests"] == len(srv.requests) and done["cost"]["calls"] == 12


def test_the_budget_overshoots_by_at_most_the_requests_in_flight(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=4)  # 8 requests, up to 4 in flight at once
    together = threading.Barrier(4)
    answer = judge_answer(1)

    def script(body: dict[str, Any], n: int) -> Reply:
        if n < 4:
            together.wait(120)  # the first four are all in flight before any is answered
        return answer(body, n)

    with LoopbackServer(script) as srv:
        model = {**ROOMY, "input_cost_per_token": PRICE, "concurrency": 4}
        config = cfg(srv, rubrics, model=model, judge={"concurrency": 2}, task_concurrency=4,
                     bootstrap_resamples=0, max_cost_usd=0.015)  # fmt: skip
        report = run(tasks, tmp_path / "out", config)
        sent = len(srv.requests)
    # each request started below $0.015, with at most 3 others in flight: the run ends at most 4
    # requests ($0.04) over the budget (which of the later ones started depends on timing: the first
    # answer counted may let one more start while the other three are being counted)
    assert report is not None and sent in (4, 5) and srv.max_in_flight == 4
    usd = report["cost"]["usd"]
    assert usd == pytest.approx(sent * 0.01) and 0.015 < usd < 0.015 + 4 * 0.01
    assert report["verdicts"]["missing_by_reason"]["budget"] > 0
    md = (tmp_path / "out" / "report.md").read_text()
    assert f"Budget: $0.0150; counted against it: ${usd:.4f} (over by ${usd - 0.015:.4f}:" in md
    assert "requests already in flight finish)" in md


# a process recording requests as the LLM door does, then killed with one in flight
SPENDER = r"""
import sys
from pathlib import Path

from agentic_rubrics.llm.spend import SpendLog
from agentic_rubrics.protocols import Usage

log = SpendLog(Path(sys.argv[1]))
for n in range(3):
    call = log.sent(model="m", phase="judge", task=f"t{n}")
    log.answered(call, Usage(prompt_tokens=100, completion_tokens=20, cost_usd=0.01))
log.failed(log.sent(model="m", phase="judge", task="t3"), "transient", 503)
log.sent(model="m", phase="judge", task="t4")
print("in flight", flush=True)
sys.stdin.readline()
"""


def test_the_spend_log_survives_a_killed_process(tmp_path: Path) -> None:
    path = tmp_path / "spend.jsonl"
    with subprocess.Popen(
        [sys.executable, "-c", SPENDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as proc:
        assert proc.stdout is not None and proc.stdout.readline() == "in flight\n"
        proc.send_signal(signal.SIGKILL)  # no exit handler runs: only what was written then
    spent = read_spending(path)
    assert {k: spent.totals[k] for k in ("requests", "calls", "failed_calls", "in_flight_unknown")} == {
        "requests": 5, "calls": 3, "failed_calls": 1, "in_flight_unknown": 1,
    }  # fmt: skip
    assert spent.totals["usd"] == pytest.approx(0.03)
    assert spent.budget_charge == pytest.approx(0.04)  # the one in flight at the mean cost
    assert dict(spent.failures) == {"transient/503": 1}


def test_the_budget_counts_the_whole_run_not_this_process(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=4)
    out = tmp_path / "out"
    with LoopbackServer(judge_answer(1)) as srv:
        run(tasks, out, budget_config(srv, rubrics, max_cost=0.025), stages=("explore", "judge"))
        assert len(srv.requests) == 3  # started below $0.025: three
        second = run(tasks, out, budget_config(srv, rubrics, max_cost=0.045))
        assert second is not None
        assert len(srv.requests) == 5  # two more, not five: the first process's $0.03 counts
        assert second["cost"]["usd"] == pytest.approx(0.05)
        assert second["cost"]["requests"] == 5 and second["cost"]["max_cost_usd"] == 0.045


def test_restart_discards_the_cache(tmp_path: Path) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=1)
    out = tmp_path / "out"
    with LoopbackServer(judge_answer(1)) as srv:
        run(tasks, out, cfg(srv, rubrics, model=ROOMY), stages=("explore", "judge"))
        assert {r["value"] for r in rows(out / "verdicts.jsonl") if r["origin"] == "judged"} == {1}
        srv.script = judge_answer(0)  # the same server now answers otherwise
        report = run(tasks, out, cfg(srv, rubrics, model=ROOMY), restart=True)
        assert len(srv.requests) == 4  # asked again, not served from the discarded answers
    assert report is not None
    assert {r["value"] for r in rows(out / "verdicts.jsonl") if r["origin"] == "judged"} == {0}
    assert report["cost"]["calls"] == 2 and report["cost"]["cached_calls"] == 0


def test_the_cache_answers_for_its_own_server_only(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "Is x 2? Answer with JSON."}]

    def ask(url: str) -> str | None:
        import asyncio

        llm = LLM(LLMConfig(model="openai/m", api_base=url, **ROOMY), cache_dir=tmp_path / "c")

        async def go() -> str | None:
            try:
                return (await llm.complete(messages, phase="judge", task="t")).content
            finally:
                await llm.aclose()

        return asyncio.run(go())

    one_said = json.dumps({"server": "one"})
    with (
        LoopbackServer(lambda b, n: Reply(content=one_said)) as one,
        LoopbackServer(lambda b, n: Reply(content=json.dumps({"server": "two"}))) as two,
    ):
        assert ask(one.url) == one_said
        assert ask(two.url) == json.dumps({"server": "two"})  # not the first server's answer
        assert len(two.requests) == 1
        assert ask(one.url) == one_said and len(one.requests) == 1  # its own answer, cached
        # the same server with other credentials in its address: the same answers
        with_password = one.url.replace("http://", "http://user:secret@")
        assert ask(with_password) == one_said and len(one.requests) == 1


@pytest.mark.parametrize(
    "usage",
    [
        {"prompt_tokens": None, "completion_tokens": None},
        {"prompt_tokens": -100, "completion_tokens": -20},
        None,
        {"prompt_tokens": 10**12, "completion_tokens": 20},
    ],
    ids=["null", "negative", "missing", "absurd"],
)
def test_the_budget_stops_a_provider_that_reports_no_usable_usage(
    tmp_path: Path, usage: Any
) -> None:
    """Priced at $0.01 per 100 prompt tokens; the provider says nothing usable about tokens. Each
    answer is charged its request's size at the price (about $0.04 here), so the budget stops the run
    as it would with honest counts, and the report says how many answers had no usable counts."""
    tasks, rubrics = make_inputs(tmp_path, n_tasks=6)
    out = tmp_path / "out"
    script = judge_answer(1)

    def bad_usage(body: dict[str, Any], n: int) -> Reply:
        reply = script(body, n)
        reply.usage = usage
        return reply

    with LoopbackServer(bad_usage) as srv:
        # a model name of its own: litellm's price registry is global to the process
        model = {**ROOMY, "model": "openai/unreported-usage", "input_cost_per_token": PRICE}
        config = cfg(srv, rubrics, model={**model, "concurrency": 1}, judge={"concurrency": 1},
                     task_concurrency=1, bootstrap_resamples=0, max_cost_usd=0.3)  # fmt: skip
        report = run(tasks, out, config)
        sent = len(srv.requests)
    assert report is not None
    assert sent < 12, "the budget stopped nothing"  # 12 requests without a budget
    cost = report["cost"]
    assert cost["usd"] == 0 and cost["unknown_cost_calls"] == sent
    assert cost["unreported_usage_calls"] == sent
    assert cost["estimated_usd"] >= 0.3 and cost["budget_charge_usd"] >= 0.3
    budget = [v for v in rows(out / "verdicts.jsonl") if v["reason"] == "budget"]
    assert budget, "nothing was left for the budget"
    md = (out / "report.md").read_text()
    assert f"{sent} answers came without usable token counts" in md
    assert read_spending(out / "spend.jsonl").budget_charge == pytest.approx(
        cost["budget_charge_usd"]
    )


def test_a_budget_on_an_unpriced_model_warns_and_is_kept_by_estimates(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tasks, rubrics = make_inputs(tmp_path, n_tasks=6)
    out = tmp_path / "out"
    # unpriced: each call of ~500 prompt characters and its answer charged at $1,000 per million
    # tokens, so a budget of $0.5 holds a few calls only
    model = {
        **ROOMY,
        "model": "openai/unpriced-judge",
        "concurrency": 1,
        "unpriced_usd_per_mtok": 1000.0,
    }
    with LoopbackServer(judge_answer(1)) as srv, caplog.at_level("WARNING"):
        config = cfg(srv, rubrics, model=model, judge={"concurrency": 1}, task_concurrency=1,
                     bootstrap_resamples=0, max_cost_usd=0.5)  # fmt: skip
        report = run(tasks, out, config)
        sent = len(srv.requests)
    warned = [r.getMessage() for r in caplog.records if "has no price" in r.getMessage()]
    assert len(warned) == 1 and "$1000.00 per million tokens" in warned[0]
    assert report is not None and sent < 12
    assert report["cost"]["estimated_usd"] >= 0.5 and report["cost"]["usd"] == 0


def test_spend_rows_are_typed_and_versioned(tmp_path: Path) -> None:
    from agentic_rubrics.exceptions import DataError

    log = tmp_path / "spend.jsonl"
    good = (
        '{"event": "sent", "call": "a", "model": "m", "phase": "judge", "instance_id": "t"}\n'
        '{"event": "answered", "call": "a", "prompt_tokens": 10, "completion_tokens": 2, "usd": 0.5}\n'
    )
    log.write_text(
        good
        + '{"event": "answered", "call": "b", "prompt_tokens": "many", "usd": 1}\n'
        + "[1, 2]\n"
        + '{"event": "sent", "call": "c"'
    )
    spent = read_spending(log)
    assert spent.totals["usd"] == 0.5 and spent.unreadable_rows == 3
    rows = [json.loads(x) for x in good.splitlines()]
    log.write_text(json.dumps({**rows[0], "schema": "agentic-rubrics/9"}) + "\n")
    with pytest.raises(
        DataError, match=r"spend.jsonl:1: a run folder of version 'agentic-rubrics/9'"
    ):
        read_spending(log)
