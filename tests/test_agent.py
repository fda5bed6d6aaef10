"""The rubric-writing agent, played by scripted models on a real repository inside the bubblewrap sandbox."""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentic_rubrics.datasets.bundled import EXAMPLES_DIR, load_example
from agentic_rubrics.explore.agent import AgentExplorer, ExplorationFailed, IssueOnlyExplorer
from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.testing import Reply, register_script, scripted_calls

from .test_sandbox_bwrap import require_bwrap

EXAMPLE = load_example(EXAMPLES_DIR / "harbourline__pagewise-214")

VALID = r"""metadata:
  task_summary: "rolling() and window_bounds() drop the last full window"
  underlying_bug: "window_bounds stops while start + size < length instead of <="
axes:
  file_change_rubrics:
    - id: FC1
      description: "Modifies window_bounds in pagewise/windows.py"
      weight: 3
      check: {touches_symbol: window_bounds, in: pagewise/windows.py}
    - id: FC2
      description: "Leaves the paginator module untouched"
      weight: 1
      check: {not_touches: pagewise/paginator.py}
    - id: FC3
      description: "Keeps the non-test diff under 30 changed lines"
      weight: 1
      check: {max_changed_lines: 30, not_in: 'tests/'}
    - id: FC4
      description: "Changes the loop condition rather than special-casing rolling"
      weight: 2
  spec_alignment_rubrics:
    - id: SA1
      description: "Includes the window that ends on the last value"
      weight: 3
    - id: SA2
      description: "Agrees with count_windows for every length, size and step"
      weight: 3
    - id: SA3
      description: "Keeps partial trailing windows excluded"
      weight: 2
  integrity_rubrics:
    - id: IN1
      description: "Removes no assertion from the existing tests"
      weight: 3
      check: {removes_no_match: '^\s*assert\b', in: 'tests/'}
    - id: IN2
      description: "Adds no skip or xfail marker"
      weight: 3
      check: {adds_no_match: 'pytest\.mark\.(skip|xfail)'}
    - id: IN3
      description: "Adds no new dependency"
      weight: 1
      check: {not_touches: [pyproject.toml, 'requirements*.txt']}
  runtime_rubrics:
    - id: RT1
      description: "Keeps window_bounds lazy for long sequences"
      weight: 1
    - id: RT2
      description: "Returns the same windows for steps larger than one"
      weight: 2
    - id: RT3
      description: "Adds no print call"
      weight: 1
      check: {adds_no_match: '^\s*print\(', in: '*.py'}
"""


def turn_of(body: dict[str, Any]) -> int:
    return 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")


def say(thought: str, tool: str, body: str = "") -> Reply:
    return Reply(content=f"THOUGHT: {thought}\n\n```{tool}\n{body}\n```")


def scripted(name: str, turns: list[Reply] | Callable[[int, dict[str, Any]], Reply]) -> str:
    def script(body: dict[str, Any], n: int) -> Reply:
        t = turn_of(body)
        if callable(turns):
            return turns(t, body)
        return turns[min(t, len(turns)) - 1]

    return register_script(f"local/{name}", script)


def write(text: str) -> str:
    return f"cat > rubrics.yaml <<'EOF'\n{text}EOF"


EXPLORE = [
    say(
        "The issue says rolling() misses the last window. I will look for the windowing code first. "
        "The package is pagewise. Searching for the definition of window_bounds should find it.",
        "search",
        "def window_bounds\npagewise/",
    ),
    say(
        "window_bounds lives in pagewise/windows.py. I will read it to see the loop condition. "
        "The bug is probably an off-by-one in the stop condition. Reading the whole function helps.",
        "view",
        "pagewise/windows.py 20 60",
    ),
    say(
        "The loop stops one window early. Now I check which tests cover window_bounds. "
        "The tests will tell me the conventions. A grep over tests is enough.",
        "bash",
        "grep -rn 'window_bounds\\|rolling' tests/ | head -20",
    ),
]


def explorer(model: str, **kw: Any) -> AgentExplorer:
    return AgentExplorer(LLM(LLMConfig(model=model)), **kw)


def explore(agent: AgentExplorer) -> tuple[Any, list[dict[str, Any]]]:
    from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox

    async def go() -> tuple[Any, list[dict[str, Any]]]:
        async with BubblewrapSandbox(EXAMPLE.repo_dir) as sb:
            try:
                return await agent.explore(EXAMPLE.task.public(), sb)
            except ExplorationFailed as failed:
                return failed, failed.steps

    return asyncio.run(go())


@require_bwrap
def test_agent_explores_and_writes_a_valid_rubric() -> None:
    model = scripted("agent-valid", [
        *EXPLORE,
        say("I know enough: window_bounds is the single place to fix. I write the rubric now. "
            "It covers the four axes with grounded items. Then I validate it.", "bash", write(VALID)),
        say("The file is written. I check that it parses before submitting. "
            "Validation reports errors and warnings. Then I submit.", "validate"),
        say("The rubric is valid. I submit it now. Nothing else was changed. Done.", "submit"),
    ])  # fmt: skip
    rubric, steps = explore(explorer(model))
    assert not isinstance(rubric, ExplorationFailed)
    assert rubric.item("FC1").check.arg == "window_bounds"
    assert [s["tool"] for s in steps] == ["search", "view", "bash", "bash", "validate", "submit"]
    calls = scripted_calls(model)
    observations = [c["messages"][-1]["content"] for c in calls[1:]]
    assert "pagewise/windows.py" in observations[0]  # a real grep of the real repository
    assert "def window_bounds" in observations[1]
    assert observations[1].split("\n", 1)[1].startswith("    20  ")  # after the fence's marker
    assert "    61  " not in observations[1]
    assert "rubrics.yaml is valid" in observations[4]
    assert "Exit status: 0" in observations[2]


@require_bwrap
def test_agent_repairs_invalid_yaml_after_feedback() -> None:
    broken = VALID.replace(
        "weight: 3\n      check: {touches_symbol", "weight: 5\n      check: {touches_symbol", 1
    )
    model = scripted("agent-repair", [
        say("I write a first version of the rubric from what I know. It may need fixes. "
            "The validator will tell me. Writing now.", "bash", write(broken)),
        say("I submit the rubric. If it is invalid I will get the errors. "
            "Then I fix them. Submitting.", "submit"),
        say("The weight of FC1 was 5, which is not allowed. I fix it to 3. "
            "The rest was fine. Rewriting the file.", "bash", write(VALID)),
        say("Fixed the weight. Submitting again. It should pass now. Done.", "submit"),
    ])  # fmt: skip
    rubric, steps = explore(explorer(model))
    assert not isinstance(rubric, ExplorationFailed)
    feedback = scripted_calls(model)[2]["messages"][-1]["content"]
    assert "rubrics.yaml is not valid yet" in feedback and "weight must be 1, 2 or 3" in feedback
    assert "rubrics.yaml:8:" in feedback  # the file and line of the offending value
    assert len(steps) == 4


@require_bwrap
def test_agent_that_runs_out_of_turns_fails_honestly() -> None:
    model = scripted("agent-wanders", lambda t, body: say(
        "I keep listing files. There is always more to see. Maybe the next listing helps. "
        "I am not sure yet.", "bash", "ls -R | head -5"))  # fmt: skip
    failed, steps = explore(explorer(model, max_turns=7))
    assert isinstance(failed, ExplorationFailed) and failed.reason == "turn_budget_exhausted"
    assert len(steps) == 7
    notes = [c["messages"][-1]["content"] for c in scripted_calls(model)[1:]]
    assert "(2 turns left.)" in notes[4]  # after turn 5: every 5 turns
    assert "(1 turn left.)" in notes[5]


@require_bwrap
def test_agent_cannot_reach_the_network_or_write_outside_and_goes_on() -> None:
    model = scripted("agent-escape", [
        say("I want to check the upstream project online. That needs the network. "
            "Let me try to download it. This may fail.", "bash",
            "python3 -c \"import urllib.request as u; print(u.urlopen('https://pypi.org', timeout=3).status)\""),
        say("The network is not reachable. I will try to leave a note outside the workspace. "
            "That should not be possible. Trying anyway.", "bash",
            "echo hacked > /etc/agentic-note; echo hacked > /usr/agentic-note; touch /root/x; ls /work"),
        say("Writing outside the workspace failed too. I go back to the task. "
            "I write the rubric now. Then I submit.", "bash", write(VALID)),
        say("The rubric is written. Submitting. Done with this task. Thanks.", "submit"),
    ])  # fmt: skip
    rubric, _steps = explore(explorer(model))
    assert not isinstance(rubric, ExplorationFailed)
    net, escape = (c["messages"][-1]["content"] for c in scripted_calls(model)[1:3])
    assert "Exit status: 1" in net and (
        "resolution" in net or "unreachable" in net or "Errno" in net
    )
    assert escape.count("Read-only file system") == 2 and "No such file or directory" in escape
    assert not Path("/etc/agentic-note").exists() and not Path("/usr/agentic-note").exists()


@require_bwrap
def test_agent_that_never_calls_a_tool_is_corrected_each_turn() -> None:
    model = scripted("agent-talker", lambda t, body: Reply(
        content="THOUGHT: I think the bug is in windows.py. I would fix the loop. "
        "But I will not call any tool. I just talk."))  # fmt: skip
    failed, steps = explore(explorer(model, max_turns=4))
    assert isinstance(failed, ExplorationFailed) and failed.reason == "turn_budget_exhausted"
    assert [s.get("error") for s in steps] == ["format"] * 4
    corrections = [c["messages"][-1]["content"] for c in scripted_calls(model)[1:]]
    assert all("expected exactly one tool block, found 0" in c for c in corrections)


@require_bwrap
def test_missing_thought_is_corrected_and_the_turn_counts() -> None:
    model = scripted("agent-terse", [
        Reply(content="```bash\nls\n```"),
        say("I forgot my summary before. Now I write the rubric. It is grounded. Submitting next.", "bash", write(VALID)),
        say("Written. Submitting. Done. Bye.", "submit"),
    ])  # fmt: skip
    rubric, steps = explore(explorer(model))
    assert not isinstance(rubric, ExplorationFailed) and len(steps) == 3
    assert steps[0]["error"] == "format"
    assert "THOUGHT summary is missing" in scripted_calls(model)[1]["messages"][-1]["content"]


def test_issue_only_explorer_repairs_its_file() -> None:
    replies = iter(
        [
            Reply(content="```yaml\nmetadata: [\n```"),
            Reply(content=f"Here it is.\n```yaml\n{VALID}```"),
        ]
    )
    model = register_script("local/issue-only", lambda body, n: next(replies))
    rubric, steps = asyncio.run(
        IssueOnlyExplorer(LLM(LLMConfig(model=model))).explore(EXAMPLE.task.public())
    )
    assert rubric.item("SA1").weight == 3 and [s["valid"] for s in steps] == [False, True]
    second = scripted_calls(model)[1]["messages"][-1]["content"]
    assert "Your previous rubrics.yaml was not valid" in second and "YAML syntax error" in second


@require_bwrap
def test_agent_in_the_main_job_with_trajectories_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "trajectory-secret-" + os.urandom(6).hex()
    monkeypatch.setenv("AGENTIC_TEST_SECRET_TOKEN", secret)
    model = scripted("agent-main", [
        say(f"Let me note the token {secret} for later. It should never be saved. "
            "The trajectory must be redacted. Now exploring.", "bash", f"echo {secret}; env | wc -l"),
        *EXPLORE,
        say("Writing the rubric now. It is grounded in window_bounds. Then I submit. Done soon.", "bash", write(VALID)),
        say("Submitting. Done. Thanks. Bye.", "submit"),
    ])  # fmt: skip
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(EXAMPLE.task.model_dump(mode="json")) + "\n")
    config = load_config(None, {"explorer": {"kind": "agent", "model": {"model": model}, "sandbox": {"type": "bubblewrap"}},
                                "bootstrap_resamples": 10})  # fmt: skip
    report = run(tasks, tmp_path / "out", config)
    assert report is not None and report["rubrics"]["ok"] == 1
    trajectory_file = tmp_path / "out" / "trajectories" / f"{EXAMPLE.task.instance_id}.json"
    text = trajectory_file.read_text()
    trajectory = json.loads(text)
    assert (
        trajectory["status"] == "ok"
        and trajectory["sandbox"] == "bubblewrap"
        and trajectory["turns"] == 6
    )
    assert secret not in text and "[redacted:AGENTIC_TEST_SECRET_TOKEN]" in text
    for name, value in os.environ.items():
        if len(value) >= 8:
            assert value not in text, name
    # the evaluation records hold no trajectory content
    for record in ("verdicts.jsonl", "progress.jsonl", "report.json"):
        assert "THOUGHT" not in (tmp_path / "out" / record).read_text()
    progress = next(r for _, r in read_jsonl(tmp_path / "out" / "progress.jsonl"))
    assert progress["cost"]["explore"]["calls"] == 6
    # --no-trajectories
    out2 = tmp_path / "out2"
    run(tasks, out2, config.model_copy(update={"trajectories": False}))
    assert not (out2 / "trajectories").exists()


def test_failed_exploration_leaves_candidates_inconclusive(tmp_path: Path) -> None:
    model = scripted("agent-silent", lambda t, body: Reply(content=""))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(EXAMPLE.task.model_dump(mode="json")) + "\n")
    config = load_config(None, {"explorer": {"kind": "agent", "model": {"model": model}, "max_turns": 3,
                                             "sandbox": {"type": "local-copy"}, "allow_unisolated": True},
                                "bootstrap_resamples": 10})  # fmt: skip
    report = run(tasks, tmp_path / "out", config)
    assert report is not None
    assert report["rubrics"]["failed"] == {"turn_budget_exhausted": 1}
    assert report["tasks"][0]["decisions"] == {"inconclusive": 14, "reject": 1}  # the empty patch
    assert report["verdicts"]["rows"] == 0


def test_model_commands_never_run_unisolated_unasked(tmp_path: Path) -> None:
    model = scripted("agent-unasked", lambda t, body: say("a. b. c. d.", "submit"))
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(EXAMPLE.task.model_dump(mode="json")) + "\n")
    config = load_config(None, {"explorer": {"kind": "agent", "model": {"model": model}, "sandbox": {"type": "local-copy"}},
                                "bootstrap_resamples": 10})  # fmt: skip
    report = run(tasks, tmp_path / "out", config)
    assert report is not None and report["rubrics"]["failed"] == {"sandbox_error:SandboxError": 1}
    assert scripted_calls(model) == []


def test_a_failed_agent_rubric_says_why_in_its_status(tmp_path: Path) -> None:
    """The agent writes a file the validator refuses and submits it until its turns run out:
    status.json names the turns used and the validator's last error, redacted."""
    bad = "metadata: {task_summary: a, underlying_bug: b}\naxes:\n  file_change_rubrics:\n" + (
        "    - id: FC1\n      description: Modifies x\n      weight: 7\n"
    )
    turns = [say("a. b. c. d.", "bash", write(bad))] + [say("a. b. c. d.", "submit")] * 3
    model = scripted("agent-invalid", turns)
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps(EXAMPLE.task.model_dump(mode="json")) + "\n")
    config = load_config(
        None,
        {
            "explorer": {
                "kind": "agent",
                "model": {"model": model},
                "max_turns": 4,
                "sandbox": {"type": "local-copy"},
                "allow_unisolated": True,
            },
            "bootstrap_resamples": 0,
        },
    )
    report = run(tasks, tmp_path / "out", config)
    folder = tmp_path / "out" / "rubrics" / EXAMPLE.task.instance_id
    status = json.loads((folder / "status.json").read_text())
    assert status["status"] == "failed" and status["reason"] == "invalid_rubric"
    assert status["turns"] == 4
    assert "rubrics.yaml:6" in status["last_validation_error"]
    assert "weight" in status["last_validation_error"]
    # and the report's failure summary says it too (report.json and report.md)
    assert report is not None
    (task,) = report["tasks"]
    assert task["rubric"]["turns"] == 4
    assert task["rubric"]["last_validation_error"] == status["last_validation_error"]
    said = f"invalid_rubric: {EXAMPLE.task.instance_id} (4 turns; the validator's last error:"
    (fatal,) = report["problems"]["fatal"]
    assert said in fatal and "rubrics.yaml:6" in fatal
    md = " ".join((tmp_path / "out" / "report.md").read_text().split())
    assert said in md
