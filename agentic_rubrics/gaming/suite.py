"""``agentic-rubrics sanity``: how often non-fixing candidates beat a task's real fixes, measured with
the library's own run and reward.

Each task with a resolved candidate gets one copy per attack kind (instance id
``<instance_id>.attack-<kind>``): its own candidates, labels unchanged, plus the attack (candidate
``attack-<kind>``, unlabelled), so each attack is measured alone in the user's real pool and no
pool-relative selector sees two attacks agree. The attack is left unlabelled (it resolves nothing, and
is counted here as such) so that nothing the report fits on labels (the hybrid's weight) learns from
it. The copies run through :func:`agentic_rubrics.pipeline.runner.run` with the user's configuration
(report-only settings aside: no plots, no bootstrap), into ``DIR/run``; artifacts given with
``--rubrics``/``--tests``/``--proxies DIR`` are given to every copy of their task. Then the checks-only
reward (and, with a judge model, the judged one) scores each attack and each resolved candidate
through :class:`agentic_rubrics.reward.scorer.RewardScorer`, and :mod:`.wins` counts.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import shutil
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from agentic_rubrics.datasets.repos import RepoCache, resolve_repo_path
from agentic_rubrics.exceptions import ConfigError, DataError, RepoError
from agentic_rubrics.gaming.attacks import KINDS, Attack, build_attacks, check_kinds
from agentic_rubrics.gaming.outcomes import collect
from agentic_rubrics.gaming.record import (
    GUARDED,
    REWARD_CHECKS,
    REWARD_JUDGED,
    SanityReport,
    TaskCounts,
    TaskEntry,
    markdown,
    summarise,
)
from agentic_rubrics.gaming.target import AttackInput
from agentic_rubrics.pipeline.config import RunConfig
from agentic_rubrics.pipeline.driver import ProgressHook
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.pipeline.verifiers import in_order
from agentic_rubrics.runfolder.files import atomic_write_json, atomic_write_text
from agentic_rubrics.runfolder.names import safe_name
from agentic_rubrics.runfolder.report import Report
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.types import Candidate, Task

RUN = "run"
"""The run folder, inside the sanity folder."""
COPIES = "sanity_tasks.jsonl"
"""The copies' tasks file (what the run scores), inside the sanity folder."""


Status = Literal["measured", "no_resolved_candidate", "no_labels"]


def status(task: Task) -> Status:
    """``measured`` (a resolved candidate), ``no_resolved_candidate`` or ``no_labels``."""
    labels = [c.resolved for c in task.candidates if c.resolved is not None]
    if not labels:
        return "no_labels"
    return "measured" if any(labels) else "no_resolved_candidate"


def reward_columns(config: RunConfig) -> list[str]:
    """The rewards a run of ``config`` is measured with."""
    return [REWARD_CHECKS, *([REWARD_JUDGED] if config.judge.kind == "llm" else [])]


def guarded_columns(config: RunConfig, guarded: list[str] | None) -> list[str]:
    """What ``--fail-on-win`` checks: the given columns (each must be measured: a
    :class:`ConfigError` otherwise), or :data:`GUARDED`'s that the run measures."""
    columns = [*config.selectors, *reward_columns(config)]
    if guarded is None:
        return [c for c in GUARDED if c in columns]
    unknown = [c for c in guarded if c not in columns]
    if unknown:
        raise ConfigError(
            f"--guarded {','.join(unknown)}: not measured by this run (its selectors and rewards:"
            f" {', '.join(columns)}); add the verifier or selector, or guard another"
        )
    return list(dict.fromkeys(guarded))


class _Trees:
    """Each task's base tree, as the run gets it (``repo_path``, else the repository cache)."""

    def __init__(self, config: RunConfig) -> None:
        self.config = config
        self.cache: RepoCache | None = None

    def get(self, task: Task) -> tuple[Path | None, str]:
        if not task.repo_path and self.config.repos.url_template is None:
            return None, "fetching_off"
        if not task.repo_path and self.cache is None:
            self.cache = RepoCache.from_config(self.config.repos)
        try:
            tree = resolve_repo_path(task, None if task.repo_path else self.cache)
        except RepoError as exc:
            return None, exc.reason
        if tree is None:
            return None, "no_repository"
        if not tree.path.is_dir():
            return None, "no_such_folder"
        return tree.path, ""


def _attacks(tasks: list[Task], config: RunConfig, kinds: list[str]) -> dict[str, list[Attack]]:
    trees = _Trees(config)
    out: dict[str, list[Attack]] = {}
    for task in tasks:
        if status(task) != "measured":
            continue
        tree, why = trees.get(task)
        resolved = [c.patch for c in task.candidates if c.resolved]
        out[task.instance_id] = build_attacks(
            AttackInput(task.problem_statement, tree, why, resolved), kinds
        )
    return out


def _copies(tasks: list[Task], attacks: dict[str, list[Attack]]) -> list[Task]:
    ids = {t.instance_id for t in tasks}
    copies = []
    for task in tasks:
        for attack in attacks.get(task.instance_id, []):
            if attack.patch is None:
                continue
            if attack.candidate_id in {c.id for c in task.candidates}:
                raise DataError(
                    f"{task.instance_id}: a candidate is already named {attack.candidate_id}"
                )
            cid = attack.copy_of(task.instance_id)
            if cid in ids:
                raise DataError(f"the tasks file already has an instance {cid!r}")
            extra = Candidate(id=attack.candidate_id, source="sanity:attack", patch=attack.patch)
            copies.append(
                task.model_copy(
                    update={"instance_id": cid, "candidates": [*task.candidates, extra]}
                )
            )
    return copies


def _given_folder(root: Path, instance_id: str) -> Path | None:
    for name in (safe_name(instance_id), instance_id):
        at = root / name
        if ".." not in Path(name).parts and at.is_dir() and not at.is_symlink():
            return at
    return None


def _given(config: RunConfig, pairs: Iterable[tuple[str, str]], dest: Path) -> RunConfig:
    """``config`` with each given artifact folder (``--rubrics``, ``--tests`` ...) laid out again for
    the copies: ``dest/<folder>/<copy>/`` a copy of the task's own."""
    data = config.model_dump(mode="json")
    pairs = list(pairs)
    for spec in in_order(config.verifiers):
        section = config.verifier_settings.get(spec.name)
        given = section.given() if section is not None else None
        if section is None or given is None:
            continue
        key = next((k for k in type(section).model_fields if getattr(section, k) == given), None)
        if key is None:  # a verifier whose given folder is no setting of its own: left as it is
            continue
        root = dest / spec.folder
        for copy, original in pairs:
            source = _given_folder(Path(given), original)
            target = root / safe_name(copy)
            shutil.rmtree(target, ignore_errors=True)
            if source is not None:
                shutil.copytree(source, target, symlinks=True)
        root.mkdir(parents=True, exist_ok=True)
        data[key] = str(root)
    data.update(plots=False, bootstrap_resamples=0)  # report-only: no ranking depends on them
    return RunConfig.model_validate(data)


def _write_tasks(path: Path, tasks: list[Task]) -> None:
    rows = (t.model_dump_json(exclude_none=True) + "\n" for t in tasks)
    atomic_write_text(path, "".join(rows))


@dataclass
class Plan:
    """The suite prepared: the user's tasks, their attacks, the copies the run scores and its
    configuration."""

    tasks_file: Path
    out: Path
    tasks: list[Task]
    kinds: list[str]
    attacks: dict[str, list[Attack]]
    copies: list[Task]
    config: RunConfig
    """The run's configuration (given artifacts laid out for the copies)."""
    rewards: list[str]
    guarded: list[str]


def prepare(
    tasks_file: Path,
    out: Path,
    config: RunConfig | None = None,
    *,
    kinds: list[str] | None = None,
    guarded: list[str] | None = None,
) -> Plan:
    """Build every attack of every task (``kinds``: default all) and write the copies' tasks file
    (``out/sanity_tasks.jsonl``). A :class:`ConfigError` for an unknown kind or a guarded column the
    run does not measure; a :class:`DataError` when no attack could be built."""
    config = config or RunConfig()
    try:
        chosen = check_kinds(kinds if kinds is not None else list(KINDS))
    except ValueError as exc:
        raise ConfigError(str(exc)) from None
    columns = guarded_columns(config, guarded)
    tasks = load_tasks(tasks_file)
    attacks = _attacks(tasks, config, chosen)
    copies = _copies(tasks, attacks)
    if not copies:
        raise DataError(
            f"{tasks_file}: no attack could be built (no task has a resolved candidate?)"
        )
    pairs = [(c.instance_id, c.instance_id.rsplit(".", 1)[0]) for c in copies]
    run_config = _given(config, pairs, out / "given")
    _write_tasks(out / COPIES, copies)
    return Plan(
        tasks_file, out, tasks, chosen, attacks, copies, run_config, reward_columns(config), columns
    )


def measure(
    plan: Plan,
    *,
    api_key: str | None = None,
    restart: bool = False,
    redo_changed: bool = False,
    retry_missing: bool = True,
    hook: ProgressHook | None = None,
) -> tuple[SanityReport, Report]:
    """Run the copies (``out/run``), score the rewards, count the wins; write ``sanity.json`` and
    ``sanity.md``. Returns the record and the run's report."""
    made = run(
        plan.out / COPIES,
        plan.out / RUN,
        plan.config,
        restart=restart,
        hook=hook,
        api_key=api_key,
        redo_changed=redo_changed,
        retry_missing=retry_missing,
    )
    assert made is not None  # the report stage ran
    selectors = list(plan.config.selectors)
    outcomes = collect(plan.out / RUN, plan.tasks, plan.attacks, selectors, plan.rewards, api_key)
    entries = [
        TaskEntry(
            instance_id=t.instance_id, status=status(t), attacks=outcomes.get(t.instance_id, {})
        )
        for t in plan.tasks
    ]
    report = SanityReport(
        version=importlib.metadata.version("agentic-rubrics"),
        config_hash=plan.config.content_hash(),
        tasks_sha256="sha256:" + hashlib.sha256(plan.tasks_file.read_bytes()).hexdigest(),
        run_folder=RUN,
        selectors=selectors,
        rewards=plan.rewards,
        guarded=plan.guarded,
        attack_kinds=plan.kinds,
        kinds=summarise(entries, plan.kinds, [*selectors, *plan.rewards]),
        tasks=TaskCounts(
            given=len(entries),
            measured=sum(e.status == "measured" for e in entries),
            no_resolved_candidate=sum(e.status == "no_resolved_candidate" for e in entries),
            no_labels=sum(e.status == "no_labels" for e in entries),
        ),
        per_task=entries,
    )
    atomic_write_json(plan.out / "sanity.json", report.to_json())
    atomic_write_text(plan.out / "sanity.md", markdown(report))
    return report, made


def sanity(
    tasks_file: Path,
    out: Path,
    config: RunConfig | None = None,
    *,
    kinds: list[str] | None = None,
    guarded: list[str] | None = None,
    api_key: str | None = None,
    restart: bool = False,
) -> SanityReport:
    """The gaming suite on ``tasks_file`` into ``out`` (see the module's docstring): ``sanity.json``
    (returned), ``sanity.md`` and the run folder ``out/run``."""
    plan = prepare(Path(tasks_file), Path(out), config, kinds=kinds, guarded=guarded)
    report, _ = measure(plan, api_key=api_key, restart=restart)
    return report
