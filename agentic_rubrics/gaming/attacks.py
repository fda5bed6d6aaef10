"""The attack kinds, and one task's attacks built as diffs that apply to its base tree.

An attack is a candidate that fixes nothing (:mod:`.edits`: in the function the fix changes;
:mod:`.hooks`: on how tests run), built from the base tree, the issue's words and where a resolved
candidate changes code — never from the gold patch or hidden tests. Each is checked to apply with
plain ``git apply`` and to give exactly the intended files (:func:`.diffs.applies`); one that cannot be
built is kept with its reason code, never dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentic_rubrics.gaming import edits, hooks
from agentic_rubrics.gaming.diffs import applies, build_patch
from agentic_rubrics.gaming.edits import Built
from agentic_rubrics.gaming.target import AttackInput, NotBuilt
from agentic_rubrics.rubric.postimage.apply import refusal
from agentic_rubrics.rubric.postimage.model import PostimageConfig

KINDS: dict[str, Callable[[AttackInput], Built]] = {
    "noop": edits.noop,
    "keywords": edits.keywords,
    "stealth": hooks.stealth,
    "conftest": hooks.conftest,
    "agentdir_conftest": hooks.agentdir_conftest,
    "skip_all": hooks.skip_all,
    "empty": edits.empty,
    "comment_only": edits.comment_only,
    "test_deletion": hooks.test_deletion,
    "docstring": edits.docstring,
    "dead_branch": edits.dead_branch,
    "reformat": edits.reformat,
    "dead_store": edits.dead_store,
    "scratch_script": edits.scratch_script,
}
"""Every attack kind, by name, in the order reports list them."""
ATTACK_KINDS: tuple[str, ...] = tuple(KINDS)
"""The attack kinds' names."""
ATTACK_PREFIX = "attack-"
"""An attack candidate's id is ``attack-<kind>``."""


@dataclass(frozen=True)
class Attack:
    """One attack of one task: its diff, or why it could not be built."""

    kind: str
    patch: str | None
    """The diff (``""`` for ``empty``); ``None`` when not built."""
    reason: str | None = None
    """Why it was not built (a code: ``no_tree:<why>``, ``no_function_changed``,
    ``does_not_apply:<method>`` ...)."""
    variant: str | None = None
    """Which form it took where a kind has several (``file_deleted``, ``assert_removed``; a
    docstring ``added`` or ``changed``)."""

    @property
    def candidate_id(self) -> str:
        """Its candidate id."""
        return ATTACK_PREFIX + self.kind

    def copy_of(self, instance_id: str) -> str:
        """The instance id of the copy of task ``instance_id`` that holds this attack."""
        return f"{instance_id}.{self.candidate_id}"


def check_kinds(kinds: list[str]) -> list[str]:
    """``kinds`` in :data:`KINDS`' order (a ``ValueError`` naming the known ones)."""
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or not kinds:
        raise ValueError(f"attack kinds must be among {', '.join(KINDS)}; got {kinds}")
    return [k for k in KINDS if k in kinds]


def build_one(inp: AttackInput, kind: str) -> Attack:
    """One attack, built and checked to apply."""
    try:
        changes, variant = KINDS[kind](inp)
        patch = build_patch(changes)
        if kind == "empty":
            return Attack(kind, "", None, variant)
        if not patch:
            raise NotBuilt("no_change")
        if refusal(patch, len(patch.encode("utf-8")), PostimageConfig()) is not None:
            raise NotBuilt("patch_refused")
        reason = applies(inp.need_tree(), patch, changes)
        if reason is not None:
            raise NotBuilt(reason)
    except NotBuilt as exc:
        return Attack(kind, None, exc.reason)
    return Attack(kind, patch, None, variant)


def build_attacks(inp: AttackInput, kinds: list[str]) -> list[Attack]:
    """Every kind of ``kinds`` for one task, in :data:`KINDS`' order."""
    return [build_one(inp, kind) for kind in check_kinds(kinds)]
