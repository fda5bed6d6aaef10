"""The static explorer: a rule-driven pass over the repository that writes a checks-only rubric.

It makes the read-only tool calls an agent would make (find, grep, read a file, Python ``ast``) through
the sandbox: it takes the leads of the issue (traceback frames, paths, symbols, error messages, the
exception the user expects), locates their definitions, weighs the evidence, and writes items that all
carry a deterministic check. Every path and symbol it writes exists in the repository. It is a
rule-based verifier and says so in the rubric's metadata.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics import Sandbox
from agentic_rubrics.explore.codeindex import CodeIndex, Definition, is_test_path
from agentic_rubrics.explore.common import (
    CODE_LINE,
    common_items,
    first_party_packages,
    item,
    literal_fragment,
    mentions_tests,
    scope_items,
)
from agentic_rubrics.explore.mentions import Mentions, find_mentions, is_builtin_exception
from agentic_rubrics.types import Rubric, Task

MAX_NAMES = 40
MAX_PARSED_FILES = 60


@dataclass
class Evidence:
    """Why the explorer believes a location matters."""

    score: float = 0.0
    reasons: list[str] = field(default_factory=list)

    def add(self, points: float, reason: str) -> None:
        self.score += points
        if reason not in self.reasons:
            self.reasons.append(reason)


@dataclass
class Located:
    """The outcome of locating: scored definitions and files."""

    definitions: dict[Definition, Evidence]
    files: dict[str, Evidence]

    def top_files(self, n: int) -> list[str]:
        ranked = sorted(self.files.items(), key=lambda kv: (-kv[1].score, kv[0]))
        return [f for f, ev in ranked[:n] if ev.score > 0]

    def top_definitions(self, path: str, n: int) -> list[Definition]:
        ranked = sorted(
            ((d, ev) for d, ev in self.definitions.items() if d.path == path),
            key=lambda kv: (-kv[1].score, kv[0].lineno),
        )
        return [d for d, ev in ranked[:n] if ev.score > 0]


FRAME_WEIGHTS = (5.0, 2.5)
"""Evidence of the deepest repository frame of a traceback, then the one above it; others get 1."""
CALLEE_DECAY = (0.5, 0.25)
"""Share of a function's evidence passed to what it calls, one and two calls away."""


async def locate(task: Task, index: CodeIndex, mentions: Mentions) -> Located:
    """Find and score the definitions and files the issue points at."""
    defs: dict[Definition, Evidence] = defaultdict(Evidence)
    direct: dict[str, Evidence] = defaultdict(Evidence)  # evidence about files themselves
    await index.list_files()

    # traceback frames: the deepest frame inside the repository is where the failure surfaced
    repo_frames = [(f, index.match_path(f.path)) for f in mentions.frames]
    repo_frames = [(f, p) for f, p in repo_frames if p is not None]
    for rank, (frame, path) in enumerate(reversed(repo_frames)):
        assert path is not None
        weight = FRAME_WEIGHTS[rank] if rank < len(FRAME_WEIGHTS) else 1.0
        if is_test_path(path):
            weight *= 0.25
        await index.parse(path)
        d = index.enclosing(path, frame.line)
        if d is None or d.name != frame.func:
            d = next((x for x in index.definitions.get(path, []) if x.name == frame.func), None)
        if d is not None:
            defs[d].add(weight, "traceback frame")
        else:
            direct[path].add(weight, "traceback frame")

    # paths named in the text
    for printed in mentions.paths:
        path = index.match_path(printed)
        if path is not None:
            direct[path].add(0.5 if is_test_path(path) else 2.0, "path in issue")

    # symbols named in the text, located by their definitions
    names = mentions.names[:MAX_NAMES]
    for path in (await index.grep_definitions(names))[:MAX_PARSED_FILES]:
        await index.parse(path)
    named = set(names)
    dotted = {s for s in mentions.symbols if "." in s}
    by_name: dict[str, list[Definition]] = defaultdict(list)
    for path_defs in index.definitions.values():
        for d in path_defs:
            if d.name in named:
                by_name[d.name].append(d)
    for found in by_name.values():
        ambiguity = max(1, len(found))
        for d in found:
            qualified = any(d.qualname.endswith(s) or s.endswith(d.qualname) for s in dotted)
            points = (2.5 if qualified else 1.5) / ambiguity**0.5
            if is_test_path(d.path):
                points *= 0.3
            defs[d].add(points, "symbol in issue")

    # error messages quoted in the issue, found literally in the code
    for message in mentions.messages[:5]:
        fragment = literal_fragment(message)
        if not fragment:
            continue
        for path, line in (await index.grep_fixed(fragment))[:20]:
            if is_test_path(path):
                continue
            await index.parse(path)
            d = index.enclosing(path, line)
            if d is not None:
                defs[d].add(2.0, "raises the quoted message")
            else:
                direct[path].add(2.0, "raises the quoted message")

    # what the located functions call (and their decorators): a symptom in a public function is
    # often rooted in a helper it calls
    await _propagate_to_callees(index, defs)

    # a file's evidence: what points at the file itself, its strongest definition, and a little of
    # the others (many frames in one file must not outweigh the frame where the failure surfaced)
    files: dict[str, Evidence] = defaultdict(Evidence)
    for path, ev in direct.items():
        files[path].add(ev.score, ", ".join(ev.reasons))
    by_file: dict[str, list[Evidence]] = defaultdict(list)
    for d, ev in defs.items():
        by_file[d.path].append(ev)
    for path, evs in by_file.items():
        ranked = sorted(evs, key=lambda e: -e.score)
        files[path].add(
            ranked[0].score + 0.3 * sum(e.score for e in ranked[1:]), "holds located code"
        )
        for e in ranked[:1]:
            for reason in e.reasons:
                files[path].add(0.0, reason)
    return Located(dict(defs), dict(files))


async def _propagate_to_callees(index: CodeIndex, defs: dict[Definition, Evidence]) -> None:
    frontier = sorted(
        (
            (d, ev.score)
            for d, ev in defs.items()
            if d.kind == "function" and not is_test_path(d.path)
        ),
        key=lambda x: -x[1],
    )[:6]
    for decay in CALLEE_DECAY:
        names = sorted({n for d, _ in frontier for n in index.callees(d)})
        if not names:
            return
        for path in (await index.grep_definitions(names[:MAX_NAMES]))[:MAX_PARSED_FILES]:
            await index.parse(path)
        by_name: dict[str, list[Definition]] = defaultdict(list)
        for path_defs in index.definitions.values():
            for x in path_defs:
                if x.kind == "function" and not is_test_path(x.path):
                    by_name[x.name].append(x)
        next_frontier = []
        for parent, score in frontier:
            for name in index.callees(parent):
                targets = by_name.get(name, [])
                if not 0 < len(targets) <= 3:  # a name defined everywhere says nothing
                    continue
                for target in targets:
                    gain = score * decay / len(targets)
                    defs[target].add(gain, f"called by {parent.qualname}")
                    next_frontier.append((target, gain / decay))
        frontier = next_frontier[:12]


async def _defined_exceptions(index: CodeIndex, names: list[str]) -> set[str]:
    defined = set()
    for path in await index.grep_definitions(names):
        for d in await index.parse(path):
            if d.kind == "class" and d.name in names:
                defined.add(d.name)
    return defined


async def build_rubric(task: Task, index: CodeIndex) -> tuple[Rubric, Located]:
    """Explore and write the rubric for one task."""
    mentions = find_mentions(task.problem_statement)
    located = await locate(task, index, mentions)
    source_files = [f for f in located.top_files(5) if not is_test_path(f)]
    fc: list[dict[str, Any]] = []
    sa: list[dict[str, Any]] = []
    top = source_files[0] if source_files else None
    if top is not None:
        # the other files with at least half the top file's evidence are plausible places too
        best = located.files[top].score
        leads = [f for f in source_files[:3] if located.files[f].score >= 0.5 * best]
        why = ", ".join(r for r in located.files[top].reasons if r)
        fc.append(
            item("FC1", f"Modifies {top} ({why})", 3 if len(leads) == 1 else 2, {"touches": top})
        )
        if len(leads) > 1:
            fc.append(item("FC2", f"Modifies one of {', '.join(leads)}", 2, {"touches": leads}))
        symbols = sorted(
            ((d, ev) for d, ev in located.definitions.items() if d.path in leads and ev.score > 0),
            key=lambda kv: (-kv[1].score, kv[0].path, kv[0].lineno),
        )[:3]
        if symbols:
            names = list(dict.fromkeys(d.qualname for d, _ in symbols))
            fc.append(
                item(
                    f"FC{len(fc) + 1}",
                    f"Changes code inside one of {', '.join(names)}",
                    2,
                    {"touches_symbol": names if len(names) > 1 else names[0], "in": leads},
                )
            )
        sa.append(
            item(
                "SA1",
                f"Changes executable code in {' or '.join(leads)}, not only comments or blank lines",
                3,
                {"adds_match": CODE_LINE, "in": leads},
            )
        )
    fc += scope_items(len(fc) + 1, max(2, len(source_files)))
    expected = [e for e in mentions.expected_exceptions if e not in mentions.observed_exceptions]
    if expected and top is not None:
        defined = await _defined_exceptions(index, expected)
        known = [e for e in expected if e in defined or is_builtin_exception(e)]
        for n, exc in enumerate(known[:2]):
            sa.append(
                item(
                    f"SA{len(sa) + 1}",
                    f"Raises or handles {exc}, the exception the issue expects, in {top}",
                    3 if n == 0 else 2,
                    {"adds_match": rf"\b{re.escape(exc)}\b", "in": top},
                )
            )
    integrity, runtime = common_items(first_party_packages(index.files), mentions_tests(task))
    title = task.problem_statement.strip().splitlines()[0][:200] if task.problem_statement else ""
    bug = (
        f"Not diagnosed (rule-based explorer); the issue points at {top}"
        + (f" ({', '.join(d.qualname for d in located.top_definitions(top, 2))})" if top else "")
        if top
        else "Not diagnosed (rule-based explorer); no location in the repository matched the issue"
    )
    rubric = Rubric.model_validate(
        {
            "metadata": {"task_summary": title or task.instance_id, "underlying_bug": bug},
            "axes": {
                "file_change_rubrics": fc,
                "spec_alignment_rubrics": sa,
                "integrity_rubrics": integrity,
                "runtime_rubrics": runtime,
            },
        }
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
