"""Models as providers really take them: the request litellm builds for each kind of model, asserted on
the wire (loopback servers speaking OpenAI's and Anthropic's APIs), and each ending with judged verdicts.

Before per-model parameters every call sent ``temperature: 0.0`` and the classifier
``max_tokens: 16``: litellm refused o3-mini and gpt-5 before sending (every verdict ``missing:
provider_error``), Anthropic with extended thinking answered 400, and a reasoning model starved on 16
tokens.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentic_rubrics.judge.judges import JudgeConfig, LLMJudge
from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.llm.reply import strip_reasoning
from agentic_rubrics.rank.classifier import PatchClassifier
from agentic_rubrics.testing import (
    AnthropicServer,
    LoopbackServer,
    Reply,
    message_text,
    requested_ids,
)

from .conftest import item, rubric, run_closing

RUBRIC = rubric(
    file_change=[item("FC1", 3, {"touches": "core.py"})],
    spec_alignment=[item("SA1", 3), item("SA2", 2)],
    runtime=[item("RT1", 1)],
)
PATCH = "--- a/core.py\n+++ b/core.py\n@@ -1 +1 @@\n-x = 1\n+x = 2\n"
ISSUE = "x should be 2"
JUDGED = {"FC1": ("checked", 1), "SA1": ("judged", 1), "SA2": ("judged", 0), "RT1": ("judged", 1)}


def answer(body: dict[str, Any], n: int) -> Reply:
    """Judge prompts get SA2 = 0 and the rest 1; classifier prompts a written probability."""
    text = message_text((body.get("messages") or [{}])[-1])
    if "Does this patch resolve the issue?" in text:
        return Reply(content="YES 0.8")
    return Reply(content=json.dumps({i: int(i != "SA2") for i in requested_ids(body)}))


def config(model: str, url: str, **settings: Any) -> LLMConfig:
    return LLMConfig(model=model, api_base=url, timeout=20.0, max_retries=0, **settings)


def judged(cfg: LLMConfig) -> dict[str, tuple[str, int | None]]:
    judge = LLMJudge(LLM(cfg), JudgeConfig(kind="llm", model=cfg))
    verdicts = run_closing(
        judge.judge(
            instance_id="t", issue=ISSUE, rubric=RUBRIC, candidate_id="c", patch=PATCH, repeat=0
        ),
        judge.llm,
    )
    return {v.item_id: (v.origin, v.value) for v in verdicts}


def classified(cfg: LLMConfig) -> float | None:
    llm = LLM(cfg)
    return run_closing(PatchClassifier(llm).score(ISSUE, PATCH, task="t"), llm)


def sent(body: dict[str, Any]) -> dict[str, Any]:
    """The request's parameters (everything but the conversation)."""
    return {k: v for k, v in body.items() if k not in ("messages", "system", "model")}


def test_openai_chat_model_gets_temperature_and_logprobs() -> None:
    with LoopbackServer(answer) as srv:
        cfg = config("openai/gpt-4o-mini", srv.url)
        assert judged(cfg) == JUDGED
        assert sent(srv.requests[0]) == {"temperature": 0.0, "max_tokens": 4096}
        assert classified(cfg) == 0.8
        assert sent(srv.requests[1]) == {
            "temperature": 0.0,
            "max_tokens": 32,
            "logprobs": True,
            "top_logprobs": 5,
        }


@pytest.mark.parametrize("model", ["openai/o3-mini", "openai/gpt-5"])
def test_openai_reasoning_model_gets_no_temperature_and_room_to_reason(model: str) -> None:
    with LoopbackServer(answer) as srv:
        cfg = config(model, srv.url)
        assert judged(cfg) == JUDGED  # before: litellm refused temperature=0.0, nothing was sent
        # the answer's 4096 tokens plus 16384 for reasoning at the default effort
        assert sent(srv.requests[0]) == {"max_completion_tokens": 4096 + 16384}
        assert classified(cfg) == 0.8  # the written probability: these models give no logprobs
        assert sent(srv.requests[1]) == {"max_completion_tokens": 32 + 16384}
        low = cfg.model_copy(update={"reasoning_effort": "low"})
        assert judged(low) == JUDGED
        assert sent(srv.requests[2]) == {
            "max_completion_tokens": 4096 + 4096,
            "reasoning_effort": "low",
        }
        assert srv.paths == ["/v1/chat/completions"] * 3


def test_anthropic_messages_without_thinking() -> None:
    with AnthropicServer(answer) as srv:
        cfg = config("anthropic/claude-sonnet-4-20250514", srv.url)
        assert judged(cfg) == JUDGED
        body = srv.requests[0]
        assert srv.paths == ["/v1/messages"]
        assert sent(body) == {"temperature": 0.0, "max_tokens": 4096}
        assert "untrusted data" in message_text({"content": body["system"]})  # the system prompt
        assert classified(cfg) == 0.8
        assert sent(srv.requests[1]) == {"temperature": 0.0, "max_tokens": 32}


@pytest.mark.parametrize(
    ("settings", "thinking", "max_tokens"),
    [
        ({"reasoning_effort": "low"}, {"type": "enabled", "budget_tokens": 1024}, 4096 + 4096),
        (
            {"extra_params": {"thinking": {"type": "enabled", "budget_tokens": 2048}}},
            {"type": "enabled", "budget_tokens": 2048},
            4096 + 2048,
        ),
    ],
    ids=["reasoning_effort", "thinking"],
)
def test_anthropic_extended_thinking_gets_no_temperature_and_a_budget_above_it(
    settings: dict[str, Any], thinking: dict[str, Any], max_tokens: int
) -> None:
    with AnthropicServer(answer) as srv:
        cfg = config("anthropic/claude-sonnet-4-20250514", srv.url, **settings)
        # before: temperature 0.0 went along and the API refused it (temperature 1 only)
        assert judged(cfg) == JUDGED
        assert sent(srv.requests[0]) == {"max_tokens": max_tokens, "thinking": thinking}
        # before: max_tokens 16, not above the thinking budget, refused as well
        assert classified(cfg) == 0.8
        classifier = sent(srv.requests[1])
        assert classifier["max_tokens"] > thinking["budget_tokens"]
        assert "temperature" not in classifier and "logprobs" not in classifier


@pytest.mark.parametrize(
    ("params", "refusal"),
    [
        ({"temperature": 0.0}, "`temperature` may only be set to 1 when thinking is enabled"),
        ({"max_tokens": 2048}, "`max_tokens` must be greater than `thinking.budget_tokens`"),
        ({"thinking": {"type": "enabled", "budget_tokens": 512}}, "greater than or equal to 1024"),
    ],
    ids=["temperature", "max_tokens", "budget"],
)
def test_anthropic_server_refuses_what_the_api_refuses(
    params: dict[str, Any], refusal: str
) -> None:
    """The fake's verdicts are worth something only if it refuses like the real API (litellm direct)."""
    from agentic_rubrics.llm.door import import_litellm

    litellm = import_litellm()
    request = {
        "model": "anthropic/claude-sonnet-4-20250514",
        "messages": [{"role": "user", "content": "hi"}],
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 2048},
        **params,
    }
    with AnthropicServer(answer) as srv:
        with pytest.raises(litellm.BadRequestError, match=refusal.replace("`", ".")):
            litellm.completion(
                **request,
                api_base=srv.url,
                api_key="k",
                timeout=20,
                max_retries=0,
            )
        assert srv.answered == []


VLLM = {"reasoning_content": None, "tool_calls": []}
"""What vLLM sends beside the content when it runs without a reasoning parser: litellm then leaves a
``<think>`` block in the content (it lifts one out only when the message has no reasoning field)."""


@pytest.mark.parametrize(
    "thought",
    [
        '<think>Is SA2 met? No.\nYES would be wrong.\n```bash\nls\n```\n{"SA2": 1}</think>\n',
        "Is SA2 met? No.\nYES would be wrong.\n</think>\n",  # the chat template opened the block
    ],
    ids=["think-block", "template-opened"],
)
def test_local_openai_compatible_server_with_a_thinking_model(thought: str) -> None:
    def script(body: dict[str, Any], n: int) -> Reply:
        reply = answer(body, n)
        return Reply(content=thought + (reply.content or ""), message_extra=VLLM)

    with LoopbackServer(script) as srv:
        cfg = config("hosted_vllm/Qwen3-32B", srv.url)
        assert judged(cfg) == JUDGED  # the JSON inside the thought is not the answer
        assert sent(srv.requests[0]) == {"temperature": 0.0, "max_tokens": 4096}
        # before: the thought's "No." was read as the answer (P = 0)
        assert classified(cfg) == 0.8
        assert sent(srv.requests[1]) == {
            "temperature": 0.0,
            "max_tokens": 32,
            "logprobs": True,
            "top_logprobs": 5,
        }
        # a model that thinks aloud gets room to think when told so
        roomy = cfg.model_copy(update={"reasoning_tokens": 8192})
        assert classified(roomy) == 0.8
        assert sent(srv.requests[2])["max_tokens"] == 32 + 8192


@pytest.mark.parametrize(
    ("text", "answer_text"),
    [
        ('<think>a {json} thought</think>\n{"A": 1}', '{"A": 1}'),
        ("the template opened it</think>YES 0.9", "YES 0.9"),
        ("<THINKING>x</THINKING>ok", "ok"),
        ("<think>cut off while thinking", ""),
        ("<think>a<think>nested</think>b</think>after", "after"),
        ("no thought here", "no thought here"),
    ],
)
def test_reasoning_is_cut_out_of_the_answer(text: str, answer_text: str) -> None:
    assert strip_reasoning(text) == answer_text
