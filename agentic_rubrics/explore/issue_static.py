"""The issue-only static rubric: for tasks with no repository at hand (SWE-bench files alone).

Names come from the issue — paths, traceback frames, dotted names and symbols, the exception it expects —
and are confirmed only against the candidates' own diffs: the files they change, the function context
of their hunks, and the ``def``/``class`` lines around their changes. Nothing the diffs do not show is
written down. Every item carries a check.
"""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.explore.common import (
    CODE_LINE,
    expected_exceptions,
    first_party_packages,
    item,
    literal_fragment,
    scope_items,
    static_rubric,
)
from agentic_rubrics.explore.mentions import Mentions, find_mentions, is_builtin_exception
from agentic_rubrics.patch import (
    TEST_GLOBS,
    ParsedPatch,
    enclosing_chains,
    is_test_path,
    parse_patch,
)
from agentic_rubrics.types import Rubric, Task


def _suffix_match(printed: str, path: str) -> bool:
    printed = printed.replace("\\", "/")
    return printed == path or printed.endswith("/" + path) or path.endswith("/" + printed)


def _parsed(task: Task) -> list[ParsedPatch]:
    parsed: list[ParsedPatch] = []
    for c in task.candidates:
        try:
            parsed.append(parse_patch(c.patch))
        except PatchParseError:
            continue
    return parsed


def _diff_votes(parsed: list[ParsedPatch]) -> tuple[Counter[str], Counter[str]]:
    """What the diffs show: the non-test files changed, and the definitions around changed lines,
    each with the number of candidates that show it. Sets are counted in sorted order (ties are
    broken by name): the rubric must not depend on PYTHONHASHSEED."""
    file_votes: Counter[str] = Counter()
    symbol_votes: Counter[str] = Counter()
    for p in parsed:
        changed = {path for f in p.files for path in f.paths if not is_test_path(path)}
        file_votes.update(sorted(changed))
        shown: set[str] = set()
        for f in p.files:
            if is_test_path(f.path):
                continue
            for chain in enclosing_chains(f):
                shown.update(name for name, _ in chain)
        symbol_votes.update(sorted(shown))
    return file_votes, symbol_votes


def _confirmed(
    mentions: Mentions, file_votes: Counter[str], symbol_votes: Counter[str]
) -> tuple[list[str], list[str]]:
    """The files and symbols the issue names that a diff confirms; the deepest frame first."""
    frame_files = [
        path
        for fr in reversed(mentions.frames)
        for path in file_votes
        if _suffix_match(fr.path, path)
    ]
    path_files = [
        path for printed in mentions.paths for path in file_votes if _suffix_match(printed, path)
    ]
    files = list(dict.fromkeys(frame_files + path_files))
    names = set(mentions.names)
    frame_funcs = [fr.func for fr in reversed(mentions.frames) if fr.func in symbol_votes]
    by_votes = sorted(symbol_votes, key=lambda s: (-symbol_votes[s], s))
    symbols = list(dict.fromkeys(frame_funcs + [s for s in by_votes if s in names]))
    return files, symbols


def _file_items(files: list[str], symbols: list[str]) -> list[dict[str, Any]]:
    fc: list[dict[str, Any]] = []
    if files:
        fc.append(
            item(
                "FC1",
                f"Modifies {' or '.join(files[:3])}, named in the issue",
                3,
                {"touches": files[:3]},
            )
        )
    if symbols:
        fc.append(
            item(
                f"FC{len(fc) + 1}",
                f"Changes code inside {' or '.join(symbols[:4])}, named in the issue",
                2,
                {"touches_symbol": symbols[:4], "not_in": TEST_GLOBS},
            )
        )
    return fc + scope_items(len(fc) + 1, 2)


def _spec_items(
    mentions: Mentions, parsed: list[ParsedPatch], files: list[str], symbol_votes: Counter[str]
) -> list[dict[str, Any]]:
    sa: list[dict[str, Any]] = []
    for exc in expected_exceptions(mentions)[:2]:
        if (
            is_builtin_exception(exc)
            or any(exc in s for s in symbol_votes)
            or exc in mentions.names
        ):
            sa.append(
                item(
                    f"SA{len(sa) + 1}",
                    f"Raises or handles {exc}, the exception the issue expects",
                    2,
                    {"adds_match": rf"\b{re.escape(exc)}\b", "not_in": TEST_GLOBS},
                )
            )
    # an error message the issue quotes, found on a line some candidate changes or keeps around a change
    for message in mentions.messages[:3]:
        fragment = literal_fragment(message)
        if fragment and any(
            fragment in ln.text for p in parsed for f in p.files for h in f.hunks for ln in h.lines
        ):
            sa.append(
                item(
                    f"SA{len(sa) + 1}",
                    f"Changes the code around the message the issue quotes ({fragment[:60]!r})",
                    2,
                    {"removes_match": re.escape(fragment), "not_in": TEST_GLOBS},
                )
            )
            break
    if files:
        sa.append(
            item(
                f"SA{len(sa) + 1}",
                f"Changes executable code in {' or '.join(files[:3])}, not only comments",
                2,
                {"adds_match": CODE_LINE, "in": files[:3]},
            )
        )
    return sa


def _first_party(task: Task, file_votes: Counter[str]) -> list[str]:
    first_party = sorted({p for path in file_votes for p in first_party_packages([path])})
    repo_name = task.repo.rsplit("/", 1)[-1].replace("-", "_")
    if repo_name.isidentifier():
        first_party = sorted(set(first_party) | {repo_name})
    return first_party


def build_issue_rubric(task: Task) -> Rubric:
    """A checks-only rubric from the issue, confirmed against the candidates' diffs."""
    mentions = find_mentions(task.problem_statement)
    parsed = _parsed(task)
    file_votes, symbol_votes = _diff_votes(parsed)
    files, symbols = _confirmed(mentions, file_votes, symbol_votes)
    confirmed = ", ".join(files[:3] + symbols[:4]) or "nothing the issue names"
    return static_rubric(
        task,
        bug=f"Not diagnosed (rule-based, issue only); the candidates' diffs confirm {confirmed}",
        file_change=_file_items(files, symbols),
        spec=_spec_items(mentions, parsed, files, symbol_votes),
        first_party=_first_party(task, file_votes),
    )
