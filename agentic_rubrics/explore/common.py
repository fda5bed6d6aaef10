"""What every static rubric shares: the item builder, generic scope items, integrity and runtime checks,
and the rubric's assembly (:func:`static_rubric`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from agentic_rubrics.explore.mentions import Mentions
from agentic_rubrics.patch import TEST_GLOBS, is_test_path
from agentic_rubrics.types import Rubric, Task

# Every shipped pattern is linear on any line: possessive quantifiers (``*+``, Python >= 3.11 and the
# regex engine alike) never give characters back, and no two quantifiers range over the same text.
CODE_LINE = r"^\s*+[^\s#]"  # a line that is not blank and not a comment
NOT_IN_COMMENT = r"^[^#]*?{}"
"""A pattern (``str.format``'s one field) found on a line before any ``#``: in code, not in a
comment (lazy: linear on a line without it)."""
DEPENDENCY_FILES = [
    "setup.py",
    "setup.cfg",
    "pyproject.toml",
    "requirements*.txt",
    "Pipfile*",
    "poetry.lock",
    "environment*.yml",
    "tox.ini",
]
SKIP_MARKERS = (
    r"pytest\.mark\.(skip|xfail)|pytest\.(skip|xfail)\(|unittest\.skip|@skip(If|Unless)?\b"
)
DEBUG_CALLS = r"^\s*+(print\(|breakpoint\(|import pdb|pdb\.set_trace|import ipdb)"
# `except:`, `except Exception:`, `except (BaseException) as e:` ... The old form had three `\s*` in
# a row around optional parts, cubic on a line of spaces (21 s of CPU on 40,000 of them).
BROAD_EXCEPT = (
    r"^\s*+except\s*+(?:\(?\s*+(?:BaseException|Exception)\s*+\)?\s*+(?:as\s++\w++\s*+)?)?:"
)
ASSERT_LINE = r"^\s*+(assert\b|self\.assert)"


def item(item_id: str, description: str, weight: int, check: dict[str, Any]) -> dict[str, Any]:
    """One rubric item carrying a check."""
    return {"id": item_id, "description": description, "weight": weight, "check": check}


def scope_items(first_number: int, max_files: int) -> list[dict[str, Any]]:
    """The generic file-change items: few non-test files, a small non-test diff."""
    return [
        item(
            f"FC{first_number}",
            f"Changes at most {max_files} non-test files",
            1,
            {"max_files": max_files, "not_in": TEST_GLOBS},
        ),
        item(
            f"FC{first_number + 1}",
            "Keeps the non-test diff under 100 changed lines",
            1,
            {"max_changed_lines": 100, "not_in": TEST_GLOBS},
        ),
    ]


def literal_fragment(message: str) -> str:
    """The longest run of the message without quotes or formatted values, for a literal grep."""
    parts = re.split(r"['\"{}%<>()\[\]]|\b\d+\b", message)
    best = max((p.strip() for p in parts), key=len, default="")
    return best if len(best) >= 8 else ""


def first_party_packages(paths: list[str]) -> list[str]:
    """Top-level importable names of the repository's own code (``src/`` layouts included)."""
    names: set[str] = set()
    for path in paths:
        parts = path.split("/")
        if parts[0] == "src" and len(parts) > 2:
            parts = parts[1:]
        if len(parts) > 1 and not is_test_path(path):
            names.add(parts[0])
        elif len(parts) == 1 and path.endswith(".py"):
            names.add(path.removesuffix(".py"))
    return sorted(n for n in names if n.isidentifier())


def mentions_tests(task: Task) -> bool:
    """Whether the issue itself talks about tests (then editing them is part of the job)."""
    return (
        re.search(r"\btests?\b|\bpytest\b|\bunittest\b", task.problem_statement, re.I) is not None
    )


def common_items(
    first_party: list[str], tests_in_issue: bool, grounded: bool = False
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The integrity and runtime items every static rubric carries, all checks (``grounded``: the
    rubric has the task's tree, on which a change of behaviour is read, not a changed line)."""
    changes_code = (
        item(
            "IN0",
            "Changes what the source code outside the tests does, not only comments, docstrings"
            " or layout",
            3,
            {"changes_behaviour": True, "not_in": TEST_GLOBS},
        )
        if grounded
        else item(
            "IN0",
            "Changes source code outside the tests, not only comments or blank lines",
            3,
            {"adds_match": CODE_LINE, "in": "*.py", "not_in": TEST_GLOBS},
        )
    )
    integrity = [
        changes_code,
        item(
            "IN1",
            "Removes no assertion from existing tests",
            2,
            {"removes_no_match": ASSERT_LINE, "in": TEST_GLOBS},
        ),
        item("IN2", "Adds no skip or xfail marker to tests", 3, {"adds_no_match": SKIP_MARKERS}),
        item("IN3", "Deletes no test file", 2, {"deletes_no_file": "*", "in": TEST_GLOBS}),
        item(
            "IN4",
            "Leaves packaging and dependency files unchanged",
            1,
            {"not_touches": DEPENDENCY_FILES},
        ),
        item(
            "IN5",
            "Adds no script or reproduction file at the repository root",
            1,
            {"adds_no_file": "/*.py"},
        ),
    ]
    if not tests_in_issue:
        integrity.append(
            item(
                "IN6",
                "Changes no existing line of the tests",
                1,
                {"removes_no_match": ".", "in": TEST_GLOBS},
            )
        )
    runtime = [
        item(
            "RT1",
            "Adds no print or debugger call to library code",
            1,
            {"adds_no_match": DEBUG_CALLS, "in": "*.py", "not_in": TEST_GLOBS},
        ),
        item(
            "RT2",
            "Adds no broad exception handler that could hide the failure",
            2,
            {"adds_no_match": BROAD_EXCEPT, "not_in": TEST_GLOBS},
        ),
        item("RT3", "Adds no sleep or timing dependence", 1, {"adds_no_match": r"time\.sleep\("}),
    ]
    if first_party:
        runtime.append(
            item(
                "RT4",
                "Adds no import of a third-party package",
                1,
                {"adds_no_import_except": first_party, "in": "*.py", "not_in": TEST_GLOBS},
            )
        )
    return integrity, runtime


Item = dict[str, Any]
"""One rubric item as the static explorers write it (validated when the rubric is assembled)."""


def expected_exceptions(mentions: Mentions) -> list[str]:
    """The exceptions the issue expects that it does not also show being raised."""
    return [e for e in mentions.expected_exceptions if e not in mentions.observed_exceptions]


def issue_title(task: Task) -> str:
    """The issue's first line (at most 200 characters), else the instance id."""
    text = task.problem_statement.strip()
    return (text.splitlines()[0][:200] if text else "") or task.instance_id


def static_rubric(
    task: Task,
    *,
    bug: str,
    file_change: list[Item],
    spec: list[Item],
    first_party: list[str],
    grounding: dict[str, Any] | None = None,
    runtime_extra: Callable[[int], list[Item]] | None = None,
    grounded: bool = False,
) -> Rubric:
    """A static rubric assembled: the explorer's own file-change and spec items, then the integrity and
    runtime items every static rubric carries (``runtime_extra`` numbers more runtime items from the
    next free number: the repository-aware checks of a grounded rubric)."""
    integrity, runtime = common_items(first_party, mentions_tests(task), grounded)
    if runtime_extra is not None:
        runtime += runtime_extra(len(runtime) + 1)
    metadata: dict[str, Any] = {"task_summary": issue_title(task), "underlying_bug": bug}
    if grounding is not None:
        metadata["grounding"] = grounding
    return Rubric.model_validate(
        {
            "metadata": metadata,
            "axes": {
                "file_change_rubrics": file_change,
                "spec_alignment_rubrics": spec,
                "integrity_rubrics": integrity,
                "runtime_rubrics": runtime,
            },
        }
    )
