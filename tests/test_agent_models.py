"""The rubric agent as real models drive it: native tool calls where litellm says the model has them
(OpenAI, Anthropic with extended thinking), text actions otherwise, reasoning kept out of the parsing,
and a long exploration kept within a 32k context window.

Before: a native tool call (no text) was a format error every turn; a ``<think>`` block holding a code
fence gave "expected exactly one tool block, found 2"; Anthropic with thinking refused the request's
temperature; the conversation grew until a 32k model refused it (``context_window``).
"""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR, load_example
from agentic_rubrics.explore.agent import AgentExplorer, ExplorationFailed
from agentic_rubrics.llm.door import LLM, LLMConfig, import_litellm
from agentic_rubrics.sandbox.local import LocalCopySandbox
from agentic_rubrics.testing import (
    AnthropicServer,
    LoopbackServer,
    Reply,
    fake_model,
    message_text,
    register_script,
    scripted_calls,
)
from agentic_rubrics.types import Task

from .conftest import run_closing
from .test_model_matrix import VLLM
from .test_sandbox_bwrap import require_bwrap

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = load_example(EXAMPLES_DIR / "harbourline__pagewise-214")
Result = tuple[Any, list[dict[str, Any]]]


def explore(
    agent: AgentExplorer, repo: Path = EXAMPLE.repo_dir, task: Task | None = None
) -> Result:
    """Explore ``repo`` in a throwaway copy (the agent's own logic is under test, not isolation)."""

    async def go() -> Result:
        async with LocalCopySandbox(repo) as sb:
            try:
                return await agent.explore(task or EXAMPLE.task.public(), sb)
            except ExplorationFailed as failed:
                return failed, failed.steps

    return run_closing(go(), agent.llm)


def agent(model: str, url: str | None = None, **settings: Any) -> AgentExplorer:
    config = LLMConfig(model=model, api_base=url, timeout=30.0, max_retries=0, **settings)
    return AgentExplorer(LLM(config), max_turns=12)


def test_native_tool_calls_over_http() -> None:
    """gpt-4o-mini takes native tool calls (litellm says so): replies hold calls and no text."""
    script = fake_model()

    def silent(body: dict[str, Any], n: int) -> Reply:  # a model that acts by native calls only
        reply = script({**body, "tools": body.get("tools") or [{}]}, n)
        return Reply(content=None, tool_calls=reply.tool_calls)

    with LoopbackServer(silent) as srv:
        rubric, steps = explore(agent("openai/gpt-4o-mini", srv.url))
        assert not isinstance(rubric, ExplorationFailed), steps
        first, second = srv.requests[0], srv.requests[1]
    assert [t["function"]["name"] for t in first["tools"]] == [
        "bash", "view", "search", "validate", "submit",
    ]  # fmt: skip
    assert first["parallel_tool_calls"] is False
    # the call went back as the assistant's tool call, its output as the tool's answer
    assert second["messages"][2]["tool_calls"][0]["function"]["name"] == "bash"
    assert second["messages"][3]["role"] == "tool"
    assert second["messages"][3]["tool_call_id"] == second["messages"][2]["tool_calls"][0]["id"]
    assert "pagewise/windows.py" in second["messages"][3]["content"]  # a real listing
    assert [s["tool"] for s in steps] == ["bash", "search", "view", "bash", "validate", "submit"]
    assert all(s["native"] for s in steps)
    assert rubric.item("FC1").check.name == "touches_symbol"  # grounded in the file it viewed
    assert rubric.item("FC1").check.path == "pagewise/windows.py"


def test_anthropic_extended_thinking_drives_the_tool_loop() -> None:
    """The server refuses a tool loop whose last assistant turn lost its signed thinking block."""
    with AnthropicServer(fake_model()) as srv:
        explorer = agent("anthropic/claude-sonnet-4-20250514", srv.url, reasoning_effort="low")
        rubric, steps = explore(explorer)
        assert not isinstance(rubric, ExplorationFailed), steps
        assert len(srv.answered) == len(srv.requests) == len(steps)
        later = srv.requests[-1]
    assert "temperature" not in later and later["thinking"]["type"] == "enabled"
    assert later["max_tokens"] > later["thinking"]["budget_tokens"]
    last_assistant = [m for m in later["messages"] if m["role"] == "assistant"][-1]
    assert last_assistant["content"][0]["type"] == "thinking"  # sent back, signature intact
    assert any(b.get("type") == "tool_use" for b in last_assistant["content"])


def test_thinking_text_with_a_code_fence_is_not_an_action() -> None:
    """Qwen3 behind vLLM without a reasoning parser: the thought arrives in the text."""
    script = fake_model()

    def thinking(body: dict[str, Any], n: int) -> Reply:
        reply = script(body, n)
        thought = "<think>Maybe list files first:\n```bash\nls -R\n```\nor search.</think>\n"
        return Reply(content=thought + (reply.content or ""), message_extra=VLLM)

    with LoopbackServer(thinking) as srv:
        rubric, steps = explore(agent("hosted_vllm/Qwen3-32B", srv.url))
        assert "tools" not in srv.requests[0]  # litellm knows no function calling for it: text
    assert not isinstance(rubric, ExplorationFailed), [s.get("error") for s in steps]
    assert [s.get("error") for s in steps] == [None] * len(steps)


def test_a_scripted_local_model_plays_the_agent_with_native_calls() -> None:
    model = register_script("local/fake-agent-native", fake_model(), function_calling=True)
    rubric, steps = explore(agent(model))
    assert not isinstance(rubric, ExplorationFailed), steps
    calls = scripted_calls(model)
    assert "tools" in calls[0] and all(s["native"] for s in steps)


def test_several_calls_in_one_reply_run_the_first_and_answer_the_rest() -> None:
    script = fake_model()

    def greedy(body: dict[str, Any], n: int) -> Reply:
        reply = script(body, n)
        if n == 0:
            extra = {"name": "bash", "arguments": {"command": "rm -rf pagewise"}}
            return Reply(content="", tool_calls=[*(reply.tool_calls or []), extra])
        if n == 1:
            return Reply(content="", tool_calls=[{"name": "view", "arguments": "not json"}])
        return reply

    model = register_script("local/greedy", greedy, function_calling=True)
    rubric, steps = explore(agent(model))
    assert not isinstance(rubric, ExplorationFailed)
    second = scripted_calls(model)[1]["messages"]
    answers = [m for m in second if m["role"] == "tool"]
    assert len(answers) == 2 and "Not run: one tool call per turn" in answers[1]["content"]
    third = scripted_calls(model)[2]["messages"]
    assert "must be a JSON object" in third[-1]["content"] and third[-1]["role"] == "tool"
    assert steps[1]["error"] == "format"


# --------------------------------------------------------------------------- a long exploration


def _real_repos() -> Path:
    return Path(os.environ.get("AGENTIC_RUBRICS_REPOS_DATA") or ROOT.parent / "shared/data/repos")


FLASK = _real_repos() / "pallets__flask.git.tar"
WINDOW = 32_768


def flask_tree(tmp_path: Path) -> Path:
    with tarfile.open(FLASK) as tar:
        tar.extractall(tmp_path / "mirrors", filter="data")
    mirror = tmp_path / "mirrors" / "pallets__flask.git"
    refs = subprocess.run(
        ["git", "--git-dir", str(mirror), "for-each-ref", "--format=%(objectname)", "refs/base/"],
        check=True, capture_output=True, text=True,
    ).stdout.split()  # fmt: skip
    tree = tmp_path / "flask"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "--git-dir", str(mirror), "archive", sorted(refs)[0]],
        check=True,
        capture_output=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def vllm_window(litellm: Any, script: Any) -> Any:
    """A server that refuses, in vLLM's words, a request longer than the window (real tokenizer)."""

    def tokens(message: dict[str, Any]) -> int:  # cl100k_base, as litellm ships it; 4 per message
        return 4 + len(litellm.encoding.encode(message_text(message), disallowed_special=()))

    def serve(body: dict[str, Any], n: int) -> Reply:
        used = sum(tokens(m) for m in body["messages"]) + body["max_tokens"]
        if used > WINDOW:
            return Reply(
                status=400,
                error=f"This model's maximum context length is {WINDOW} tokens. However, you"
                f" requested {used} tokens. Please reduce the length of the messages or completion.",
            )
        return script(body, n)

    return serve


@pytest.mark.skipif(not FLASK.is_file(), reason=f"{FLASK} is absent (AGENTIC_RUBRICS_REPOS_DATA)")
def test_a_long_exploration_of_a_real_repository_fits_a_32k_model(tmp_path: Path) -> None:
    litellm = import_litellm()
    model = "hosted_vllm/qwen-32k-under-test"
    litellm.register_model(
        {model: {"litellm_provider": "hosted_vllm", "mode": "chat", "max_input_tokens": WINDOW}}
    )
    files = "find . -name '*.py' -size +6k | sort"
    turns = 16

    def script(body: dict[str, Any], n: int) -> Reply:
        turn = 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")
        if turn <= turns:  # read one large file after another: ~10,000 characters each
            command = f'f=$({files} | sed -n {turn}p); echo "== $f"; cat "$f"'
        elif turn == turns + 1:  # a rubric grounded in the file the latest output shows
            seen = message_text(body["messages"][-1]).split("== ./", 1)[1].split("\n", 1)[0]
            command = f"cat > rubrics.yaml <<'EOF'\n{grounded(seen)}EOF"
        else:
            command = ""
        tool = "bash" if command else "submit"
        return Reply(content=f"THOUGHT: turn {turn}. I read on.\n\n```{tool}\n{command}\n```")

    with LoopbackServer(vllm_window(litellm, script)) as srv:
        explorer = AgentExplorer(
            LLM(LLMConfig(model=model, api_base=srv.url, timeout=30.0, max_retries=0)),
            max_turns=turns + 3,
        )
        task = Task(instance_id="pallets__flask-long", repo="pallets/flask", problem_statement=(
            "`Flask.make_response` should accept a tuple (body, status, headers) ..."))  # fmt: skip
        rubric, steps = explore(explorer, flask_tree(tmp_path), task)
        refused = len(srv.requests) - len(srv.answered)
    assert not isinstance(rubric, ExplorationFailed), (rubric, steps[-1])
    assert refused == 0  # every request fitted the window, by the server's own count
    read = sum(s.get("observation_chars", 0) for s in steps)
    assert read > 4 * WINDOW  # more than the window holds, even at 4 characters a token
    assert steps[-1]["elided_outputs"] >= turns // 2
    assert str(rubric.item("FC1").check.path).endswith(".py")


def grounded(path: str) -> str:
    """A valid rubric whose first item names the file the agent saw last."""
    lines = ["metadata:", '  task_summary: "t"', '  underlying_bug: "b"', "axes:"]
    for axis, prefix in (("file_change", "FC"), ("spec_alignment", "SA"), ("integrity", "IN"),
                         ("runtime", "RT")):  # fmt: skip
        lines.append(f"  {axis}_rubrics:")
        for n in range(1, 5):
            text, check = f"Leaves {prefix}{n}.cfg unchanged", {"not_touches": f"{prefix}{n}.cfg"}
            if prefix == "FC" and n == 1:
                text, check = f"Modifies {path}", {"touches": path, "in": path}
            lines += [f"    - id: {prefix}{n}", f"      description: {json.dumps(text)}",
                      "      weight: 2", f"      check: {json.dumps(check)}"]  # fmt: skip
    return "\n".join(lines) + "\n"


@require_bwrap
def test_the_fake_agent_explores_in_the_isolated_sandbox() -> None:
    """The shipped fake plays the agent in bubblewrap too (what the README's dry run uses)."""
    from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox

    model = register_script("local/fake-agent-text", fake_model())

    llm = LLM(LLMConfig(model=model))

    async def go() -> Result:
        async with BubblewrapSandbox(EXAMPLE.repo_dir) as sb:
            return await AgentExplorer(llm).explore(EXAMPLE.task.public(), sb)

    rubric, steps = run_closing(go(), llm)
    assert [s["tool"] for s in steps] == ["bash", "search", "view", "bash", "validate", "submit"]
    fc1 = rubric.item("FC1")
    assert fc1.check.name == "touches_symbol" and fc1.check.path == "pagewise/windows.py"
    assert f"def {fc1.check.arg}(" in (EXAMPLE.repo_dir / "pagewise/windows.py").read_text()


def test_a_context_refusal_shrinks_the_conversation_and_asks_again() -> None:
    """A tokenizer denser than the estimate (2 characters a token): the provider's refusal makes the
    loop aim lower, and the exploration goes on."""
    window, answer = 9216, 1024  # the system prompt lists every check (about 5,000 characters)
    answered: list[int] = []  # old turns get dropped: the turn is counted here, not in the messages

    def script(body: dict[str, Any], n: int) -> Reply:
        answered.append(n)
        turn = len(answered)
        if turn <= 8:
            tool, arg = "bash", f"python3 -c \"print('{turn}' * 3000)\""
        elif turn == 9:
            tool, arg = "bash", f"cat > rubrics.yaml <<'EOF'\n{grounded('pagewise/windows.py')}EOF"
        else:
            tool, arg = "submit", ""
        return Reply(content=f"THOUGHT: turn {turn}.\n\n```{tool}\n{arg}\n```")

    def server(body: dict[str, Any], n: int) -> Reply:
        used = sum(len(message_text(m)) for m in body["messages"]) // 2 + body["max_tokens"]
        if used > window:
            return Reply(
                status=400, error=f"This model's maximum context length is {window} tokens"
            )
        return script(body, n)

    with LoopbackServer(server) as srv:
        explorer = agent("hosted_vllm/dense", srv.url, context_tokens=window, max_tokens=answer)
        rubric, steps = explore(explorer)
        refused = len(srv.requests) - len(srv.answered)
    assert not isinstance(rubric, ExplorationFailed), steps
    assert refused >= 1 and steps[-1]["elided_outputs"] >= 1 and steps[-1]["dropped_turns"] >= 1


def test_an_issue_longer_than_the_window_fails_without_a_request() -> None:
    with LoopbackServer(fake_model()) as srv:
        explorer = agent("hosted_vllm/small-window", srv.url, context_tokens=2048, max_tokens=512)
        task = EXAMPLE.task.public().model_copy(update={"problem_statement": "x" * 50_000})
        failed, _ = explore(explorer, task=task)
        assert srv.requests == []
    assert isinstance(failed, ExplorationFailed) and failed.reason == "context_window"
