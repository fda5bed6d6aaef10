"""The deterministic ``check`` predicates of rubrics.yaml, evaluated on a parsed diff.

An item with a check is decided here and never by a model: no cost, no flakiness. A check that is
invalid (unknown name, wrong argument, regex that does not compile) or a patch that cannot be parsed
gives ``missing: check_error``, never a 0.

Paths are matched as globs against repository-relative paths (``*`` also crosses ``/``). A pattern
without ``/`` also matches a file's base name; a pattern ending in ``/`` matches everything below
that folder; a pattern starting with ``/`` is anchored at the root (``/*.py``: top-level files only).
Regexes are Python ``re`` patterns searched in each added or removed line, under a time limit
(:mod:`agentic_rubrics.rubric.check_regex`).

Every predicate also takes two optional file filters: ``in`` (only files matching this glob, or any of
a list) and ``not_in`` (leave out files matching). ``{max_files: 1, not_in: '*tests/*'}`` says "at most
one non-test file changes".
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, Literal

from agentic_rubrics.exceptions import CheckError, PatchParseError
from agentic_rubrics.patch import (
    ChangedFile,
    ParsedPatch,
    parse_patch,
    path_matches,
    touches_symbol,
)
from agentic_rubrics.rubric import checks_repo
from agentic_rubrics.rubric.check_regex import (
    RegexTimeout,
    any_line_matches,
    regex_problem,
)
from agentic_rubrics.surrogates import has_lone_surrogates
from agentic_rubrics.types import Check

ArgKind = Literal[
    "glob", "globs", "regex", "int", "symbols", "flag", "functions", "flag_or_functions"
]

_SYMBOL_RE = re.compile(r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")


def _matches_any(paths: Iterable[str], globs: list[str]) -> bool:
    return any(path_matches(p, g) for p in paths for g in globs)


def _filtered(patch: ParsedPatch, check: Check) -> list[ChangedFile]:
    include = _globs(check.path) if check.path is not None else None
    exclude = _globs(check.exclude) if check.exclude is not None else []
    return [
        f
        for f in patch.files
        if (include is None or _matches_any(f.paths, include))
        and not _matches_any(f.paths, exclude)
    ]


def _any_line(lines: Iterable[str], regex: str) -> bool:
    return any_line_matches(lines, regex)


def _globs(arg: Any) -> list[str]:
    return [arg] if isinstance(arg, str) else list(arg)


Files = list[ChangedFile]


@dataclass(frozen=True)
class CheckSpec:
    """One predicate of the vocabulary: ``fn(files, arg)`` gets the files left after ``in``/``not_in``."""

    name: str
    arg: ArgKind
    doc: str
    example: str
    fn: Callable[[Files, Any], bool]
    repository: bool = False
    """Decided on the task's base tree at judge time (:mod:`agentic_rubrics.rubric.checks_repo`), not here."""


CHECKS: dict[str, CheckSpec] = {}
"""The closed vocabulary, name -> spec. Add a predicate here and it is known everywhere."""


def _spec(
    name: str, arg: ArgKind, doc: str, example: str
) -> Callable[[Callable[[Files, Any], bool]], CheckSpec]:
    def wrap(fn: Callable[[Files, Any], bool]) -> CheckSpec:
        spec = CheckSpec(name, arg, doc, example, fn)
        CHECKS[name] = spec
        return spec

    return wrap


def _added(files: Files) -> Iterator[str]:
    return (ln for f in files for ln in f.added)


def _removed(files: Files) -> Iterator[str]:
    return (ln for f in files for ln in f.removed)


@_spec(
    "touches",
    "globs",
    "some changed file matches the glob (or one of them)",
    "{touches: src/pkg/core.py}",
)
def _touches(files: Files, arg: Any) -> bool:
    return any(_matches_any(f.paths, _globs(arg)) for f in files)


@_spec(
    "not_touches",
    "globs",
    "no changed file matches the glob (or any of them)",
    "{not_touches: [setup.py, 'requirements*.txt']}",
)
def _not_touches(files: Files, arg: Any) -> bool:
    return not _touches.fn(files, arg)


@_spec(
    "only_touches",
    "globs",
    "every changed file matches one of the globs",
    "{only_touches: [src/pkg/core.py, 'tests/']}",
)
def _only_touches(files: Files, arg: Any) -> bool:
    globs = _globs(arg)
    return all(any(path_matches(p, g) for g in globs) for f in files for p in f.paths)


@_spec(
    "adds_match",
    "regex",
    "some added line matches the regex",
    "{adds_match: 'raise ValueError', in: src/pkg/core.py}",
)
def _adds_match(files: Files, arg: str) -> bool:
    return _any_line(_added(files), arg)


@_spec(
    "adds_no_match",
    "regex",
    "no added line matches the regex",
    r"{adds_no_match: '^\s*print\(', in: '*.py', not_in: '*tests/*'}",
)
def _adds_no_match(files: Files, arg: str) -> bool:
    return not _any_line(_added(files), arg)


@_spec(
    "removes_match",
    "regex",
    "some removed line matches the regex",
    "{removes_match: 'if n > 0', in: src/pkg/core.py}",
)
def _removes_match(files: Files, arg: str) -> bool:
    return _any_line(_removed(files), arg)


@_spec(
    "removes_no_match",
    "regex",
    "no removed line matches the regex",
    r"{removes_no_match: '^\s*assert\b', in: '*tests/*'}",
)
def _removes_no_match(files: Files, arg: str) -> bool:
    return not _any_line(_removed(files), arg)


@_spec("max_files", "int", "at most N files are changed", "{max_files: 1, not_in: '*tests/*'}")
def _max_files(files: Files, arg: int) -> bool:
    return len(files) <= arg


@_spec(
    "max_changed_lines",
    "int",
    "at most N lines are added or removed in all",
    "{max_changed_lines: 40, in: '*.py'}",
)
def _max_changed_lines(files: Files, arg: int) -> bool:
    return sum(len(f.added) + len(f.removed) for f in files) <= arg


@_spec("adds_file", "glob", "the patch creates a file matching the glob", "{adds_file: 'tests/'}")
def _adds_file(files: Files, arg: str) -> bool:
    return any(f.is_new and _matches_any(f.paths, [arg]) for f in files)


@_spec(
    "adds_no_file", "glob", "the patch creates no file matching the glob", "{adds_no_file: '*.py'}"
)
def _adds_no_file(files: Files, arg: str) -> bool:
    return not _adds_file.fn(files, arg)


@_spec(
    "deletes_no_file",
    "glob",
    "the patch deletes no file matching the glob",
    "{deletes_no_file: '*'}",
)
def _deletes_no_file(files: Files, arg: str) -> bool:
    return not any(f.is_deleted and _matches_any(f.paths, [arg]) for f in files)


@_spec(
    "touches_symbol",
    "symbols",
    "a changed line lies inside the function or class (name or Class.method; or one of a list), as the diff shows",
    "{touches_symbol: Parser.parse_header, in: src/pkg/parser.py}",
)
def _touches_symbol(files: Files, arg: Any) -> bool:
    return any(touches_symbol(files, symbol) for symbol in _globs(arg))


# possessive quantifiers: linear on any line (nothing here ever needs to give characters back)
_IMPORT = re.compile(
    r"^\s*+(?:import\s++([\w.]++(?:\s*+,\s*+[\w.]++)*+)|from\s++([\w.]++)\s++import\b)"
)


def imported_modules(line: str) -> list[str]:
    """Top-level modules an import line brings in (relative imports bring in none)."""
    m = _IMPORT.match(line)
    if not m:
        return []
    names = m.group(1).split(",") if m.group(1) else [m.group(2)]
    return [n.strip().split(".")[0] for n in names if n.strip() and not n.strip().startswith(".")]


@_spec(
    "adds_no_import_except",
    "globs",
    "every module imported by an added line is in the standard library or in the list",
    "{adds_no_import_except: [sympy], in: '*.py'}",
)
def _adds_no_import_except(files: Files, arg: Any) -> bool:
    allowed = set(_globs(arg)) | set(sys.stdlib_module_names) | {"__future__"}
    return all(
        m in allowed
        for f in files
        if f.path.endswith(".py")
        for ln in f.added
        for m in imported_modules(ln)
    )


# the repository-aware checks are decided on the base tree at judge time; from the diff alone: missing
CHECKS.update(
    {
        s.name: CheckSpec(
            s.name, s.arg, s.doc, s.example, checks_repo.needs_repository, repository=True
        )
        for s in checks_repo.REPO_CHECKS.values()
    }
)


def check_problems(check: Check) -> list[tuple[str, str]]:
    """What is wrong with a check, as (field, message) pairs; empty when it is valid."""
    # the same few checks come back for every candidate of a task: each is decided once
    key = repr((check.name, check.arg, check.path, check.exclude))  # 1, 1.0 and True differ here
    return list(_problems_by_key(key, check))


def _problems_by_key(key: str, check: Check) -> tuple[tuple[str, str], ...]:
    found = _PROBLEMS.get(key)
    if found is None:
        found = tuple(_check_problems(check))
        if len(_PROBLEMS) >= 4096:
            _PROBLEMS.clear()
        _PROBLEMS[key] = found
    return found


_PROBLEMS: dict[str, tuple[tuple[str, str], ...]] = {}


def _check_problems(check: Check) -> list[tuple[str, str]]:
    spec = CHECKS.get(check.name)
    if spec is None:
        return [("check", f"unknown check {check.name!r}; expected one of {', '.join(CHECKS)}")]
    problems: list[tuple[str, str]] = []
    arg = check.arg
    if spec.arg in ("flag", "functions", "flag_or_functions"):
        found = checks_repo.repo_arg_problem(spec.arg, arg)
        problems += [(check.name, found)] if found is not None else []
    elif spec.arg == "int":
        if isinstance(arg, bool) or not isinstance(arg, int) or arg < 0:
            problems.append((check.name, "expected a whole number >= 0"))
    elif spec.arg == "globs":
        ok = isinstance(arg, str) or (
            isinstance(arg, list) and all(isinstance(a, str) for a in arg)
        )
        if not ok or not arg:
            problems.append((check.name, "expected a path glob or a non-empty list of path globs"))
    elif spec.arg == "symbols":
        items = [arg] if isinstance(arg, str) else arg if isinstance(arg, list) else []
        if not items or not all(isinstance(a, str) and _SYMBOL_RE.match(a) for a in items):
            problems.append(
                (
                    check.name,
                    "expected a Python name or dotted name like Class.method, or a list of them",
                )
            )
    elif not isinstance(arg, str) or not arg:
        problems.append((check.name, f"expected a non-empty string ({spec.arg})"))
    elif spec.arg == "regex" and (problem := regex_problem(arg)) is not None:
        problems.append((check.name, problem))
    for key, value in (("in", check.path), ("not_in", check.exclude)):
        if value is None:
            continue
        ok = isinstance(value, str) or (
            isinstance(value, list) and all(isinstance(v, str) and v for v in value)
        )
        if not ok or not value:
            problems.append((key, "expected a path glob or a non-empty list of path globs"))
    return problems


@dataclass(frozen=True)
class CheckOutcome:
    """The result of one check: ``value`` is ``None`` exactly when the check could not be decided;
    then ``code`` says why (a key of ``CHECK_ERROR_DETAILS``) and ``detail`` in words."""

    value: Literal[0, 1] | None
    reason: str
    detail: str = ""
    code: str | None = None


def undecided(code: str, detail: str) -> CheckOutcome:
    """A check that could not decide: ``missing: check_error`` with ``code`` (CHECK_ERROR_DETAILS)."""
    return CheckOutcome(None, "check_error", detail, code)


def run_check(check: Check, patch: ParsedPatch | str) -> CheckOutcome:
    """Decide one check on one patch (text or parsed). Never raises for bad input: that is missing."""
    problems = check_problems(check)
    if problems:
        return undecided("invalid_check", "; ".join(m for _, m in problems))
    if isinstance(patch, str) and has_lone_surrogates(patch):
        return undecided("invalid_text", "the patch holds bytes that are not UTF-8")
    try:
        parsed = parse_patch(patch) if isinstance(patch, str) else patch
        ok = CHECKS[check.name].fn(_filtered(parsed, check), check.arg)
    except PatchParseError as exc:
        return undecided("not_a_diff", str(exc))
    except RegexTimeout as exc:
        return undecided("timeout", str(exc))
    except CheckError as exc:
        return undecided("invalid_check", str(exc))
    except checks_repo.NeedsRepository:  # decided on the base tree by the judge; else missing
        return CheckOutcome(None, "no_repository", "the check needs the task's repository")
    return CheckOutcome(1 if ok else 0, check.name)
