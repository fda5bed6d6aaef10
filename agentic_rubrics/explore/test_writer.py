"""The test-writing agent (the ``tests`` verifier's writer): the rubric agent's loop and tools in
another role (``prompts/tests_agent.yaml``). It explores the repository in the sandbox, writes
``test_issue.py`` — a standalone pytest script that fails on the unpatched repository and passes once
the issue is fixed — and submits it, with the script as the submit's content (without one, the file as
written is submitted); the script is checked (Python that defines tests) and the checker's
errors go back while turns remain. It is shown the task's issue and repository only: the pipeline hands
it a task with no candidates, and it never reads the gold patch or hidden tests (no sandbox mounts them).
"""

from __future__ import annotations

import ast
from typing import Any

from agentic_rubrics.explore.agent import AgentExplorer
from agentic_rubrics.explore.agent_actions import CONTENT_SUBMIT
from agentic_rubrics.protocols import Sandbox
from agentic_rubrics.types import Task

TEST_FILE = "test_issue.py"
"""The script the agent writes in the repository's folder and submits."""
MAX_SCRIPT_BYTES = 100_000
"""The largest script accepted."""


def check_script(text: str) -> tuple[str | None, str, str]:
    """The script, its errors and its warnings (one per line): Python that parses, within
    :data:`MAX_SCRIPT_BYTES`, defining at least one test (``def test_...``, or in a ``Test...``
    class)."""
    if len(text.encode("utf-8", "surrogateescape")) > MAX_SCRIPT_BYTES:
        return (
            None,
            f"{TEST_FILE} is over {MAX_SCRIPT_BYTES} bytes; keep it to the tests needed",
            "",
        )
    try:
        tree = ast.parse(text, TEST_FILE)
    except (SyntaxError, ValueError) as exc:
        line = getattr(exc, "lineno", None)
        return None, f"{TEST_FILE} is not valid Python (line {line}): {exc}", ""
    tests = [
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test")
    ]
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name.startswith("Test"):
            tests += [
                f"{node.name}.{m.name}"
                for m in node.body
                if isinstance(m, ast.FunctionDef) and m.name.startswith("test")
            ]
    if not tests:
        return None, f"{TEST_FILE} defines no test (a top-level function named test_...)", ""
    return text, "", ""


class TestWriterAgent(AgentExplorer):
    """See the module's docstring."""

    __test__ = False  # an agent, not a pytest class
    name = "tests-agent"
    prompt_name = "tests_agent"
    phase = "tests_writer"
    file = TEST_FILE
    invalid = "invalid_tests"
    parameters = CONTENT_SUBMIT  # its submit carries the script (else test_issue.py as written)

    @staticmethod
    def validate(text: str) -> tuple[Any, str, str]:
        return check_script(text)

    async def write(self, task: Task, sandbox: Sandbox | None) -> tuple[str, list[dict[str, Any]]]:
        """The submitted script and the trajectory; ExplorationFailed when none was accepted."""
        script, steps = await self.loop(task, sandbox)
        return str(script), steps
