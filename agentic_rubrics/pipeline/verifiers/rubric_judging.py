"""The rubric verifier's grading: every candidate judged item by item against the task's rubric (the
run's judge — the checks-only one or an LLM —, then the repository-aware items decided on the task's
tree), as verdict rows and the rubric's part of the task's progress row.

Identical patches are judged once and share their verdicts; a retry judges only the candidates and
repeats it names and keeps every other verdict. Nothing here touches the run folder.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from agentic_rubrics.exceptions import JudgeError
from agentic_rubrics.patch import patch_hash
from agentic_rubrics.pipeline.verifiers import Graded, TaskScope
from agentic_rubrics.protocols import Judge
from agentic_rubrics.reasons import FUNCTIONAL_AXES, NO_BEHAVIOUR_CHANGE, TAMPERS_WITH_TESTS
from agentic_rubrics.rubric.checks_repo import RepoAnalyses, repo_analyses
from agentic_rubrics.rubric.grounding import repository_source
from agentic_rubrics.rubric.guard import Guard, guard_of
from agentic_rubrics.runfolder.digests import rows_digest
from agentic_rubrics.runfolder.retry import merge_rows
from agentic_rubrics.runfolder.rows import RubricStatus, RubricSummary
from agentic_rubrics.types import AXES, Rubric, Task, Verdict

log = logging.getLogger(__name__)


def generator_warning(task: Task, model: str) -> int:
    """Candidates whose source names the judge model (judging your own output inflates scores), with a
    warning when there are some. Sources are read only to warn; they never reach a judge or a score."""
    base = re.sub(r"[^a-z0-9]", "", model.rsplit("/", 1)[-1].lower())
    if len(base) < 4:
        return 0
    own = sum(
        1
        for c in task.candidates
        if c.source and base in re.sub(r"[^a-z0-9]", "", c.source.lower())
    )
    if own:
        log.warning(
            "%s: the judge model %s also generated %d candidate(s); its scores may be inflated",
            task.instance_id,
            model,
            own,
        )
    return own


async def judge_task(
    task: Task,
    rubric: Rubric | None,
    judge: Judge,
    *,
    repeats: int,
    concurrency: int,
    only: set[tuple[str, int]] | None = None,
    repository: RepoAnalyses | None = None,
) -> list[Verdict]:
    """Verdicts for every candidate (none when the rubric failed: scoring says rubric_error).

    Identical patches (after normalising white space and index lines) are judged once and share
    their verdicts. Checked items are recorded once (repeat 0): they cannot vary. ``only``: judge just
    these ``(candidate_id, repeat)`` pairs (a retry). ``repository``: the task's tree, on which the
    rubric's repository-aware items are decided (once per distinct patch); without it they stay
    ``missing: no_repository`` as the judge left them.
    """
    if rubric is None:
        return []
    limit = asyncio.Semaphore(concurrency)
    item_ids = sorted(i.id for _, i in rubric.items())
    groups, patches = _distinct(task)
    guards = await _guards(patches, repository)

    async def one(key: str, repeat: int) -> list[Verdict]:
        asked = _asked(rubric, guards[key])
        verdicts: list[Verdict] = []
        async with limit:
            if any(True for _ in asked.items()):
                verdicts = await judge.judge(
                    instance_id=task.instance_id,
                    issue=task.problem_statement,
                    rubric=asked,
                    candidate_id=groups[key][0],
                    patch=patches[key],
                    repeat=repeat,
                )
            if repository is not None:
                verdicts = await repository.decide_items(asked, verdicts, patches[key])
        verdicts = _guarded(verdicts, guards[key], task.instance_id, groups[key][0], rubric, repeat)
        _expect(judge.name, verdicts, item_ids)
        kept = [v for v in verdicts if repeat == 0 or v.origin != "checked"]
        return [v.model_copy(update={"candidate_id": cid}) for cid in groups[key] for v in kept]

    jobs = [
        one(key, r)
        for key in groups
        for r in range(repeats)
        if only is None or any((cid, r) in only for cid in groups[key])
    ]
    order = {c.id: n for n, c in enumerate(task.candidates)}
    rows = [v for part in await asyncio.gather(*jobs) for v in part]
    if only is not None:
        rows = [v for v in rows if (v.candidate_id, v.repeat) in only]
    return sorted(rows, key=lambda v: (order[v.candidate_id], v.repeat))


def _distinct(task: Task) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The task's distinct patches (white space and index lines normalised): the candidates of
    each, and its text."""
    groups: dict[str, list[str]] = {}
    patches: dict[str, str] = {}
    for c in task.candidates:
        key = patch_hash(c.patch)
        groups.setdefault(key, []).append(c.id)
        patches.setdefault(key, c.patch)
    return groups, patches


def _expect(judge: str, verdicts: list[Verdict], item_ids: list[str]) -> None:
    """A judge returns exactly one verdict per item of the rubric."""
    if sorted(v.item_id for v in verdicts) != item_ids:
        raise JudgeError(
            f"{judge} returned verdicts for {sorted(v.item_id for v in verdicts)},"
            f" expected exactly the rubric's items {item_ids}"
        )


async def _guards(patches: dict[str, str], repository: RepoAnalyses | None) -> dict[str, Guard]:
    """Each distinct patch's guard: its behaviour, and the test infrastructure it changes."""
    keys = list(patches)
    found = await asyncio.gather(*(guard_of(patches[k], repository) for k in keys))
    return dict(zip(keys, found, strict=True))


def _asked(rubric: Rubric, guard: Guard) -> Rubric:
    """What the judge is asked of a candidate: not what its guard decides (the functional items of
    one that changes no behaviour, the integrity items of one that changes how tests run)."""
    decided = [
        a
        for a in AXES
        if (a in FUNCTIONAL_AXES and guard.unchanged)
        or (a not in FUNCTIONAL_AXES and guard.tampers)
    ]
    if not decided:
        return rubric
    empty: dict[str, list[Any]] = {axis: [] for axis in decided}
    return rubric.model_copy(update={"axes": rubric.axes.model_copy(update=empty)})


def _guarded(
    verdicts: list[Verdict],
    guard: Guard,
    instance_id: str,
    candidate_id: str,
    rubric: Rubric,
    repeat: int,
) -> list[Verdict]:
    """A candidate's verdicts with what its guard decides: every functional item checked 0 when it
    changes no behaviour (``no_behaviour_change``: it was not asked them), every integrity item
    checked 0 when it changes how tests run (``tampers_with_tests``: whatever it was judged)."""
    out = list(verdicts)
    for axis, item in rubric.items():
        functional = axis in FUNCTIONAL_AXES
        reason = (
            NO_BEHAVIOUR_CHANGE
            if functional and guard.unchanged
            else TAMPERS_WITH_TESTS
            if not functional and guard.tampers
            else None
        )
        if reason is not None:
            out.append(
                Verdict(
                    instance_id=instance_id,
                    candidate_id=candidate_id,
                    item_id=item.id,
                    axis=axis,
                    weight=item.weight,
                    origin="checked",
                    value=0,
                    reason=reason,
                    repeat=repeat,
                )
            )
    return out


async def grade_with_rubric(
    scope: TaskScope, rubric: Rubric | None, status: RubricStatus, reused: bool
) -> Graded:
    """Every candidate of the task judged against ``rubric`` (``None``: its rubric failed, and every
    candidate is scored ``rubric_error``), and the rubric's fields of the task's progress row."""
    ctx, task, plan = scope.ctx, scope.task, scope.plan
    config = ctx.config
    repeats = config.judge.repeats if config.judge.kind == "llm" else 1
    only = plan.pairs() if plan is not None and not plan.redo_rubric else None
    # the tree is opened for the rubric's repository-aware items, and wherever the explorer has it
    # anyway: what a candidate does to the program's behaviour is read on it
    scope.analyses = await repo_analyses(
        task, rubric, ctx.repository, always=config.explorer.uses_sandbox
    )
    rows = await judge_task(
        task,
        rubric,
        ctx.judge,
        repeats=repeats,
        concurrency=config.judge.concurrency,
        only=only,
        repository=scope.analyses,
    )
    progress: dict[str, Any] = {}
    if plan is not None and only is not None:
        rows = merge_rows(plan.kept_rows, rows, task)
        if plan.rows_changed:  # written only when true: rows keep the shape they had
            progress["verdicts_changed"] = True
    progress.update(
        explorer="reused" if reused else config.explorer.kind,
        rubric=RubricSummary(
            status=status.status,
            reason=status.reason,
            hash=status.hash,
            source=status.source,
            items=status.items,
            repository=repository_source(status),
            grounding=status.grounding,
            turns=status.turns,
            last_validation_error=status.last_validation_error,
        ),
        verdict_rows=len(rows),
        verdicts_digest=rows_digest([v.to_row() for v in rows]),
    )
    return Graded(verdicts=rows, progress=progress)
