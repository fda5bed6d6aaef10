"""The agent's tools on big files and big searches: pages with a note naming the next one, capped."""

from __future__ import annotations

import asyncio
from pathlib import Path

from agentic_rubrics.explore import tools
from agentic_rubrics.explore.agent import AgentExplorer
from agentic_rubrics.llm.door import LLM, LLMConfig
from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.sandbox.local import LocalCopySandbox
from agentic_rubrics.testing import scripted_calls
from agentic_rubrics.types import Task

from .test_agent import VALID, say, scripted, write
from .test_agent_fencing import _fenced

PROMPT = load_prompt("rubric_agent")


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    (root / "pkg").mkdir(parents=True)
    big = [f"def f{n}():  # marker" if n % 4 == 0 else f"    return {n}" for n in range(1, 1201)]
    (root / "pkg" / "big.py").write_text("\n".join(big) + "\n")
    (root / "pkg" / "wide.py").write_text("x = '" + "y" * 5000 + "'\nz = 1\n")
    return root


Call = tuple[str, str, int]  # (tool, argument, max_chars)


def calls(root: Path, *todo: Call) -> list[tools.ToolResult]:
    """The calls in order, in one sandbox."""

    async def one(sb: LocalCopySandbox, fn: str, argument: str, cap: int) -> tools.ToolResult:
        if fn == "view":
            return await tools.view(sb, argument, max_chars=cap, prompt=PROMPT)
        if fn == "search":
            return await tools.search(sb, argument, max_chars=cap, timeout=30, prompt=PROMPT)
        return await tools.bash(sb, argument, max_chars=cap, timeout=30)

    async def go() -> list[tools.ToolResult]:
        async with LocalCopySandbox(root) as sb:
            return [await one(sb, *c) for c in todo]

    return asyncio.run(go())


def test_view_pages_through_a_long_file(tmp_path: Path) -> None:
    first, end, small, beyond = calls(
        repo(tmp_path),
        ("view", "pkg/big.py", 100_000),
        ("view", "pkg/big.py 1150 1300", 100_000),
        ("view", "pkg/big.py 401 600", 600),
        ("view", "pkg/big.py 5000", 100_000),
    )
    rows = first.output.splitlines()
    assert len(rows) == tools.VIEW_PAGE_LINES and rows[0].startswith("     1  ")
    assert first.note == (
        "(Lines 1-200 of 1200. Next page: a view of `pkg/big.py` from line 201 to 400.)"
    )
    assert end.output.splitlines()[-1].startswith("  1200  ") and end.note == ""
    # the cap on characters ends the page earlier, and the note says where to go on
    shown = small.output.splitlines()
    assert len(small.output) <= 600 and shown[0].startswith("   401  ")
    last = 400 + len(shown)
    assert f"Lines 401-{last} of 1200" in small.note and f"from line {last + 1} to" in small.note
    assert beyond.output == "" and "has 1200 lines" in beyond.note


def test_view_cuts_a_very_long_line(tmp_path: Path) -> None:
    (wide,) = calls(repo(tmp_path), ("view", "pkg/wide.py", 100_000))
    first, second = wide.output.splitlines()
    assert len(first) < tools.MAX_LINE_CHARS + 60 and "more characters]" in first
    assert second.endswith("z = 1")


def test_search_pages_matches_with_their_total(tmp_path: Path) -> None:
    one, six, none, few = calls(
        repo(tmp_path),
        ("search", "# marker$\npkg/", 100_000),
        ("search", "# marker$\npkg/\npage: 6", 100_000),
        ("search", "no such text anywhere", 100_000),
        ("search", "def f12\\(", 100_000),  # one page: no note
    )
    assert one.exit_code == 0 and len(one.output.splitlines()) == tools.SEARCH_PAGE
    assert one.output.splitlines()[0] == "pkg/big.py:4:def f4():  # marker"
    assert one.note == ("(Matches 1-50 of 300. Next page: the same search with page 2.)")
    assert six.output.splitlines()[-1] == "pkg/big.py:1200:def f1200():  # marker"
    assert six.note == "(Matches 251-300 of 300.)"
    assert (none.exit_code, none.output, none.note) == (1, "", "")
    assert few.output == "./pkg/big.py:12:def f12():  # marker" and few.note == ""


def test_search_and_bash_stay_under_the_cap_whatever_they_find(tmp_path: Path) -> None:
    found, ran = calls(
        repo(tmp_path), ("search", "return", 800), ("bash", "cat pkg/big.py pkg/big.py", 1000)
    )
    assert len(found.output) <= 800 and "of 900" in found.note
    assert ran.truncated and len(ran.output) < 1200


def test_the_agent_sees_the_page_note_outside_the_fence(tmp_path: Path) -> None:
    root = repo(tmp_path)
    model = scripted("agent-pager", [
        say("I read the big file first. It is long. The tool pages it. Then I write.", "view",
            "pkg/big.py"),
        say("Writing the rubric now. It is grounded. Then I submit. Done.", "bash", write(VALID)),
        say("Submitting. Done. Thanks. Bye.", "submit"),
    ])  # fmt: skip
    agent = AgentExplorer(LLM(LLMConfig(model=model)), max_turns=5)

    async def go() -> None:
        async with LocalCopySandbox(root) as sb:
            await agent.explore(Task(instance_id="pager", problem_statement="f1 is off"), sb)

    asyncio.run(go())
    observation = scripted_calls(model)[1]["messages"][-1]["content"]
    _, inside, after = _fenced(observation, "OUTPUT")
    assert inside.splitlines()[-1].startswith("   200  ")
    assert (
        after.strip()
        == "(Lines 1-200 of 1200. Next page: a view of `pkg/big.py` from line 201 to 400.)"
    )


def test_a_native_search_call_names_its_page() -> None:
    from agentic_rubrics.explore.agent_actions import _argument

    assert _argument("search", {"pattern": "def f", "path": "pkg", "page": 3}) == (
        "def f\npkg\npage: 3",
        None,
    )
    assert _argument("search", {"pattern": "def f"}) == ("def f", None)
