"""The fake model as the test-writing agent (the ``tests`` verifier's writer), answered from the
conversation alone like the rubric agent (:mod:`agentic_rubrics.testing.agent`).

It lists the Python files, searches for the definitions of the names the issue mentions, writes
``test_issue.py`` — one test that the module it found imports, and one test per name the issue gives
that the module must define (a name the issue asks for that the base lacks fails there) — validates it
and submits it as the submit's content. A real attempt derived from the issue and the repository, as simple as a rule makes it:
nothing of a candidate, the gold patch or the hidden tests reaches it.
"""

from __future__ import annotations

import hashlib
from typing import Any

from agentic_rubrics.testing.replies import Reply

ROLE = "write a test script, test_issue.py"
"""What the test-writing agent's system prompt says (how the fake knows the role)."""


def module_of(path: str) -> str:
    """The import name of a repository file (``src/pkg/mod.py`` -> ``pkg.mod``)."""
    parts = path.removeprefix("./").removesuffix(".py").split("/")
    if parts and parts[0] in ("src", "lib") and len(parts) > 1:
        parts = parts[1:]
    if parts[-1] == "__init__" and len(parts) > 1:
        parts = parts[:-1]
    return ".".join(parts)


def script(module: str | None, names: list[str]) -> str:
    """``test_issue.py`` for the module the search found and the names the issue gives."""
    wanted = [n for n in names if n.isidentifier()][:6]
    lines = [
        '"""Tests written from the issue: the module it is about, and the names it asks for."""',
        "",
        "import importlib",
        "",
        "import pytest",
        "",
        f"MODULE = {module!r}",
        "",
        "",
        "def test_the_module_imports():",
        "    assert MODULE is not None, 'no module of the repository matched the issue'",
        "    importlib.import_module(MODULE)",
    ]
    if wanted:
        lines += [
            "",
            "",
            f"@pytest.mark.parametrize('name', {wanted!r})",
            "def test_the_module_defines_what_the_issue_names(name):",
            "    module = importlib.import_module(MODULE)",
            "    assert hasattr(module, name), f'{MODULE} has no {name}'",
        ]
    return "\n".join(lines) + "\n"


def tests_turn(
    body: dict[str, Any],
    turn: int,
    issue: str,
    names: list[str],
    observations: list[str],
    path: str | None,
) -> Reply:
    """One turn of the test-writing agent (see the module's docstring): ``turn`` (from 1), the
    issue's text and the names it gives, the tools' outputs so far, and the first non-test file the
    search found."""
    last = observations[-1] if observations else ""
    text = script(module_of(path) if path else None, names)
    action: tuple[str, dict[str, Any]]
    if turn == 1:
        action = ("bash", {"command": "find . -name '*.py' -not -path '*/.*' | sort | head -200"})
    elif turn == 2 and names:
        action = ("search", {"pattern": rf"(def|class) ({'|'.join(names)})\b", "path": "."})
    elif turn <= 3:
        marker = "TESTS_" + hashlib.sha256(issue.encode("utf-8", "replace")).hexdigest()[:8]
        action = ("bash", {"command": f"cat > test_issue.py <<'{marker}'\n{text}{marker}"})
    elif turn == 4 or ("not valid yet" in last and turn < 6):
        action = ("validate", {})
    else:
        action = ("submit", {"content": text})  # the script as the submit's content
    tool, args = action
    thought = (
        f"Turn {turn}: I look for the code the issue names ({', '.join(names)}) and write tests"
        " that fail until the issue is fixed. Then I check the file and submit it."
    )
    if body.get("tools"):
        return Reply(content=thought, tool_calls=[{"name": tool, "arguments": args}])
    block = {
        "bash": args.get("command", ""),
        "search": f"{args.get('pattern', '')}\n{args.get('path', '')}",
        "submit": args.get("content", ""),
    }.get(tool, "")
    return Reply(content=f"THOUGHT: {thought}\n\n```{tool}\n{block}\n```")
