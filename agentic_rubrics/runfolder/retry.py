"""Transient failures are not frozen: resuming retries exactly the items and rubrics they hit.

A verdict ``missing`` for ``provider_error`` or ``budget`` (or ``no_repository`` because a configured
repository could not be had: its detail is the repository error's reason), and a rubric that failed for
``sandbox_error``, ``no_repository``, ``budget`` or a transient model error, may come out otherwise next
time. Resuming (by default; ``--no-retry-missing`` keeps them) computes such a task again and keeps every
verdict it has: only the candidates and repeats with a transient gap are judged again, and a verdict
already judged or checked is never replaced (kept rows edited by hand since they were written stay
marked as changed: the report names the task). Answers already received come from the response
cache, so nothing is paid twice. (A task being retried is unfinished until it is stored again: if that
process is killed, the next resume computes it whole, its answered requests again from the cache.)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics.runfolder.digests import verdicts_changed
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.rows import PhaseCost
from agentic_rubrics.types import Task, Verdict

TRANSIENT_VERDICTS = frozenset({"provider_error", "budget"})
"""Missing-verdict reasons that can change on a second try."""
TRANSIENT_RUBRICS = frozenset(
    {"no_repository", "budget", "provider_error", "model_error:transient"}
)
"""Rubric failure reasons that can change on a second try (and ``sandbox_error:*``, and
``no_repository:*`` but for a repository or commit that is not even well formed)."""
TRANSIENT_CONTAINERS = frozenset(
    {"docker_unavailable", "docker_failed", "image_missing", "container_failed", "runtime_lost"}
)
"""A container's failure that can change on a second try (the daemon, the image, the runtime; not
``oom`` at its memory limit nor ``unparsable_output``): a run of the tests in docker left without a
reading by one is run again (``sandbox/docker_cli.py``'s reasons)."""
_MALFORMED_REPOSITORY = frozenset({"no_repository:invalid_repo", "no_repository:invalid_commit"})


def transient_grades(record: Any, artifact: Any = None) -> bool:
    """Whether a task's record of a verifier (its ``baselines`` entry: the tests' pass rates, the
    similarity ratings) or its artifact's status holds a reason that may not recur: a sandbox that
    would not start, a repository that could not be had, a writer stopped by the budget or a
    transient model error."""
    reasons = []
    if isinstance(record, dict):
        reasons += [record.get("reason"), *(record.get("reasons") or {}).values()]
    if artifact is not None and artifact.status != "ok":
        reasons.append(artifact.reason)
    return any(
        transient_rubric_failure(r) or str(r).startswith("writer_error:") for r in reasons if r
    )


def transient_verdict(row: Verdict | dict[str, Any]) -> bool:
    """Whether a verdict row is a gap that may close on a second try: a transient reason, or a
    repository-aware item left without the task's tree because fetching or finding it failed (its
    detail is the repository error's reason; a run with no repository configured has none)."""
    if isinstance(row, Verdict):
        row = row.to_row()
    if row["origin"] != "missing":
        return False
    reason = row["reason"]
    if reason in TRANSIENT_VERDICTS:
        return True
    detail = row.get("detail")
    return (
        reason == "no_repository"
        and bool(detail)
        and f"{reason}:{detail}" not in _MALFORMED_REPOSITORY
    )


def transient_rubric_failure(reason: str | None) -> bool:
    """Whether a failed rubric's reason may not recur (a sandbox that would not open, a repository
    that could not be had: fetched, found in the cache, or at its ``repo_path``)."""
    text = str(reason or "")
    if (
        text in TRANSIENT_RUBRICS
        or text in TRANSIENT_CONTAINERS
        or text.startswith("sandbox_error")
    ):
        return True
    return text.startswith("no_repository:") and text not in _MALFORMED_REPOSITORY


@dataclass
class RetryPlan:
    """What to do again for one task (plain data: it travels to Ray workers)."""

    redo_rubric: bool
    """Explore again: the rubric failed transiently (then the whole task is computed again)."""
    redo: list[list[Any]] = field(default_factory=list)
    """``[candidate_id, repeat]`` pairs to judge again."""
    kept_rows: list[Verdict] = field(default_factory=list)
    """Verdicts kept as they are."""
    cost: dict[str, PhaseCost] = field(default_factory=dict)
    """What the task cost before (added to what the retry costs)."""
    rows_changed: bool = False
    """The kept rows changed since they were written (a hand edit): the task's new progress row says
    so, or its new digest, made over the rows as kept, would hide the edit."""
    redo_artifacts: list[str] = field(default_factory=list)
    """The verifiers (other than the rubric) that failed transiently: their artifact, when it
    failed, is written again, and every candidate graded again."""

    def pairs(self) -> set[tuple[str, int]]:
        """The ``(candidate_id, repeat)`` pairs to judge again."""
        return {(str(c), int(r)) for c, r in self.redo}


def plan_retries(
    folder: RunFolder, tasks: Iterable[Task], *, rubrics: bool, verdicts: bool
) -> dict[str, RetryPlan]:
    """The tasks of ``tasks`` with a transient failure on record, and what to do again for each.

    ``rubrics``: rubrics that failed transiently are explored again (needs the explore stage);
    ``verdicts``: transiently missing verdicts are judged again (needs the judge stage).
    """
    done = folder.progress()
    entries = folder.verifier_entries()
    rows_by_task: dict[str, list[Verdict]] = {}
    digests: dict[str, str] = {}
    if verdicts:
        rows_by_task, digests = folder.verdicts()
    plans: dict[str, RetryPlan] = {}
    for task in tasks:
        iid = task.instance_id
        progress = done.get(iid)
        if progress is None:
            status = folder.rubric_status(iid) if rubrics else None
            if status and status.status != "ok" and transient_rubric_failure(status.reason):
                plans[iid] = RetryPlan(redo_rubric=True)
            continue
        if not verdicts:
            continue  # exploring alone: a judged task is left as it is
        rubric = progress.rubric
        if rubric.status != "ok" and rubrics and transient_rubric_failure(rubric.reason):
            plans[iid] = RetryPlan(redo_rubric=True, cost=progress.cost)
            continue
        redo = [
            name
            for name, entry in entries.items()
            if entry.record is not None
            and transient_grades(
                progress.baselines.get(entry.record), folder.artifact_status(entry.folder, iid)
            )
        ]
        rows = rows_by_task.get(iid, [])
        gaps = sorted({(v.candidate_id, v.repeat) for v in rows if transient_verdict(v)})
        if gaps or redo:
            kept = [r for r in rows if not transient_verdict(r)]
            plans[iid] = RetryPlan(
                redo_rubric=False,
                redo=[list(g) for g in gaps],
                kept_rows=kept,
                cost=progress.cost,
                rows_changed=verdicts_changed(progress, digests),
                redo_artifacts=redo,
            )
    return plans


def merge_rows(kept: list[Verdict], fresh: list[Verdict], task: Task) -> list[Verdict]:
    """The kept verdicts, plus the fresh ones for the items that had none (never one replacing another)."""
    have = {(v.candidate_id, v.item_id, v.repeat) for v in kept}
    rows = kept + [v for v in fresh if (v.candidate_id, v.item_id, v.repeat) not in have]
    order = {c.id: n for n, c in enumerate(task.candidates)}
    return sorted(rows, key=lambda v: (order.get(v.candidate_id, len(order)), v.repeat))


def merge_costs(
    before: dict[str, PhaseCost], now: dict[str, dict[str, float]]
) -> dict[str, PhaseCost]:
    """A task's counts by phase over its attempts."""
    out: dict[str, PhaseCost] = {phase: dict(counts) for phase, counts in before.items()}
    for phase, counts in now.items():
        into = out.setdefault(phase, {})
        for key, value in counts.items():
            into[key] = into.get(key, 0) + value
    return out
