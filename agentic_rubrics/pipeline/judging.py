"""One task's judging: the verdict rows of every candidate and the selectors' features.

Identical patches are judged once and share their verdicts; a retry judges only the candidates and
repeats it names. Like :mod:`agentic_rubrics.pipeline.stages`, nothing here touches the run folder.
"""

from __future__ import annotations

import asyncio
import logging
import re
from typing import Any

from agentic_rubrics.exceptions import JudgeError
from agentic_rubrics.patch import patch_hash
from agentic_rubrics.pipeline.context import RunContext
from agentic_rubrics.protocols import Judge
from agentic_rubrics.rank.selectors import FeatureInput, compute_features
from agentic_rubrics.rubric.checks_repo import RepoAnalyses
from agentic_rubrics.types import Rubric, Task, Verdict

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
    groups: dict[str, list[str]] = {}
    patches: dict[str, str] = {}
    for c in task.candidates:
        key = patch_hash(c.patch)
        groups.setdefault(key, []).append(c.id)
        patches.setdefault(key, c.patch)

    async def one(key: str, repeat: int) -> list[Verdict]:
        async with limit:
            verdicts = await judge.judge(
                instance_id=task.instance_id,
                issue=task.problem_statement,
                rubric=rubric,
                candidate_id=groups[key][0],
                patch=patches[key],
                repeat=repeat,
            )
            if repository is not None:
                verdicts = await repository.decide_items(rubric, verdicts, patches[key])
        if sorted(v.item_id for v in verdicts) != item_ids:
            raise JudgeError(
                f"{judge.name} returned verdicts for {sorted(v.item_id for v in verdicts)},"
                f" expected exactly the rubric's items {item_ids}"
            )
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


async def baselines_for(
    task: Task, ctx: RunContext, repository: RepoAnalyses | None = None
) -> dict[str, Any]:
    """Every selector's features that need the patches (stored; the report needs no patch).

    Those that need no model are always computed: selectors are chosen at report time (see
    :mod:`agentic_rubrics.rank.selectors`). ``repository``: the task's tree with the analyses the judge
    already made (``offline_content`` reads them; without it, its features come from the diffs)."""
    given = FeatureInput(task, ctx.selector_model, repository)
    return await compute_features(given, ctx.config.selectors)
