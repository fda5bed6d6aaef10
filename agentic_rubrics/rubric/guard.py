"""A candidate's guard at judge time: what it does to the program's behaviour (:mod:`.behaviour`, on
the task's tree when there is one) and to how its tests run (:mod:`agentic_rubrics.test_infra`).

Read by the rubric's judging (what the judge is not asked, and the verdicts the checks give instead),
recorded in every task's progress row (``baselines.guard``) and held by every guarded selector
(``rank/selectors/guard.py``); docs/spec.md, "A candidate that changes no behaviour".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.rubric.behaviour import diff_behaviour, tree_behaviour
from agentic_rubrics.rubric.checks_repo import RepoAnalyses
from agentic_rubrics.test_infra import infra_changes, kinds_of


@dataclass(frozen=True)
class Guard:
    """What one candidate does to the program's behaviour and to how its tests run, and what the
    behaviour rests on."""

    changed: bool | None
    """``True`` changed, ``False`` proven unchanged, ``None`` not decided."""
    basis: Literal["tree", "diff"]
    """The post-image on the task's tree, or the diff alone."""
    infra: tuple[str, ...] = ()
    """The kinds of test infrastructure it changes (:mod:`agentic_rubrics.test_infra`)."""

    @property
    def unchanged(self) -> bool:
        """Proven to change nothing (the only answer acted on)."""
        return self.changed is False

    @property
    def tampers(self) -> bool:
        """It changes how tests run: what its tests say is not its code's alone."""
        return bool(self.infra)

    def row(self) -> dict[str, Any]:
        """As a task's record keeps it (``guard`` in its baselines)."""
        word = None if self.changed is None else "changed" if self.changed else "unchanged"
        return {"behaviour": word, "basis": self.basis, "infra": list(self.infra)}


async def guard_of(patch: str, repository: RepoAnalyses | None) -> Guard:
    """A candidate's guard: its behaviour on the task's tree when there is one and it decides, else
    from the diff (an empty patch is left to its own rule: never acted on here); its test
    infrastructure from the diff, a config file's sections placed by the base tree's file."""
    root = repository.root if repository is not None else None
    infra = tuple(kinds_of(infra_changes(patch, _reader(root))))
    if is_empty_patch(patch):
        return Guard(None, "diff", infra)
    result = await repository.analysis(patch) if repository is not None else None
    if result is not None:
        found = tree_behaviour(result)
        if found is not None:
            return Guard(found, "tree", infra)
    return Guard(diff_behaviour(patch), "diff", infra)


_MAX_CONFIG_BYTES = 1 << 20
"""A base-tree config file larger than this is not read (its hunks count as pytest's)."""


def _reader(root: Path | None) -> Callable[[str], str | None] | None:
    """Reads a base-tree file by its repository path, bounded; ``None`` without a tree."""
    if root is None:
        return None

    def read(path: str) -> str | None:
        target = (root / path).resolve()
        try:
            if (
                not target.is_relative_to(root.resolve())
                or target.stat().st_size > _MAX_CONFIG_BYTES
            ):
                return None
            return target.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return None

    return read
