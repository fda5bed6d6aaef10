"""A rubric's check items decided on one patch: one CPU budget for all of them (a hostile rubric of many
slow regexes costs at most :data:`~agentic_rubrics.rubric.check_regex.RUBRIC_SECONDS` per candidate)."""

from __future__ import annotations

import contextlib
import time

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.patch import ParsedPatch, parse_patch
from agentic_rubrics.rubric.check_regex import regex_seconds, regex_time_limit, rubric_seconds
from agentic_rubrics.rubric.checks import run_check, undecided
from agentic_rubrics.surrogates import has_lone_surrogates
from agentic_rubrics.types import Rubric, Verdict


def check_verdicts(
    rubric: Rubric, patch: str, *, instance_id: str, candidate_id: str
) -> dict[str, Verdict]:
    """Verdicts for the rubric's items that carry a check, keyed by item id (others are absent)."""
    parsed: ParsedPatch | str = patch  # not text, or not a diff: run_check says so for each item
    if not has_lone_surrogates(patch):
        with contextlib.suppress(PatchParseError):
            parsed = parse_patch(patch)
    out: dict[str, Verdict] = {}
    # every check of the rubric shares one CPU budget on this patch: past it, the rest is undecided
    deadline = time.process_time() + rubric_seconds()
    for axis, item in rubric.items():
        if item.check is None:
            continue
        left = deadline - time.process_time()
        if left <= 0:
            outcome = undecided(
                "rubric_timeout", "the rubric's checks ran past their shared time on this patch"
            )
        else:
            with regex_time_limit(min(regex_seconds(), left)):
                outcome = run_check(item.check, parsed)
        out[item.id] = Verdict(
            instance_id=instance_id,
            candidate_id=candidate_id,
            item_id=item.id,
            axis=axis,
            weight=item.weight,
            origin="missing" if outcome.value is None else "checked",
            value=outcome.value,
            reason=outcome.reason,
            detail=outcome.code,
        )
    return out
