"""The README's dry run of the main path: the shipped fake plays the rubric agent (and the judge) over
HTTP, in the isolated sandbox, so ``--explorer agent --model openai/fake --api-base …`` writes valid,
grounded rubrics and a full report.

Before: the fake answered judge prompts only; with ``--explorer agent`` every turn was a format error
and every rubric failed (``turn_budget_exhausted``).
"""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.bundled import EXAMPLES_DIR, write_tasks_jsonl
from agentic_rubrics.explore.agent import IssueOnlyExplorer
from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.testing import LoopbackServer, fake_model, register_script, serve_in_subprocess
from agentic_rubrics.types import Task

from .test_sandbox_bwrap import require_bwrap

TASKS = ["harbourline__pagewise-214", "quillworks__durata-57"]


def two_tasks(tmp_path: Path) -> Path:
    every = write_tasks_jsonl(tmp_path / "all.jsonl")
    keep = [
        line for line in every.read_text().splitlines() if json.loads(line)["instance_id"] in TASKS
    ]
    out = tmp_path / "tasks.jsonl"
    out.write_text("\n".join(keep) + "\n")
    return out


@require_bwrap
def test_dry_run_with_the_agent_explorer(tmp_path: Path) -> None:
    tasks, out = two_tasks(tmp_path), tmp_path / "run"
    settings = tmp_path / "settings.yaml"
    settings.write_text("bootstrap_resamples: 20\n")  # the report's intervals are not tested here
    with LoopbackServer(fake_model()) as srv:
        result = CliRunner().invoke(
            app,
            ["run", "--tasks", str(tasks), "--out", str(out), "--explorer", "agent",
             "--model", "openai/fake", "--api-base", srv.url, "--config", str(settings),
             "--quiet"],
        )  # fmt: skip
    assert result.exit_code == 0, result.output
    for iid in TASKS:
        status = json.loads((out / "rubrics" / iid / "status.json").read_text())
        assert status["status"] == "ok" and status["source"] == "explorer:agent", status
        steps = json.loads((out / "trajectories" / f"{iid}.json").read_text())["steps"]
        assert [s["tool"] for s in steps][:3] == ["bash", "search", "view"]
        fc1 = next(
            i
            for i in json.loads(json.dumps(_yaml(out / "rubrics" / iid / "rubrics.yaml")))
            if i["id"] == "FC1"
        )
        path = fc1["check"].get("in") or fc1["check"]["touches"]  # grounded: a real file, viewed
        assert (EXAMPLES_DIR / iid / "repo" / path).is_file()
        assert any(s["tool"] == "view" and s["argument"].startswith(path) for s in steps)
    report = json.loads((out / "report.json").read_text())
    assert report["selectors"]["rubric"]["roc_auc"] is not None
    origins = {row["origin"] for _, row in read_jsonl(out / "verdicts.jsonl")}
    assert {"judged", "checked"} <= origins
    assert (out / "report.md").is_file() and (out / "selections.jsonl").read_text()


def _yaml(path: Path) -> list[dict[str, object]]:
    import yaml

    doc = yaml.safe_load(path.read_text())
    return [item for items in doc["axes"].values() for item in items]


def test_the_fake_writes_the_issue_only_rubric_from_the_same_prompt() -> None:
    model = register_script("local/fake-issue-only", fake_model())
    task = Task(
        instance_id="acme__x-1",
        repo="acme/x",
        problem_statement="`parse_header` returns None for an empty header; it should raise.",
    )
    rubric, steps = asyncio.run(IssueOnlyExplorer(LLM(LLMConfig(model=model))).explore(task))
    assert steps[0]["valid"] and "parse_header" in rubric.item("SA1").description


def test_serve_plays_the_agent_in_its_own_process() -> None:
    """``python -m agentic_rubrics.testing serve``: the first turn of an agent is a real command."""
    with serve_in_subprocess() as (_, url):
        system = load_prompt("rubric_agent").render(
            "system", repo="acme/x", workspace="/workspace", max_turns=30, checks=[],
            explore=True, native_tools=False,
        )  # fmt: skip
        body = {
            "model": "fake",
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": "the issue"},
            ],
        }
        request = urllib.request.Request(
            f"{url}/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            reply = json.loads(response.read())
    text = reply["choices"][0]["message"]["content"]
    assert text.startswith("THOUGHT: ") and "```bash\nfind . -name '*.py'" in text


def _written_rubric(issue: str) -> str:
    """What the fake agent writes for ``issue`` in a text-action reply, as the loop reads it back."""
    from agentic_rubrics.explore.agent_actions import text_action

    fence = f"<<<BEGIN UNTRUSTED ISSUE 0123abcd>>>\n{issue}\n<<<END UNTRUSTED ISSUE 0123abcd>>>"
    body = {
        "messages": [
            {"role": "system", "content": "You write a grading rubric for an issue."},
            {"role": "user", "content": fence},
            *[{"role": "assistant", "content": "THOUGHT: x"} for _ in range(3)],
        ]
    }
    reply = fake_model()(body, 0)
    action = text_action(reply.content or "")
    assert action.tool == "bash" and not action.problems, action.problems
    command = action.argument or ""
    marker = command.split("<<'", 1)[1].split("'", 1)[0]
    return command.split(f"<<'{marker}'\n", 1)[1].rsplit(marker, 1)[0]


ISSUES = [
    "Crash in `foo()`:\n```python\nimport x\nx.foo()\n```\nExpected no error.",
    'Output:\n```\nTraceback (most recent call last):\n  File "a.py", line 3, in bar\n```',
    "Unclosed fence ```python\nprint(1)",
    "Use `a`, ``b`` and ```c``` inline",
    "Crash 😀 in `foo()` since 2.0 🐛",  # an emoji, escaped the JSON way, is invalid YAML
    "Control \x85 \x9b[31m and a line\u2028separator in the title",
    "A lone \ud800 surrogate",
    "~~~python\nx = '```'\n~~~\n" + "```" * 7,
]


def test_the_fake_writes_a_valid_rubric_for_issues_with_code_fences_emoji_and_controls() -> None:
    from agentic_rubrics.rubric.file import parse_rubric

    for issue in ISSUES:
        parse_rubric(_written_rubric(issue))


@pytest.mark.parametrize(("name", "count"), [("lite", 202), ("verified", 339)])
def test_the_fake_writes_a_valid_rubric_for_every_real_issue(name: str, count: int) -> None:
    """Every issue of the shared SWE-bench data, Lite's and Verified's (the synthetic ones above hold
    what none of them happens to: an emoji near the top, control characters)."""
    import gzip

    from agentic_rubrics.rubric.file import parse_rubric

    data = Path(__file__).resolve().parents[2] / "shared" / "data" / "swebench"
    path = data / f"{name}_candidates.jsonl.gz"
    if not path.exists():
        pytest.skip(f"the shared SWE-bench data is not here ({path})")
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        issues = [json.loads(line)["problem_statement"] for line in fh]
    for issue in issues:
        parse_rubric(_written_rubric(issue))
    assert len(issues) == count
