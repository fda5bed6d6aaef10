"""Repository-aware checks: decided on the task's base tree at judge time, never by a model.

The diff alone cannot say whether a patch applies, whether the files it leaves behind parse, or which
function a hunk really changes once applied with offsets and fuzz. These checks read the post-image
analysis (:mod:`agentic_rubrics.rubric.postimage`: the candidate applied like the SWE-bench harness to copies
of the touched files; the tree itself is never modified):

- ``applies: true`` — ``git apply`` or, failing it, ``patch --batch --fuzz=5 -p1`` applies the patch.
  The verdict's ``detail`` records how: ``git_apply``, ``patch_fuzz``, ``failed`` (0) or ``empty`` (0: an
  empty patch has nothing to apply and can never be the fix).
- ``parses: true`` — every changed Python file's post-image parses.
- ``no_new_undefined_names: true`` — the patch introduces no pyflakes message of the undefined-name kind:
  ``UndefinedName``, ``UndefinedLocal`` (a local used before assignment) and ``UndefinedExport`` (a
  name in ``__all__`` that is not defined). Redefinitions and unused imports do not count here.
- ``no_removed_name_in_use: true`` — no function, class, method or module variable the patch removes or
  renames is still used elsewhere in the repository (or in the patched files).
- ``changes_function: path::Class.method`` (or a list) — a changed line lies in that function or class
  (or in a function nested in it), mapped with ``ast`` on the applied images.

``in``/``not_in`` filter the files the last four look at. Nothing is guessed: with no tree the verdict is
``missing: no_repository``; a patch that did not apply leaves the others ``missing: check_error`` with the
detail ``not_applied``; a file the analysis could not read (not decodable, too large, a pre-image that
does not parse) gives ``analysis_incomplete``, and undefined names in a file that does not parse
``not_parsed``.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from agentic_rubrics.exceptions import RepoError
from agentic_rubrics.rubric.behaviour import program_file, tree_behaviour
from agentic_rubrics.types import Check, Rubric, Task, Verdict

if TYPE_CHECKING:  # pyflakes and the analysis load only when a repository-aware item is decided
    from agentic_rubrics.datasets.repos import RepoTree
    from agentic_rubrics.rubric.postimage import FileFinding, PostimageConfig, PostimageResult

log = logging.getLogger(__name__)

RepoArgKind = Literal["flag", "functions", "flag_or_functions"]

FUNCTION_RE = re.compile(r"^[^\s:][^:]*::[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$")
"""``path::qualname``: a repository-relative path, then a name or a dotted ``Class.method``."""


@dataclass(frozen=True)
class RepoCheckSpec:
    """One repository-aware predicate: name, argument kind, what it says, an example."""

    name: str
    arg: RepoArgKind
    doc: str
    example: str


REPO_CHECKS: dict[str, RepoCheckSpec] = {
    s.name: s
    for s in (
        RepoCheckSpec(
            "applies",
            "flag",
            "the patch applies to the base tree like the SWE-bench harness (git apply, else patch"
            " --fuzz=5); needs the repository",
            "{applies: true}",
        ),
        RepoCheckSpec(
            "parses",
            "flag",
            "every changed Python file parses once the patch is applied; needs the repository",
            "{parses: true, not_in: '*tests/*'}",
        ),
        RepoCheckSpec(
            "no_new_undefined_names",
            "flag",
            "the patch introduces no undefined name (pyflakes UndefinedName, UndefinedLocal,"
            " UndefinedExport) in a changed Python file; needs the repository",
            "{no_new_undefined_names: true}",
        ),
        RepoCheckSpec(
            "no_removed_name_in_use",
            "flag",
            "no function, class, method or module variable the patch removes or renames is still"
            " used elsewhere in the repository; needs the repository",
            "{no_removed_name_in_use: true}",
        ),
        RepoCheckSpec(
            "changes_behaviour",
            "flag_or_functions",
            "true: the patch changes what a program file in scope does (not only tests, docs,"
            " comments, docstrings, pass, dead code or layout: rubric/behaviour.py); a function"
            " (path::Class.method, or a list): that definition's code changes; needs the repository",
            "{changes_behaviour: 'src/pkg/parser.py::Parser.parse_header'}",
        ),
        RepoCheckSpec(
            "changes_function",
            "functions",
            "a changed line lies in this function or class (path::Class.method; or one of a list),"
            " mapped on the applied files; needs the repository",
            "{changes_function: 'src/pkg/parser.py::Parser.parse_header'}",
        ),
    )
}
"""The repository-aware vocabulary (also registered in :data:`agentic_rubrics.rubric.checks.CHECKS`)."""

UNDEFINED_KINDS = frozenset({"UndefinedName", "UndefinedLocal", "UndefinedExport"})
"""The pyflakes messages ``no_new_undefined_names`` counts."""

_TOO_LARGE = frozenset({"patch_too_large", "copy_too_large", "apply_output_too_large"})
_INCOMPLETE = frozenset({"not_decodable", "file_too_large", "pyflakes_error", "pre_syntax_error"})


class NeedsRepository(Exception):
    """A repository-aware check asked of the diff alone (it is then ``missing: no_repository``)."""


def needs_repository(files: Any, arg: Any) -> bool:
    """The diff-only predicate of every repository-aware check: it cannot decide."""
    raise NeedsRepository


def repo_arg_problem(kind: RepoArgKind, arg: Any) -> str | None:
    """What is wrong with a repository-aware check's argument, or ``None``."""
    if kind == "flag" or (kind == "flag_or_functions" and not isinstance(arg, str | list)):
        return None if arg is True else "expected true (this check takes no argument)"
    items = [arg] if isinstance(arg, str) else arg if isinstance(arg, list) else []
    if not items or not all(isinstance(a, str) and FUNCTION_RE.match(a) for a in items):
        return "expected path::name or path::Class.method (e.g. 'src/pkg/mod.py::Parser.parse'), or a list of them"
    return None


def is_repo_check(check: Check | None) -> bool:
    """Whether an item's check needs the repository."""
    return check is not None and check.name in REPO_CHECKS


def has_repo_checks(rubric: Rubric | None) -> bool:
    """Whether any item of the rubric needs the repository."""
    return rubric is not None and any(is_repo_check(i.check) for _, i in rubric.items())


# --------------------------------------------------------------------------- deciding


@dataclass(frozen=True)
class RepoOutcome:
    """A repository-aware check's result: ``value`` ``None`` exactly when undecided (then ``reason``
    is a missing reason and ``detail`` its code); else ``detail`` may say how (``applies``)."""

    value: Literal[0, 1] | None
    reason: str
    detail: str | None = None


def _undecided(detail: str) -> RepoOutcome:
    return RepoOutcome(None, "check_error", detail)


def _files(result: PostimageResult, check: Check) -> list[FileFinding]:
    from agentic_rubrics.patch import path_matches

    def any_match(f: FileFinding, arg: Any) -> bool:
        globs = [arg] if isinstance(arg, str) else list(arg)
        paths = [p for p in (f.path, f.old_path) if p]
        return any(path_matches(p, g) for p in paths for g in globs)

    return [
        f
        for f in result.files
        if f.python
        and (check.path is None or any_match(f, check.path))
        and (check.exclude is None or not any_match(f, check.exclude))
    ]


def _incomplete(f: FileFinding) -> bool:
    return bool(_INCOMPLETE.intersection(f.reasons))


def decide(check: Check, result: PostimageResult) -> RepoOutcome:
    """Decide one repository-aware check on a candidate's post-image analysis."""
    name = check.name
    if "no_repository" in result.reasons:
        return RepoOutcome(None, "no_repository")
    for stopped in ("analysis_timeout", "analysis_crashed"):
        if stopped in result.reasons:
            return _undecided(stopped)
    if "internal_error" in result.reasons or "memory_limit" in result.reasons:
        return _undecided("analysis_incomplete")
    if _TOO_LARGE.intersection(result.reasons):
        return _undecided("too_large")
    if "not_confined" in result.reasons:
        return _undecided("not_confined")
    method = result.apply.method
    if name == "applies":
        if method in ("git_apply", "patch_fuzz"):
            return RepoOutcome(1, name, method)
        if method in ("failed", "empty"):
            return RepoOutcome(0, name, method)
        return _undecided("invalid_text" if "patch_not_utf8" in result.reasons else "not_applied")
    if not result.applied:
        return _undecided("not_applied")
    files = _files(result, check)
    if name == "parses":
        if any(f.post_parses is False for f in files):
            return RepoOutcome(0, name)
        if any(_incomplete(f) and f.status != "deleted" for f in files):
            return _undecided("analysis_incomplete")
        return RepoOutcome(1, name)
    if name == "no_new_undefined_names":
        if any(m.kind in UNDEFINED_KINDS for f in files for m in f.introduced):
            return RepoOutcome(0, name)
        if any(f.post_parses is False for f in files):
            return _undecided("not_parsed")
        if any(_incomplete(f) for f in files):
            return _undecided("analysis_incomplete")
        return RepoOutcome(1, name)
    if name == "no_removed_name_in_use":
        gone = [r for r in result.removed_names if _in_scope(r.path, check)]
        if any(r.still_used for r in gone):
            return RepoOutcome(0, name)
        scan_cut = {"too_many_removed_names", "usage_scan_timeout", "usage_scan_error"}
        if any(r.still_used is None for r in gone) or scan_cut.intersection(result.reasons):
            return _undecided("analysis_incomplete")
        if any(_incomplete(f) or f.post_parses is False for f in files):
            return _undecided("analysis_incomplete")  # a file that did not parse lists no removals
        return RepoOutcome(1, name)
    if name == "changes_function":
        return _changes_function(files, check.arg)
    if name == "changes_behaviour":
        return _changes_behaviour(result, check)
    return _undecided("invalid_check")


def _changes_behaviour(result: PostimageResult, check: Check) -> RepoOutcome:
    """``true``: a program file in scope behaves differently; a function list: one of them does."""
    name = "changes_behaviour"
    if check.arg is True:
        scoped = result.model_copy(
            update={"files": tuple(f for f in result.files if _finding_in_scope(f, check))}
        )
        found = tree_behaviour(scoped)
        if found is None:
            return _undecided("analysis_incomplete")
        return RepoOutcome(1 if found else 0, name)
    targets = [check.arg] if isinstance(check.arg, str) else list(check.arg)
    undecided = False
    for target in targets:
        path, _, qual = target.partition("::")
        for f in result.files:
            if path not in (f.path, f.old_path) or not program_file(path):
                continue
            if f.behaviour == "changed" and (
                f.old_path not in (None, f.path)
                or any(q == qual or q.startswith(qual + ".") for q in f.behaviour_symbols)
            ):
                return RepoOutcome(1, name)
            undecided = undecided or f.behaviour is None
    return _undecided("analysis_incomplete") if undecided else RepoOutcome(0, name)


def _finding_in_scope(f: FileFinding, check: Check) -> bool:
    return any(_in_scope(p, check) for p in (f.path, f.old_path) if p)


def _in_scope(path: str, check: Check) -> bool:
    from agentic_rubrics.patch import path_matches

    def hit(arg: Any) -> bool:
        return any(path_matches(path, g) for g in ([arg] if isinstance(arg, str) else arg))

    return (check.path is None or hit(check.path)) and (
        check.exclude is None or not hit(check.exclude)
    )


def _changes_function(files: list[FileFinding], arg: Any) -> RepoOutcome:
    targets = [arg] if isinstance(arg, str) else list(arg)
    undecided = False
    for target in targets:
        path, _, qual = target.partition("::")
        for f in files:
            if path not in (f.path, f.old_path):
                continue
            if any(s.qualname == qual or s.qualname.startswith(qual + ".") for s in f.symbols):
                return RepoOutcome(1, "changes_function")
            # symbols are mapped only when both images parse and were read
            undecided = undecided or _incomplete(f) or f.post_parses is False
    return _undecided("analysis_incomplete") if undecided else RepoOutcome(0, "changes_function")


# --------------------------------------------------------------------------- at judge time


@dataclass
class RepoAnalyses:
    """A task's base tree and the post-image analysis of each distinct patch on it (computed once per
    patch, in a worker process: :mod:`agentic_rubrics.rubric.postimage.worker`). ``root`` ``None``: there is
    no tree, and every repository-aware item is ``missing: no_repository``; ``unavailable`` then says
    why a configured repository could not be had (a :class:`RepoError` reason, the verdicts' detail:
    such a gap is retried on resume), ``None`` when the run has none configured."""

    root: Path | None
    config: PostimageConfig | None = None
    unavailable: str | None = None
    _done: dict[str, PostimageResult] = field(default_factory=dict)
    _locks: dict[str, asyncio.Lock] = field(default_factory=dict)

    async def analysis(self, patch: str) -> PostimageResult | None:
        """The analysis of ``patch`` (by its exact bytes); ``None`` without a tree."""
        if self.root is None:
            return None
        key = hashlib.sha256(patch.encode("utf-8", "surrogatepass")).hexdigest()
        async with self._locks.setdefault(key, asyncio.Lock()):
            if key not in self._done:
                from agentic_rubrics.rubric.postimage.worker import analyze_in_worker

                self._done[key] = await analyze_in_worker(self.root, patch, self.config)
        return self._done[key]

    @property
    def analysed(self) -> int:
        """Distinct patches analysed so far."""
        return len(self._done)

    async def decide_items(
        self, rubric: Rubric, verdicts: Iterable[Verdict], patch: str
    ) -> list[Verdict]:
        """``verdicts`` with every repository-aware item decided on this tree (others unchanged)."""
        out = list(verdicts)
        if not has_repo_checks(rubric):
            return out
        result = await self.analysis(patch)
        items = {i.id: i for _, i in rubric.items()}
        for n, v in enumerate(out):
            item = items.get(v.item_id)
            if item is None or not is_repo_check(item.check):
                continue
            assert item.check is not None
            got = (
                RepoOutcome(None, "no_repository", self.unavailable)
                if result is None
                else decide(item.check, result)
            )
            missing = got.value is None
            out[n] = v.model_copy(
                update={
                    "origin": "missing" if missing else "checked",
                    "value": got.value,
                    "reason": got.reason,
                    "detail": got.detail,
                }
            )
        return out


def _detail_code(reason: str) -> str:
    """A repository error's reason as a verdict detail (``[a-z_]``, at most 40 characters)."""
    code = re.sub(r"[^a-z_]", "_", reason.lower())[:40]
    return code or "unknown"


async def repo_analyses(
    task: Task,
    rubric: Rubric | None,
    resolve: Callable[[Task], RepoTree | None],
    *,
    always: bool = False,
) -> RepoAnalyses | None:
    """The task's tree for its repository-aware items (``None``: the rubric has none, and not
    ``always``). ``resolve`` is :meth:`agentic_rubrics.pipeline.context.RunContext.repository`
    (blocking: run in a thread); a repository that cannot be had leaves those items ``missing:
    no_repository``, logged."""
    if not (always or has_repo_checks(rubric)):
        return None
    try:
        tree = await asyncio.to_thread(resolve, task)
    except RepoError as exc:
        log.warning("%s: repository-aware checks have no repository: %s", task.instance_id, exc)
        return RepoAnalyses(None, unavailable=_detail_code(exc.reason))
    return RepoAnalyses(tree.path if tree is not None else None)
