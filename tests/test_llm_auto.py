"""``processes="auto"``: worker processes for litellm only where the calls would saturate a core."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.llm.pool_auto import (
    AUTO_MIN_CALLS,
    AutoPool,
    planned_processes,
)
from agentic_rubrics.protocols import Completion
from agentic_rubrics.testing import LoopbackServer, Reply, register_script


@pytest.mark.parametrize(
    ("concurrency", "cpu_ms", "seconds", "cpus", "processes"),
    [
        (8, 7.0, 0.2, 2, 0),  # 0.28 of a core: one process keeps up
        (16, 7.0, 0.2, 2, 0),  # 0.56
        (32, 7.0, 0.2, 2, 2),  # 1.12 cores: two workers
        (64, 7.0, 0.2, 8, 3),  # 2.24 cores: three
        (64, 7.0, 0.05, 8, 4),  # 8.96 cores: at most four
        (64, 7.0, 0.2, 1, 0),  # one usable CPU: workers cannot help
        (4, 7.0, 0.01, 2, 2),  # a fast local server saturates a core at low concurrency too
    ],
)
def test_workers_are_planned_from_the_measured_cpu_and_time_per_call(
    concurrency: int, cpu_ms: float, seconds: float, cpus: int, processes: int
) -> None:
    need, planned = planned_processes(concurrency, cpu_ms / 1000, seconds, cpus)
    assert need == pytest.approx(concurrency * cpu_ms / 1000 / seconds)
    assert planned == processes


def test_a_handful_of_calls_never_starts_workers() -> None:
    auto = AutoPool(64, cpus=4, saturation=0.0)  # any measurement would start them
    for _ in range(AUTO_MIN_CALLS - 1):
        auto.record(0.001)
    assert auto.pool is None and auto.decision == {"started": False}


class InProcessPool:
    """The worker pool's interface, served in this process (starting real workers imports litellm in
    each, seconds of CPU; the workers themselves are tested in test_llm_pipeline)."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        self.calls = 0
        self.answered = 0
        self.started = False

    def is_serving(self) -> bool:
        return self.started

    def start_error(self) -> str | None:
        return None  # served here: it cannot fail to start

    async def complete(self, kwargs: dict[str, Any]) -> Completion:
        from agentic_rubrics.llm.door import import_litellm
        from agentic_rubrics.llm.reply import to_completion

        self.calls += 1
        litellm = import_litellm()
        response = await litellm.acompletion(**kwargs)
        self.answered += 1
        return to_completion(response, litellm, kwargs["model"])

    async def close(self) -> None:
        self.started = False


def test_auto_starts_workers_and_calls_move_to_them_once_ready() -> None:
    """Measured in this process first; past the window a pool starts, and once it is ready the calls
    go to it (until then they stay here)."""
    pools: list[InProcessPool] = []

    def start(processes: int) -> Any:
        pools.append(InProcessPool(processes))
        return pools[-1]

    async def go(url: str) -> tuple[list[str], dict[str, Any] | None]:
        config = LLMConfig(model="openai/auto-under-test", api_base=url, concurrency=4, timeout=30)
        assert config.processes == "auto"  # the default
        llm = LLM(config)
        llm._auto = AutoPool(4, cpus=2, min_calls=3, saturation=0.0, max_processes=1, start=start)
        ask = [{"role": "user", "content": "q"}]
        answers = []
        try:
            for _ in range(4):  # the first is not measured, the next two are the window
                answers.append((await llm.complete(ask, repeat=len(answers))).content or "")
            assert len(pools) == 1 and pools[0].calls == 0  # started, not ready: still here
            pools[0].started = True
            for _ in range(2):
                answers.append((await llm.complete(ask, repeat=len(answers))).content or "")
            return answers, llm.pool_decision
        finally:
            await llm.aclose()

    with LoopbackServer(lambda body, n: Reply(content=f"a{n}")) as srv:
        answers, decision = asyncio.run(go(srv.url))
    assert answers == [f"a{n}" for n in range(6)]
    assert pools[0].processes == 1 and pools[0].calls == 2
    assert decision is not None and decision["started"] and decision["processes"] == 1
    assert decision["after_calls"] == 3 and decision["cpu_ms_per_call"] > 0
    assert decision["calls_in_workers"] == 2


def test_a_provider_registered_only_here_stays_here() -> None:
    """A scripted ``local/`` model cannot run in a worker process: auto never moves it."""
    model = register_script("local/auto-stays", lambda body, n: Reply(content="here"))

    async def go() -> tuple[str | None, object]:
        llm = LLM(LLMConfig(model=model))
        try:
            done = await llm.complete([{"role": "user", "content": "hi"}])
            return done.content, llm.pool_decision
        finally:
            await llm.aclose()

    content, decision = asyncio.run(go())
    assert content == "here" and decision is None


def test_the_loopback_server_answers_without_nagle_delay() -> None:
    """Headers and body are two writes: without TCP_NODELAY the body waits for the client's delayed
    ACK (about 40 ms per request on a reused connection), and benchmarks measure that, not the library."""
    with LoopbackServer() as srv:
        assert srv._server.RequestHandlerClass.disable_nagle_algorithm is True


@pytest.mark.slow
def test_dead_and_stuck_workers_take_no_calls_and_auto_comes_back_here() -> None:
    """Real worker processes. Calls abandoned while their large requests are written (a caller's
    cancel) leave no half-written request behind. Then one worker is killed and the other stopped
    (SIGSTOP: alive, reading nothing): the live one takes every call meanwhile (none is sent to the
    dead one and fails); a call to the stopped one, too large for its pipe, fails at its deadline
    without blocking the event loop, and the worker is stopped for good; with none left, auto
    answers in this process."""
    import contextlib
    import os
    import signal
    import time

    from agentic_rubrics.exceptions import CallFailed
    from agentic_rubrics.llm.pool import WorkerPool

    pools: list[WorkerPool] = []

    def start(processes: int) -> WorkerPool:
        pools.append(WorkerPool(processes, answer_grace=0.5))
        return pools[-1]

    def wait_for(pool: WorkerPool, running: int) -> None:
        deadline = time.monotonic() + 30  # the pool sees the pipe close at once; roomy when loaded
        while pool.running > running and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pool.running == running

    async def go(url: str) -> tuple[list[str], list[int], float, float]:
        config = LLMConfig(
            model="openai/auto-under-test", api_base=url, concurrency=64, timeout=3, max_retries=0
        )
        llm = LLM(config)
        llm._auto = AutoPool(4, cpus=2, min_calls=2, saturation=0.0, max_processes=2, start=start)
        answers: list[str] = []
        in_workers: list[int] = []

        async def calls(n: int) -> None:
            before = pools[0].answered if pools else 0
            for _ in range(n):
                ask = [{"role": "user", "content": f"q{len(answers):03d}"}]
                answers.append((await llm.complete(ask)).content or "")
            in_workers.append((pools[0].answered if pools else 0) - before)

        async def lane(k: int) -> None:
            """Calls of 50 B to 1 MB, most abandoned soon after they start (some while their
            request is being written). The largest is several times what a pipe holds, and under
            the 1 MiB from which aiohttp (litellm's HTTP client) warns that a body sent as bytes
            may block the worker's event loop (a ResourceWarning: the suite's error)."""
            for j in range(6):
                i = 6 * k + j
                content = f"x{i:03d}" + "x" * (50, 5_000, 300_000, 1_000_000)[i % 4]
                give_up = (None, 0.0005, 0.002, 0.01, 0.03)[(i * 7) % 5]
                call = llm.complete([{"role": "user", "content": content}])
                with contextlib.suppress(TimeoutError):
                    await (asyncio.wait_for(call, give_up) if give_up else call)

        try:
            await calls(2)  # the first is not measured; the second decides: two workers start
            await pools[0].ready()
            assert pools[0].running == 2
            await calls(4)  # both started: the pool takes them
            pools[0]._procs[0].kill()
            wait_for(pools[0], 1)
            await asyncio.gather(*(lane(k) for k in range(12)))
            await calls(4)  # one dead: the other takes all four, each at once (none stalls
            # behind a request left half written by a call abandoned meanwhile)
            os.kill(pools[0]._procs[1].pid, signal.SIGSTOP)
            stalls: list[float] = []

            async def ticker() -> None:
                while True:
                    before = time.monotonic()
                    await asyncio.sleep(0.05)
                    stalls.append(time.monotonic() - before)

            tick = asyncio.create_task(ticker())
            started = time.monotonic()
            big = [{"role": "user", "content": "x" * 2_000_000}]  # far more than a pipe holds
            with pytest.raises(CallFailed, match="no answer within"):
                await llm.complete(big)
            took = time.monotonic() - started
            tick.cancel()
            wait_for(pools[0], 0)
            await calls(2)  # none left: answered here
            return answers, in_workers, took, max(stalls)
        finally:
            await llm.aclose()

    def echo(body: dict[str, Any], n: int) -> Reply:
        return Reply(content="echo:" + body["messages"][-1]["content"][:4])

    with LoopbackServer(echo) as srv:
        answers, in_workers, took, stall = asyncio.run(go(srv.url))
    assert answers == [f"echo:q{n:03d}" for n in range(12)]
    assert len(pools) == 1 and in_workers == [0, 4, 4, 0]
    assert took < 3 + 0.5 + 5  # its deadline (timeout and grace), roomy on a loaded machine
    assert stall < 1.0  # the event loop went on while the write to the stopped worker waited


@pytest.mark.slow
def test_a_fixed_pool_whose_workers_all_died_calls_here(caplog: pytest.LogCaptureFixture) -> None:
    """``processes=N`` with every worker dead: the calls are answered in this process, with one
    warning (they failed as provider errors before, each at once, and the run blamed the server)."""
    import time

    async def go(url: str) -> tuple[list[str], list[int]]:
        config = LLMConfig(model="openai/fixed-under-test", api_base=url, processes=1, timeout=10)
        llm = LLM(config)
        answers: list[str] = []
        in_worker: list[int] = []
        try:
            for n in range(4):
                if n == 2:  # the only worker dies
                    llm._pool._procs[0].kill()
                    deadline = time.monotonic() + 30
                    while llm._pool.running and time.monotonic() < deadline:
                        await asyncio.sleep(0.01)
                ask = [{"role": "user", "content": f"q{n:03d}"}]
                answers.append((await llm.complete(ask)).content or "")
                in_worker.append(llm._pool.answered)
        finally:
            await llm.aclose()
        return answers, in_worker

    def echo(body: dict[str, Any], n: int) -> Reply:
        return Reply(content="echo:" + body["messages"][-1]["content"])

    with caplog.at_level("WARNING"), LoopbackServer(echo) as srv:
        answers, in_worker = asyncio.run(go(srv.url))
    assert answers == [f"echo:q{n:03d}" for n in range(4)]
    assert in_worker == [1, 2, 2, 2]  # the last two answered here
    gone = [r for r in caplog.records if "no model worker process runs" in r.getMessage()]
    assert len(gone) == 1


@pytest.mark.slow
def test_a_write_cut_by_the_workers_kill_is_not_reported_as_never_retrieved(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A call whose large request is still being written to a stopped worker fails at its deadline;
    the worker is killed, and the unfinished write's error is taken (asyncio printed "Future exception
    was never retrieved" with a ConnectionResetError)."""
    import gc
    import os
    import signal

    from agentic_rubrics.exceptions import CallFailed
    from agentic_rubrics.llm.pool import WorkerPool

    async def go() -> None:
        pool = WorkerPool(1, answer_grace=0.5)
        try:
            await pool.ready()
            os.kill(pool._procs[0].pid, signal.SIGSTOP)
            request = {"model": "openai/x", "api_base": "http://127.0.0.1:9", "timeout": 1,
                       "messages": [{"role": "user", "content": "x" * 2_000_000}]}  # fmt: skip
            with pytest.raises(CallFailed, match="no answer within"):
                await pool.complete(request)
            for _ in range(100):  # the write's thread sees the pipe closed
                if not pool._queued[0]:
                    break
                await asyncio.sleep(0.05)
            assert not pool._queued[0]
            gc.collect()
        finally:
            await pool.close()

    with caplog.at_level("ERROR", logger="asyncio"):
        asyncio.run(go())
        gc.collect()
    assert not [r for r in caplog.records if "never retrieved" in r.getMessage()]


def test_a_request_json_cannot_carry_is_made_here() -> None:
    """Workers change speed, never an answer: parameters that cannot travel as JSON are refused by
    the configuration (naming the field), and a request the pool cannot send is made in this
    process."""
    from pydantic import ValidationError

    from agentic_rubrics.exceptions import CallFailed
    from agentic_rubrics.llm.pool import Unsendable, WorkerPool

    with pytest.raises(ValidationError, match="extra_params must hold JSON values only"):
        LLMConfig(model="openai/x", extra_params={"metadata": {"tag": object()}})
    none = WorkerPool(0)  # no worker at all: nothing is started
    with pytest.raises(Unsendable):
        asyncio.run(none.complete({"model": "openai/x", "tag": {1, 2}}))
    with pytest.raises(CallFailed, match="no model worker process is running"):
        asyncio.run(none.complete({"model": "openai/x", "timeout": 1}))
    assert none.calls == 0

    class RefusingPool(InProcessPool):
        async def complete(self, kwargs: dict[str, Any]) -> Completion:
            self.calls += 1
            raise Unsendable("not JSON")

    pools: list[RefusingPool] = []

    def start(processes: int) -> Any:
        pools.append(RefusingPool(processes))
        pools[-1].started = True
        return pools[-1]

    async def go(url: str) -> list[str]:
        llm = LLM(LLMConfig(model="openai/auto-under-test", api_base=url, timeout=30))
        llm._auto = AutoPool(4, cpus=2, min_calls=2, saturation=0.0, max_processes=1, start=start)
        ask = [{"role": "user", "content": "q"}]
        try:
            return [(await llm.complete(ask, repeat=i)).content or "" for i in range(4)]
        finally:
            await llm.aclose()

    async def not_json(url: str) -> None:
        llm = LLM(LLMConfig(model="openai/x", api_base=url, timeout=30, processes=0))
        try:
            await llm.complete([{"role": "user", "content": b"bytes"}])  # type: ignore[dict-item]
        finally:
            await llm.aclose()

    with LoopbackServer(lambda body, n: Reply(content=f"a{n}")) as srv:
        assert asyncio.run(go(srv.url)) == ["a0", "a1", "a2", "a3"]
        with pytest.raises(
            CallFailed, match="not JSON"
        ) as failed:  # a located failure, no TypeError
            asyncio.run(not_json(srv.url))
        assert failed.value.kind == "bad_request" and len(srv.requests) == 4
    assert pools[0].calls == 2  # offered to the pool, then made here
