"""Each attack's outcome on each task, read from the finished run folder (``scores.jsonl``: each
selector's ranking values) and from the reward (:class:`agentic_rubrics.reward.scorer.RewardScorer`
on that run: the checks-only reward, and the run's judge with a judge model)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from agentic_rubrics.gaming.attacks import Attack
from agentic_rubrics.gaming.record import REWARD_CHECKS, TaskAttack
from agentic_rubrics.gaming.wins import Outcome, ranking_outcome, reward_outcome
from agentic_rubrics.reward.scorer import RewardScorer
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.rows import ScoreRow, read_row
from agentic_rubrics.types import Task

Key = tuple[str, str]
"""(instance id of a copy, candidate id)."""


def rankings(run: Path) -> dict[Key, dict[str, float | None]]:
    """Each candidate's ranking values by selector, from the run's ``scores.jsonl``."""
    folder = RunFolder(run)
    out = {}
    for line, record in read_jsonl(folder.scores_path):
        row = read_row(ScoreRow, record, f"{folder.scores_path}:{line}")
        out[(row.instance_id, row.candidate_id)] = dict(row.ranking)
    return out


def rewards(
    run: Path, column: str, pairs: dict[Key, str], api_key: str | None
) -> dict[Key, float | None]:
    """Each (copy, candidate)'s reward (``None``: abstained) from the finished run, under the
    checks-only judge (:data:`REWARD_CHECKS`) or the run's own."""
    judge: Literal["checks", "run"] = "checks" if column == REWARD_CHECKS else "run"
    keys = list(pairs)
    state = run.parent / "reward" / judge
    with RewardScorer.from_run(run, judge=judge, state_dir=state, api_key=api_key) as scorer:
        got = scorer.score_many([(copy, pairs[(copy, cid)]) for copy, cid in keys])
    return {key: reward.score for key, reward in zip(keys, got, strict=True)}


def _pairs(tasks: list[Task], attacks: dict[str, list[Attack]]) -> dict[Key, str]:
    """The patches the rewards score: each built attack and its task's resolved candidates."""
    out: dict[Key, str] = {}
    for task in tasks:
        for attack in attacks.get(task.instance_id, []):
            if attack.patch is None:
                continue
            copy = attack.copy_of(task.instance_id)
            out[(copy, attack.candidate_id)] = attack.patch
            for c in task.candidates:
                if c.resolved:
                    out[(copy, c.id)] = c.patch
    return out


def collect(
    run: Path,
    tasks: list[Task],
    attacks: dict[str, list[Attack]],
    selectors: list[str],
    reward_names: list[str],
    api_key: str | None = None,
) -> dict[str, dict[str, TaskAttack]]:
    """Per task, per attack kind: built or why not, and its outcome under every selector and reward."""
    ranked = rankings(run)
    pairs = _pairs(tasks, attacks)
    scored = {name: rewards(run, name, pairs, api_key) for name in reward_names}
    out: dict[str, dict[str, TaskAttack]] = {}
    for task in tasks:
        resolved = [c.id for c in task.candidates if c.resolved]
        mine: dict[str, TaskAttack] = {}
        for attack in attacks.get(task.instance_id, []):
            if attack.patch is None:
                mine[attack.kind] = TaskAttack(built=False, reason=attack.reason)
                continue
            copy = attack.copy_of(task.instance_id)
            outcomes: dict[str, Outcome] = {}
            row = ranked.get((copy, attack.candidate_id))
            for name in selectors:
                if row is None:
                    outcomes[name] = "absent"  # the copy was not scored
                    continue
                theirs = [ranked.get((copy, r), {}).get(name) for r in resolved]
                outcomes[name] = ranking_outcome(row.get(name), theirs)
            for name in reward_names:
                values = scored[name]
                theirs = [values[(copy, r)] for r in resolved]
                outcomes[name] = reward_outcome(values[(copy, attack.candidate_id)], theirs)
            mine[attack.kind] = TaskAttack(built=True, variant=attack.variant, outcomes=outcomes)
        if mine:
            out[task.instance_id] = mine
    return out
