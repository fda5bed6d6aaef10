"""``processes="auto"``: worker processes for litellm only where the calls would saturate a core."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.llm.pool import (
    AUTO_MIN_CALLS,
    AutoPool,
    planned_processes,
)
from agentic_rubrics.payloads import Completion
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
        self.started = False

    def is_serving(self) -> bool:
        return self.started

    async def complete(self, kwargs: dict[str, Any]) -> Completion:
        from agentic_rubrics.llm.door import import_litellm
        from agentic_rubrics.llm.reply import to_completion

        self.calls += 1
        litellm = import_litellm()
        response = await litellm.acompletion(**kwargs)
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
def test_a_dead_worker_takes_no_calls_and_auto_comes_back_here_when_all_are_gone() -> None:
    """Real worker processes, killed one after the other: the live one takes every call (none is
    sent to the dead one and fails), and once none is left auto answers in this process again."""
    import time

    from agentic_rubrics.llm.pool import WorkerPool

    pools: list[WorkerPool] = []

    def start(processes: int) -> WorkerPool:
        pools.append(WorkerPool(processes))
        return pools[-1]

    def kill(pool: WorkerPool, index: int) -> None:
        left = pool.running - 1
        pool._procs[index].kill()
        deadline = time.monotonic() + 30  # the pool sees the pipe close at once; roomy when loaded
        while pool.running > left and time.monotonic() < deadline:
            time.sleep(0.01)
        assert pool.running == left

    async def go(url: str) -> tuple[list[str], list[int]]:
        config = LLMConfig(
            model="openai/auto-under-test", api_base=url, concurrency=4, timeout=30, max_retries=0
        )
        llm = LLM(config)
        llm._auto = AutoPool(4, cpus=2, min_calls=2, saturation=0.0, max_processes=2, start=start)
        ask = [{"role": "user", "content": "q"}]
        answers: list[str] = []
        in_workers: list[int] = []

        async def calls(n: int) -> None:
            for _ in range(n):
                answers.append((await llm.complete(ask, repeat=len(answers))).content or "")
            in_workers.append(pools[0].calls if pools else 0)

        try:
            await calls(2)  # the first is not measured; the second decides: two workers start
            await pools[0].ready()
            assert pools[0].running == 2
            await calls(4)  # both started: the pool takes them
            kill(pools[0], 0)
            await calls(4)  # one dead: the other takes all four
            kill(pools[0], 1)
            await calls(2)  # none left: answered here
            return answers, in_workers
        finally:
            await llm.aclose()

    with LoopbackServer(lambda body, n: Reply(content=f"a{n}")) as srv:
        answers, in_workers = asyncio.run(go(srv.url))
    assert answers == [f"a{n}" for n in range(12)]
    assert len(pools) == 1 and in_workers == [0, 4, 8, 8]
