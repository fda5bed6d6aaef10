"""Hostile model replies and transports, over real HTTP (litellm -> the loopback server): each ends as a
``missing`` verdict with a reason within the call's bounds, never a traceback or a hang, and a resumed
run reads a cached bad reply without crashing."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.judge.judges import JudgeConfig, LLMJudge
from agentic_rubrics.llm.door import LLM, LLMConfig, import_litellm
from agentic_rubrics.protocols import Completion
from agentic_rubrics.rank.classifier import PatchClassifier, yes_probability
from agentic_rubrics.testing import LoopbackServer, Reply, requested_ids

from .conftest import item, rubric, run_closing

RUBRIC = rubric(
    file_change=[item("FC1", 3, {"touches": "core.py"})],
    spec_alignment=[item("SA1", 3), item("SA2", 2)],
    runtime=[item("RT1", 1)],
)
ASKED = ["SA1", "SA2", "RT1"]
PATCH = "--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
FC1 = ("checked", 1, "touches")
GUARD = 60.0  # seconds: far above any of these calls' bounds; only a hang reaches it
Script = Callable[[dict[str, Any], int], Reply]


@pytest.fixture(scope="module", autouse=True)
def _litellm_imported() -> None:
    import_litellm()  # once, before any deadline is measured


def llm_for(server: LoopbackServer, cache: Path | None = None, **cfg: Any) -> LLM:
    config = LLMConfig(
        **{
            "model": "openai/judge-under-test",
            "api_base": server.url,
            "timeout": 10.0,  # roomy on a loaded machine; the trickle tests set their own
            "max_retries": 2,
            "backoff_initial": 0.01,
            "backoff_max": 0.3,
            **cfg,
        }
    )
    return LLM(config, cache_dir=cache)


def judge_with(llm: LLM) -> dict[str, tuple[str, int | None, str | None]]:
    judge = LLMJudge(llm, JudgeConfig(kind="llm", model=llm.config))

    async def go() -> list[Any]:
        try:
            return await asyncio.wait_for(
                judge.judge(
                    instance_id="t",
                    issue="x should be 2",
                    rubric=RUBRIC,
                    candidate_id="c",
                    patch=PATCH,
                ),
                GUARD,
            )
        finally:
            await llm.aclose()

    return {v.item_id: (v.origin, v.value, v.reason) for v in asyncio.run(go())}


def every(body: str) -> Script:
    return lambda b, n: Reply(content=body)


# --------------------------------------------------------------------------- model replies

DEEP = '{"SA1": ' * 5000 + "1" + "}" * 5000


def test_deeply_nested_reply_is_unparsable_and_a_resume_reads_it_from_the_cache(
    tmp_path: Path,
) -> None:
    with LoopbackServer(every(DEEP)) as srv:
        got = judge_with(llm_for(srv, tmp_path / "cache"))
        assert got == {"FC1": FC1, **dict.fromkeys(ASKED, ("missing", None, "unparsable_reply"))}
        assert len(srv.requests) == 1
        # resuming against the same server (the cache is per server): the cached reply is read,
        # not asked again
        srv.script = every("{}")
        assert judge_with(llm_for(srv, tmp_path / "cache")) == got
        assert len(srv.requests) == 1


def test_http_200_without_choices_is_an_empty_reply_and_not_retried() -> None:
    body = {"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}
    with LoopbackServer(lambda b, n: Reply(raw=json.dumps(body))) as srv:
        got = judge_with(llm_for(srv))
        assert got == {"FC1": FC1, **dict.fromkeys(ASKED, ("missing", None, "empty_reply"))}
        assert len(srv.requests) == 1


def test_an_id_answered_twice_with_different_values_is_invalid() -> None:
    raw = '{"SA1": 0, "SA1": 1, "SA2": 1, "SA2": 1, "RT1": 0}'
    with LoopbackServer(every(raw)) as srv:
        got = judge_with(llm_for(srv))
    assert got == {
        "FC1": FC1,
        "SA1": ("missing", None, "invalid_value"),  # Python's json alone would keep the last: 1
        "SA2": ("judged", 1, None),  # the same value twice says the same thing
        "RT1": ("judged", 0, None),
    }


def test_ids_with_control_characters_or_lone_surrogates_are_not_the_ids_asked(
    tmp_path: Path,
) -> None:
    # keys with a NUL, a newline and an escape sequence (JSON escapes in the reply's text), and one
    # with a lone surrogate in the reply's text itself (no UTF-8 file can hold it: the cache must)
    raw = '{"SA1\\u0000": 1, "SA2\\n": 1, "RT1\ud800": 0, "\\u001b[31mRT1": 1}'
    with LoopbackServer(every(raw)) as srv:
        got = judge_with(llm_for(srv, tmp_path / "cache"))
        assert got == {"FC1": FC1, **dict.fromkeys(ASKED, ("missing", None, "skipped_by_judge"))}
        assert len(srv.requests) == 4  # the batch, then each id once alone
        srv.script = every("{}")  # the same server (the cache is per server) answers otherwise now
        assert judge_with(llm_for(srv, tmp_path / "cache")) == got  # the cache held every reply
        assert len(srv.requests) == 4


@pytest.mark.parametrize("logprob", [None, 1000, float("nan"), "high"])
def test_logprobs_null_or_absurd_fall_back_to_the_written_answer(logprob: Any) -> None:
    lp = [
        {"token": "YES", "logprob": logprob, "top_logprobs": [{"token": "YES", "logprob": logprob}]}
    ]
    with LoopbackServer(lambda b, n: Reply(content="YES 0.75", logprobs=lp)) as srv:
        llm = llm_for(srv)
        p = run_closing(PatchClassifier(llm).score("x should be 2", PATCH, task="t"), llm)
    assert p == 0.75


def test_yes_probability_never_trusts_an_impossible_logprob() -> None:
    def completion(lp: list[Any], content: str = "NO") -> Completion:
        return Completion(content=content, logprobs=lp)

    good = [{"token": "YES", "logprob": -0.1, "top_logprobs": [
        {"token": "YES", "logprob": -0.1}, {"token": "NO", "logprob": -2.4}]}]  # fmt: skip
    assert 0.9 < (yes_probability(completion(good)) or 0) < 0.92
    for bad in (1000, 1e308, float("inf"), float("nan"), None, True, "x"):
        lp = [{"token": "YES", "logprob": bad, "top_logprobs": [{"token": "YES", "logprob": bad}]}]
        assert yes_probability(completion(lp)) == 0.0  # the written NO, not an overflow or a P > 1


# --------------------------------------------------------------------------- transport


@pytest.mark.parametrize("value", ["60s", "soon", "nan", "-5", "inf", "1e400", ""])
def test_any_retry_after_is_read_defensively_and_capped(value: str) -> None:
    def script(body: dict[str, Any], n: int) -> Reply:
        if n == 0:
            return Reply(status=429, headers={"Retry-After": value})
        return Reply(content=json.dumps(dict.fromkeys(requested_ids(body), 1)))

    with LoopbackServer(script) as srv:
        started = time.monotonic()
        got = judge_with(llm_for(srv))
        assert got == {"FC1": FC1, **dict.fromkeys(ASKED, ("judged", 1, None))}
        assert len(srv.requests) == 2
        assert time.monotonic() - started < GUARD / 2  # 60 s is capped at backoff_max (0.3 s)


def test_retry_after_parsing() -> None:
    from agentic_rubrics.llm.errors import parse_retry_after

    assert parse_retry_after("60") == 60.0 and parse_retry_after("60s") == 60.0
    assert parse_retry_after("1.5") == 1.5 and parse_retry_after("250", unit=0.001) == 0.25
    for junk in ("soon", "nan", "inf", "-5", "1e400", "", "Wed, 99 Foo", None, "9" * 200):
        assert parse_retry_after(junk) is None, junk
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0  # a date in the past
    assert parse_retry_after("Wed, 21 Oct 2099 07:28:00 GMT") == 3600.0  # capped


TRICKLED = Reply(content="x" * 2000, trickle=0.05)  # about 120 s to send, one byte at a time


def test_a_trickled_body_ends_at_the_calls_timeout() -> None:
    with LoopbackServer(lambda b, n: TRICKLED) as srv:
        started = time.monotonic()
        got = judge_with(llm_for(srv, max_retries=1, timeout=1.0))
        assert got == {"FC1": FC1, **dict.fromkeys(ASKED, ("missing", None, "provider_error"))}
        assert len(srv.requests) == 2  # a timeout is transient: retried once, then given up
        assert time.monotonic() - started < GUARD / 2  # bound: 2 x 1 s + one backoff


def test_a_trickled_body_ends_at_the_timeout_in_worker_processes() -> None:
    def script(body: dict[str, Any], n: int) -> Reply:
        return Reply(content="ready") if n == 0 else TRICKLED

    with LoopbackServer(script) as srv:
        llm = llm_for(srv, max_retries=0, processes=1, timeout=1.0)
        warm = [{"role": "user", "content": "warm up"}]
        assert asyncio.run(llm.complete(warm)).content == "ready"  # the worker has started
        started = time.monotonic()
        got = judge_with(llm)
        assert got == {"FC1": FC1, **dict.fromkeys(ASKED, ("missing", None, "provider_error"))}
        assert len(srv.requests) == 2
        assert time.monotonic() - started < GUARD / 2  # bound: 1 s, plus the door's 5 s guard
