"""A fake model that plays every role of a run: rubric agent, issue-only writer, test writer
(:mod:`agentic_rubrics.testing.tests_agent`), judge, classifier, proxy-patch author and patch-similarity
judge.

:func:`fake_model` reads each request as a real model would — the system prompt says which role — and
answers from the conversation alone (no state between requests, so any number of tasks can share it):

- rubric agent: lists the Python files, searches for the definitions of the names the issue mentions,
  views the file it found, writes ``rubrics.yaml`` with items grounded in that file and symbol, validates
  it and submits (native tool calls when the request offers tools, a THOUGHT and a fenced block
  otherwise);
- issue-only writer: a rubric in one fenced ``yaml`` block, from the names in the issue;
- judge: every requested item answered with ``value``; classifier: ``YES 0.9`` (or ``NO 0.1``);
- proxy-patch author: lists and searches like the rubric agent, then edits the file it found — a
  comment naming the issue's first name inserted after the definition it found (a real edit of the
  file the issue names, so the workspace's diff is a real patch) — and submits; without a lead it edits
  nothing and submits twice (an empty proxy);
- similarity judge: :func:`agentic_rubrics.testing.similarity.similarity_answer` (changed-file and
  changed-line overlap with the proxy, mapped to 1-5).

It is a dry run of the real path (litellm, the sandbox, validation, judging, the report), not a model:
its rubrics are as good as a rule can make them.
"""

from __future__ import annotations

import hashlib
import json
import re
from typing import Any

from agentic_rubrics.testing.replies import Reply, Script, judge_answer, message_text
from agentic_rubrics.testing.similarity import ASKS, similarity_answer
from agentic_rubrics.testing.tests_agent import ROLE, tests_turn

__all__ = ["fake_model", "rubric_yaml"]

_FENCED = re.compile(r"<<<BEGIN UNTRUSTED (\w+) [0-9a-f]+>>>\n(.*?)\n<<<END UNTRUSTED \1 ", re.S)
_NAMES = re.compile(
    r"`([A-Za-z_][\w.]*)(?:\(\))?`|\b([A-Za-z_]\w*_\w+|[a-z]+[A-Z]\w*|[A-Z]\w+[A-Z]\w*)\b"
)
_FRAMES = re.compile(r"line \d+, in ([A-Za-z_]\w*)")
_CALLS = re.compile(r"\b([A-Za-z_][\w.]*)\(")
_COMMON = {"print", "len", "str", "int", "list", "dict", "module", "import", "Traceback"}
_HIT = re.compile(r"^\.?/?([\w./-]+\.py):(\d+):\s*(?:async\s+)?(?:def|class)\s+(\w+)", re.M)


def _fenced(text: str, label: str) -> str:
    found = [body for kind, body in _FENCED.findall(text) if kind == label]
    return found[-1] if found else ""


def issue_names(issue: str) -> list[str]:
    """Names the issue mentions, most telling first: traceback frames and calls, then backticked,
    snake_case and CamelCase names (the last part of a dotted one)."""
    found = [*_FRAMES.findall(issue), *_CALLS.findall(issue)]
    found += [quoted or bare for quoted, bare in _NAMES.findall(issue)]
    out: list[str] = []
    for raw in found:
        name = raw.rsplit(".", 1)[-1]
        if name.isidentifier() and len(name) > 2 and name not in out and name not in _COMMON:
            out.append(name)
    return out[:8]


def _is_test(path: str) -> bool:
    return "test" in path.lower().rsplit("/", 1)[-1] or "/tests/" in f"/{path}"


Item = tuple[str, str, int, dict[str, Any] | None]
_NOT_TESTS = "*tests/*"
_FIXED: dict[str, list[Item]] = {
    "file_change_rubrics": [
        ("FC2", "Changes at most 3 non-test files", 2, {"max_files": 3, "not_in": _NOT_TESTS}),
        (
            "FC3",
            "Keeps the non-test diff under 80 changed lines",
            1,
            {"max_changed_lines": 80, "not_in": _NOT_TESTS},
        ),
        (
            "FC4",
            "Leaves the packaging files unchanged",
            1,
            {"not_touches": ["setup.py", "setup.cfg", "pyproject.toml"]},
        ),
    ],
    "spec_alignment_rubrics": [
        ("SA3", "Handles the input the issue describes without an exception", 2, None),
    ],
    "integrity_rubrics": [
        (
            "IN1",
            "Removes no assertion from the existing tests",
            3,
            {"removes_no_match": r"^\s*assert\b", "in": _NOT_TESTS},
        ),
        (
            "IN2",
            "Adds no skip or xfail marker to the tests",
            3,
            {"adds_no_match": r"pytest\.mark\.(skip|xfail)"},
        ),
        ("IN3", "Adds no new dependency", 1, {"not_touches": ["requirements*.txt"]}),
    ],
    "runtime_rubrics": [
        (
            "RT1",
            "Adds no print call to library code",
            1,
            {"adds_no_match": r"^\s*print\(", "in": "*.py", "not_in": _NOT_TESTS},
        ),
        (
            "RT2",
            "Adds no broad exception handler",
            2,
            {"adds_no_match": r"^\s*except\s*(Exception)?\s*:"},
        ),
    ],
}
"""The items every fake rubric holds, whatever the issue."""


def _items(path: str | None, symbol: str | None) -> dict[str, list[Item]]:
    """The rubric's items: those naming the issue's code, then the fixed ones, axis by axis."""
    where = {"in": path} if path else {}
    if path and symbol:
        target, fc1 = {"touches_symbol": symbol, **where}, f"Modifies {symbol} in {path}"
    elif path:
        target, fc1 = {"touches": path}, f"Modifies {path}"
    else:
        target, fc1 = {"adds_match": r"\S", "not_in": _NOT_TESTS}, "Changes source code"
    name = symbol or "the code the issue names"
    named: dict[str, list[Item]] = {
        "file_change_rubrics": [("FC1", fc1, 3, target)],
        "spec_alignment_rubrics": [
            ("SA1", f"Fixes the behaviour the issue reports in {name}", 3, None),
            ("SA2", f"Keeps the public signature of {name} compatible", 2, None),
        ],
        "integrity_rubrics": [],
        "runtime_rubrics": [],
    }
    out = {axis: [*named[axis], *_FIXED[axis]] for axis in named}
    out["runtime_rubrics"].append(("RT3", f"Keeps {name} deterministic for equal inputs", 1, None))
    return out


def rubric_yaml(summary: str, path: str | None, symbol: str | None) -> str:
    """A lint-clean rubric; its file-change items grounded in ``path`` and ``symbol`` when known."""

    def q(value: Any) -> str:
        # YAML reads JSON's escapes, but a character beyond the BMP escaped as a surrogate pair
        # (``\ud83d\ude00``, an emoji) is "an invalid Unicode character escape code" to it: written
        # as it is instead (the text holds printable characters only, see _summary)
        return json.dumps(value, ensure_ascii=False)

    name = symbol or "the code the issue names"
    lines = [
        "metadata:",
        f"  task_summary: {q(summary)}",
        f"  underlying_bug: {q(f'The behaviour of {name} the issue reports')}",
        "axes:",
    ]
    for axis, rows in _items(path, symbol).items():
        lines.append(f"  {axis}:")
        for item_id, description, weight, check in rows:
            lines += [
                f"    - id: {item_id}",
                f"      description: {q(description)}",
                f"      weight: {weight}",
            ]
            if check is not None:
                lines.append(f"      check: {q(check)}")
    return "\n".join(lines) + "\n"


_CODE = re.compile(r"```.*?(?:```|\Z)", re.S)


def _summary(issue: str) -> str:
    """The issue's opening words, without its code: a summary, as a model would write one. A code
    fence copied from the issue would end the fenced block a text-action reply puts the rubric in;
    an emoji escaped the JSON way, or a control character, would make the YAML invalid."""
    prose = _CODE.sub(" ", issue).replace("`", "'")
    # printable characters only: YAML refuses most others written as they are (C1 controls, lone
    # surrogates), and a line separator would break the line
    shown = "".join(c if c.isprintable() else " " for c in prose)
    first = " ".join(shown.split())[:160]
    return first or "The issue"


def _found(observations: list[str]) -> tuple[str | None, str | None, int]:
    """The first non-test definition a search found: path, symbol, line."""
    for text in observations:
        for path, line, symbol in _HIT.findall(_fenced(text, "OUTPUT")):
            if not _is_test(path):
                return path.removeprefix("./"), symbol, int(line)
    for text in observations:  # no definition: the first source file listed (not a package's init)
        listed = [line.strip().removeprefix("./") for line in _fenced(text, "OUTPUT").splitlines()]
        sources = [p for p in listed if p.endswith(".py") and not _is_test(p)]
        sources.sort(key=lambda p: p.endswith("__init__.py"))
        if sources:
            return sources[0], None, 1
    return None, None, 1


def _agent_turn(body: dict[str, Any], role: str = "rubric") -> Reply:
    turn, issue, observations = _conversation(body)
    names = issue_names(issue)
    path, symbol, line = _found(observations)
    if role == "tests":
        return tests_turn(body, turn, issue, names, observations, path)
    last = observations[-1] if observations else ""
    action: tuple[str, dict[str, Any]]
    if turn == 1:
        action = ("bash", {"command": "find . -name '*.py' -not -path '*/.*' | sort | head -200"})
    elif turn == 2 and names:
        pattern = rf"(def|class) ({'|'.join(names)})\b"
        action = ("search", {"pattern": pattern, "path": "."})
    elif turn <= 3 and path:
        action = ("view", {"path": path, "start": max(1, line - 5), "end": line + 40})
    elif turn <= 4:
        marker = "RUBRIC_" + hashlib.sha256(issue.encode("utf-8", "replace")).hexdigest()[:8]
        text = rubric_yaml(_summary(issue), path, symbol)
        action = ("bash", {"command": f"cat > rubrics.yaml <<'{marker}'\n{text}{marker}"})
    elif turn == 5 or ("not valid yet" in last and turn < 7):
        action = ("validate", {})
    else:
        action = ("submit", {})
    tool, args = action
    thought = (
        f"Turn {turn}: I explore the repository for the names the issue gives ({', '.join(names)})."
        " I look at what I found before writing the rubric. Then I validate and submit it."
    )
    if body.get("tools"):
        return Reply(content=thought, tool_calls=[{"name": tool, "arguments": args}])
    block = {
        "bash": args.get("command", ""),
        "search": f"{args.get('pattern', '')}\n{args.get('path', '')}",
        "view": f"{args.get('path', '')} {args.get('start', '')} {args.get('end', '')}".strip(),
    }.get(tool, "")
    return Reply(content=f"THOUGHT: {thought}\n\n```{tool}\n{block}\n```")


def _conversation(body: dict[str, Any]) -> tuple[int, str, list[str]]:
    """An agent request's turn number, issue and observations so far."""
    messages = list(body.get("messages") or [])
    if "system" in body:  # Anthropic's shape: the system prompt apart, tool results in user turns
        messages.insert(0, {"role": "system", "content": body["system"]})
    turn = 1 + sum(1 for m in messages if m.get("role") == "assistant")
    issue = _fenced(message_text(messages[1]) if len(messages) > 1 else "", "ISSUE")
    observations = [message_text(m) for m in messages[2:] if m.get("role") in ("user", "tool")]
    return turn, issue, observations


def _proxy_turn(body: dict[str, Any]) -> Reply:
    """The proxy-patch author: find, search, edit the file found, submit (see the module doc)."""
    turn, issue, observations = _conversation(body)
    names = issue_names(issue)
    path, symbol, line = _found(observations)
    action: tuple[str, dict[str, Any]]
    if turn == 1:
        action = ("bash", {"command": "find . -name '*.py' -not -path '*/.*' | sort | head -200"})
    elif turn == 2 and names:
        action = ("search", {"pattern": rf"(def|class) ({'|'.join(names)})\b", "path": "."})
    elif turn <= 3 and path and re.fullmatch(r"[\w./-]+", path):
        note = re.sub(r"[^A-Za-z0-9_ ]", "", f"fix for {symbol or (names or ['the issue'])[0]}")
        action = ("bash", {"command": f"sed -i '{line}a\\# {note}' '{path}'"})
    else:
        action = ("submit", {})
    tool, args = action
    thought = f"Turn {turn}: I look for the code the issue names, fix it, then submit my change."
    if body.get("tools"):
        return Reply(content=thought, tool_calls=[{"name": tool, "arguments": args}])
    block = {
        "bash": args.get("command", ""),
        "search": f"{args.get('pattern', '')}\n{args.get('path', '')}",
    }.get(tool, "")
    return Reply(content=f"THOUGHT: {thought}\n\n```{tool}\n{block}\n```")


def fake_model(value: int = 1) -> Script:
    """A script answering every role a run asks a model to play (see the module's docstring)."""
    judge = judge_answer(value)

    def script(body: dict[str, Any], number: int) -> Reply:
        messages = body.get("messages") or []
        system = message_text(messages[0]) if messages else ""
        if isinstance(body.get("system"), list):  # Anthropic's shape
            system = message_text({"content": body["system"]})
        if "write a grading rubric" in system and "You cannot see the repository" in system:
            issue = _fenced(message_text(messages[-1]), "ISSUE")
            names = issue_names(issue)
            text = rubric_yaml(_summary(issue), None, names[0] if names else None)
            return Reply(content=f"```yaml\n{text}```")
        if "write a grading rubric" in system:
            return _agent_turn(body)
        if ROLE in system:
            return _agent_turn(body, "tests")
        if "Your job is to fix the issue" in system:
            return _proxy_turn(body)
        if ASKS in system:
            return similarity_answer(body)
        if "Does this patch resolve the issue?" in message_text(messages[-1] if messages else {}):
            return Reply(content="YES 0.9" if value else "NO 0.1")
        return judge(body, number)

    return script
