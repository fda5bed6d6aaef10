"""The test-writing agent (the ``tests`` verifier's writer): the rubric agent's loop and tools in
another role (``prompts/tests_agent.yaml``). It explores the repository in the sandbox, writes
``test_issue.py`` — a test module that fails on the unpatched repository and passes once the issue is
fixed, where the repository's runner finds it (:mod:`~agentic_rubrics.sandbox.testlayout`: a pytest
script at the root; a Django test module in ``tests/agentic_rubrics_tests/``, run with
``tests/runtests.py``; a sympy test under ``sympy/agentic_rubrics_tests/tests/``, run with
``bin/test``) — and submits it, with the script as the submit's content (without one, the file as
written is submitted); the script is checked (Python that defines tests) and the checker's
errors go back while turns remain. It is shown the task's issue and repository only: the pipeline hands
it a task with no candidates, and it never reads the gold patch or hidden tests (no sandbox mounts them).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from agentic_rubrics.explore.agent import AgentExplorer
from agentic_rubrics.explore.agent_actions import CONTENT_SUBMIT
from agentic_rubrics.protocols import Sandbox
from agentic_rubrics.sandbox.testlayout import WRITTEN
from agentic_rubrics.types import Task

if TYPE_CHECKING:
    from agentic_rubrics.sandbox.testlayout import Layout

TEST_FILE = WRITTEN
"""The script the agent writes (where its runner finds it in the workspace) and submits."""
MAX_SCRIPT_BYTES = 100_000
"""The largest script accepted."""


def check_script(text: str, runner: str = "pytest") -> tuple[str | None, str, str]:
    """The script, its errors and its warnings (one per line): Python that parses, within
    :data:`MAX_SCRIPT_BYTES`, defining at least one test its runner finds (``def test_...``; in a
    ``Test...`` class for pytest, in any class for Django's unittest runner; top-level functions only
    for sympy's ``bin/test``)."""
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
    if runner == "django":
        tests = []  # unittest runs the test methods of TestCase classes, not module functions
    for node in tree.body:
        if runner == "sympy":
            break
        if isinstance(node, ast.ClassDef) and (runner == "django" or node.name.startswith("Test")):
            tests += [
                f"{node.name}.{m.name}"
                for m in node.body
                if isinstance(m, ast.FunctionDef) and m.name.startswith("test")
            ]
    if not tests:
        found = "a test_... method in a TestCase class" if runner == "django" else None
        return (
            None,
            f"{TEST_FILE} defines no test ({found or 'a top-level function named test_...'})",
            "",
        )
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

    def __init__(self, *args: Any, layout: Layout | None = None, **kwargs: Any) -> None:
        from agentic_rubrics.sandbox.testlayout import LAYOUTS

        self.layout = layout or LAYOUTS["pytest"]
        self.file = self.layout.writer_file  # where its runner finds it, in the workspace
        runner = self.layout.runner
        self.validate = lambda text: check_script(text, runner)  # type: ignore[method-assign]
        super().__init__(*args, **kwargs)

    @staticmethod
    def validate(text: str) -> tuple[Any, str, str]:
        """A pytest script's check (an instance checks for its own layout's runner)."""
        return check_script(text)

    def prompt_variables(self) -> dict[str, Any]:
        return {
            "layout": self.layout.runner,
            "test_file": self.layout.writer_file,
            "test_run": self.layout.writer_run,
        }

    async def write(self, task: Task, sandbox: Sandbox | None) -> tuple[str, list[dict[str, Any]]]:
        """The submitted script and the trajectory; ExplorationFailed when none was accepted."""
        script, steps = await self.loop(task, sandbox)
        return str(script), steps
