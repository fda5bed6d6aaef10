"""The static explorer: a rule-driven pass over the repository that writes a checks-only rubric.

It makes the read-only tool calls an agent would make (find, grep, read a file, Python ``ast``) through
the sandbox: it takes the leads of the issue (traceback frames, paths, symbols, error messages, the
exception the user expects), locates their definitions, weighs the evidence, and writes items that all
carry a deterministic check. Every path and symbol it writes exists in the repository. It is a
rule-based verifier and says so in the rubric's metadata.
"""

from __future__ import annotations

import re
from typing import Any

from agentic_rubrics.explore.codeindex import CodeIndex
from agentic_rubrics.explore.common import (
    NOT_IN_COMMENT,
    Item,
    expected_exceptions,
    first_party_packages,
    item,
    scope_items,
    static_rubric,
)
from agentic_rubrics.explore.leads import Located, locate
from agentic_rubrics.explore.mentions import Mentions, find_mentions, is_builtin_exception
from agentic_rubrics.explore.repo_items import (
    applies_item,
    changes_behaviour_check,
    postimage_items,
)
from agentic_rubrics.patch import is_test_path
from agentic_rubrics.protocols import Sandbox
from agentic_rubrics.types import Rubric, Task


def _defined_exceptions(index: CodeIndex, names: list[str]) -> set[str]:
    return {n for n in names if any(d.kind == "class" for d in index.lookup(n))}


async def _file_items(index: CodeIndex, located: Located, top: str, leads: list[str]) -> list[Item]:
    """Where the fix goes: the top file, the other plausible ones, the definitions and the one-line
    constant they hold (each confirmed by ``ast``)."""
    why = ", ".join(r for r in located.files[top].reasons if r)
    fc = [item("FC1", f"Modifies {top} ({why})", 3 if len(leads) == 1 else 2, {"touches": top})]
    if len(leads) > 1:
        fc.append(item("FC2", f"Modifies one of {', '.join(leads)}", 2, {"touches": leads}))
    for path in leads:
        await index.parse(path)  # what is written down is confirmed by ast
    ranked = [
        (parsed, ev)
        for d, ev in located.ranked_definitions(leads)
        if (parsed := index.resolve(d)) is not None
    ]
    code = [d for d, _ in ranked if d.kind != "constant"][:3]
    if code:
        names = list(dict.fromkeys(d.qualname for d in code))
        fc.append(
            item(
                f"FC{len(fc) + 1}",
                f"Changes what one of {', '.join(names)} does (its code, not only comments,"
                " docstrings or statements without effect)",
                2,
                changes_behaviour_check([(d.path, d.qualname) for d in code]),
            )
        )
    constants = [d for d, _ in ranked[:3] if d.kind == "constant" and d.lineno == d.end_lineno]
    for d in constants[:1]:
        fc.append(
            item(
                f"FC{len(fc) + 1}",
                f"Changes the line that defines {d.qualname} in {d.path}",
                2,
                {"removes_match": rf"^\s*+{re.escape(d.name)}\s*+(?::[^=]*+)?=", "in": d.path},
            )
        )
    return fc


def _exception_items(
    index: CodeIndex, mentions: Mentions, top: str, first_number: int
) -> list[Item]:
    """The exceptions the issue expects (defined in the repository or built in), raised in ``top``."""
    expected = expected_exceptions(mentions)
    defined = _defined_exceptions(index, expected)
    known = [e for e in expected if e in defined or is_builtin_exception(e)]
    return [
        item(
            f"SA{first_number + n}",
            f"Raises or handles {exc}, the exception the issue expects, in {top} (in code, not in"
            " a comment)",
            3 if n == 0 else 2,
            {"adds_match": NOT_IN_COMMENT.format(rf"\b{re.escape(exc)}\b"), "in": top},
        )
        for n, exc in enumerate(known[:2])
    ]


def _bug(located: Located, top: str | None) -> str:
    if top is None:
        return (
            "Not diagnosed (rule-based explorer); no location in the repository matched the issue"
        )
    where = [d.qualname for d, _ in located.ranked_definitions([top])[:2]]
    return f"Not diagnosed (rule-based explorer); the issue points at {top}" + (
        f" ({', '.join(where)})" if where else ""
    )


async def build_rubric(task: Task, index: CodeIndex) -> tuple[Rubric, Located]:
    """Explore and write the rubric for one task."""
    mentions = find_mentions(task.problem_statement)
    located = await locate(index, mentions)
    source_files = [f for f in located.top_files(5) if not is_test_path(f)]
    fc: list[Item] = []
    sa: list[Item] = []
    top = source_files[0] if source_files else None
    leads: list[str] = []
    if top is not None:
        # the other files with at least half the top file's evidence are plausible places too
        best = located.files[top].score
        leads = [f for f in source_files[:3] if located.files[f].score >= 0.5 * best]
        fc = await _file_items(index, located, top, leads)
        sa.append(
            item(
                "SA1",
                f"Changes what the code in {' or '.join(leads)} does, not only comments, docstrings,"
                " layout or statements without effect",
                3,
                {"changes_behaviour": True, "in": leads},
            )
        )
    fc += scope_items(len(fc) + 1, max(2, len(source_files)))
    fc.append(applies_item(f"FC{len(fc) + 1}"))
    if top is not None and expected_exceptions(mentions):
        sa += _exception_items(index, mentions, top, len(sa) + 1)
    rubric = static_rubric(
        task,
        bug=_bug(located, top),
        file_change=fc,
        spec=sa,
        first_party=first_party_packages(index.files),
        grounding={**located.summary(), "located_files": len(leads)},
        runtime_extra=postimage_items,
        grounded=True,
    )
    return rubric, located


class StaticExplorer:
    """The no-model explorer (``--explorer static``)."""

    name = "static"

    async def explore(
        self, task: Task, sandbox: Sandbox | None
    ) -> tuple[Rubric, list[dict[str, Any]]]:
        """The rubric and the trajectory of tool calls that grounded it.

        With no sandbox (no repository at hand), the issue-only static rubric: names from the issue,
        confirmed against the candidates' diffs.
        """
        if sandbox is None:
            from agentic_rubrics.explore.issue_static import build_issue_rubric

            return build_issue_rubric(task), [{"tool": "issue_and_diffs", "argument": None}]
        index = CodeIndex(sandbox)
        rubric, _ = await build_rubric(task, index)
        steps = [
            {
                "tool": s.tool,
                "argument": s.argument,
                "exit_code": s.exit_code,
                "output_chars": s.output_chars,
                "truncated": s.truncated,
            }
            for s in index.steps
        ]
        return rubric, steps
