"""The prompts say what the paper's say: the rubric agent's guidance in full, the issue-only ablation as
that same prompt without exploration, and the judge's JSON-only answer by default.

Before: the agent prompt had lost "collectively exhaustive", API stability and the skip-marker example
of the integrity axis, the runtime axis's distinguishability and the requirements step; the ablation
had a prompt of its own (so the ablation changed two things at once); the judge asked for "reasoning
first if you need it".
"""

from __future__ import annotations

import re
from typing import Any

from agentic_rubrics.explore.agent import check_vocabulary
from agentic_rubrics.judge.judges import JudgeConfig, LLMJudge
from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.prompts import load_prompt

AGENT = load_prompt("rubric_agent")
COMMON = {
    "repo": "acme/x",
    "workspace": "/workspace",
    "max_turns": 30,
    "checks": check_vocabulary(),
}


def system(explore: bool, native: bool = False) -> str:
    return AGENT.render("system", **COMMON, explore=explore, native_tools=native)


def between(text: str, start: str, end: str) -> str:
    return text[text.index(start) : text.index(end, text.index(start)) + len(end)]


def test_the_agent_prompt_carries_the_papers_guidance() -> None:
    text = " ".join(system(explore=True).split())
    assert "mutually exclusive and collectively exhaustive" in text
    assert "API stability" in text and "@pytest.mark.skip" in text  # the integrity axis
    assert "distinguish a correct patch from a plausible but wrong one" in text  # the runtime axis
    assert "the functional ones" in text and "the non-functional ones" in text  # requirements step
    steps = re.findall(r"^(\d)\. ", system(explore=True), re.M)
    assert steps == ["1", "2", "3", "4", "5", "6"]  # numbered in order, none skipped


def test_the_issue_only_ablation_is_the_same_prompt_without_exploration() -> None:
    agent, ablation = system(explore=True), system(explore=False)
    # what the rubric must be is word for word the same
    for start, end in [
        ("with items along four axes:", "3 = must."),
        ("The file's format:", "An item may carry"),
        ("An item may carry", f"Example: `{check_vocabulary()[-1]['example']}`"),
    ]:
        same = between(agent, start, end).replace(
            " grounded in the real file and symbol names you found", " grounded in"
        )
        assert same == between(ablation, start, end).replace(
            " grounded in the names the issue gives", " grounded in"
        ), start
    # and nothing about exploring or tools is left in the ablation
    for word in ("```bash", "```view", "validate", "submit", "Find and read the code", "turns"):
        assert word not in ablation, word
    assert "You cannot see the repository" in ablation and "```yaml block" in ablation
    user = AGENT.render("instance", issue="x", repo="acme/x", explore=False, errors="")
    assert "Write rubrics.yaml for this issue." in user


def test_native_tools_replace_the_fenced_tool_blocks() -> None:
    native = system(explore=True, native=True)
    assert "```bash" not in native and "call exactly one tool" in native
    assert "```bash" in system(explore=True)


def judge(**config: Any) -> LLMJudge:
    model = LLMConfig(model="openai/x")
    return LLMJudge(LLM(model), JudgeConfig(kind="llm", model=model, **config))


def test_the_judge_answers_json_only_by_default_and_reasons_on_request() -> None:
    variables = {"issue": "i", "items": [{"id": "SA1", "axis": "spec_alignment_rubrics",
                 "weight": 3, "description": "Sets x"}], "patch": "p", "item_ids": ["SA1"]}  # fmt: skip
    prompt = load_prompt("judge")
    default = " ".join(prompt.render("system", **variables, reasoning=False).split())
    assert "a single JSON object" in default and "nothing else: no reasoning" in default
    assert "reasoning first" not in default
    reasoning = " ".join(prompt.render("system", **variables, reasoning=True).split())
    assert "reasoning first if you need it" in reasoning
    plain, reasons = judge(), judge(answer_form="reasoning")
    assert plain.name == f"openai/x + {prompt.ref}"  # the file's hash: the paper's form
    assert reasons.name != plain.name and reasons.name.startswith("openai/x + judge@sha256:")
    a = load_config(None, {"judge": {"kind": "llm", "model": {"model": "openai/x"}}})
    b = load_config(
        None,
        {"judge": {"kind": "llm", "model": {"model": "openai/x"}, "answer_form": "reasoning"}},
    )
    assert a.content_hash() != b.content_hash()  # a run folder cannot mix the two
