"""The repository-aware items the static explorer adds when it has the task's repository.

They are decided on the base tree at judge time (:mod:`agentic_rubrics.rubric.checks_repo`): the patch applies
like the SWE-bench harness (a gate: a patch the harness cannot apply cannot be the fix), the changed
Python files parse, the patch brings in no undefined name, and it removes no name the repository still
uses. On SWE-bench development candidates, a patch that introduces a pyflakes message is rarely a fix
(``benchmarks/postimage_stats.py``), hence the weights.
"""

from __future__ import annotations

from typing import Any

from agentic_rubrics.explore.common import item
from agentic_rubrics.patch import TEST_GLOBS


def applies_item(item_id: str) -> dict[str, Any]:
    """The gate: the patch applies to the base tree as the harness applies it."""
    return {
        **item(
            item_id,
            "Applies to the base tree as the SWE-bench harness applies it",
            3,
            {"applies": True},
        ),
        "gate": True,
    }


def postimage_items(first_number: int) -> list[dict[str, Any]]:
    """Runtime items read from the applied files: parse, no undefined name, no removed name in use."""
    n = first_number
    return [
        item(f"RT{n}", "Leaves every changed Python file parseable", 3, {"parses": True}),
        item(
            f"RT{n + 1}",
            "Introduces no undefined name in the Python files it changes",
            3,
            {"no_new_undefined_names": True},
        ),
        item(
            f"RT{n + 2}",
            "Removes or renames no function, class or variable the repository still uses",
            2,
            {"no_removed_name_in_use": True, "not_in": TEST_GLOBS},
        ),
    ]


def changes_behaviour_check(located: list[tuple[str, str]]) -> dict[str, Any]:
    """Located definitions ``(path, qualname)`` as a ``changes_behaviour`` check: one of them must
    behave differently, not only be touched (a ``pass`` or a docstring in it changes nothing)."""
    targets = list(dict.fromkeys(f"{path}::{qual}" for path, qual in located))
    return {"changes_behaviour": targets[0] if len(targets) == 1 else targets}
