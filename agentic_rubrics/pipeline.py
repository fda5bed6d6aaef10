"""The main job: explore → judge → rerank → report, into a resumable run folder.

Each task is explored and judged as a unit; its verdict rows and then its progress row are appended
when it finishes, so a killed run resumes where it stopped without redoing finished tasks. Explorers
and judges get the task's public view only (no labels, no candidate sources, no evaluation fields).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from agentic_rubrics import Judge
from agentic_rubrics.data import RunFolder, atomic_write_json, atomic_write_text, load_tasks
from agentic_rubrics.exceptions import AgenticRubricsError, ConfigError, JudgeError, RubricError
from agentic_rubrics.explore import Explorer, ExplorerConfig, make_explorer
from agentic_rubrics.judge import JudgeConfig, make_judge
from agentic_rubrics.patch import is_empty_patch, patch_hash
from agentic_rubrics.rerank import SELECTORS, self_consistency_ranking
from agentic_rubrics.rubric import lint, load_rubric, parse_rubric, rubric_to_yaml, write_rubric
from agentic_rubrics.scoring import DecisionPolicy
from agentic_rubrics.types import SCHEMA, Rubric, Task

ProgressHook = Callable[[str, str], None]
"""Called as ``hook(event, instance_id)`` with events ``explored``, ``judged``, ``skipped``."""


class RunConfig(BaseModel):
    """The whole configuration of a run; its hash guards resuming."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    explorer: ExplorerConfig = Field(default_factory=ExplorerConfig)
    """How rubrics are written."""
    judge: JudgeConfig = Field(default_factory=JudgeConfig)
    """How candidates are judged."""
    policy: DecisionPolicy = Field(default_factory=DecisionPolicy)
    """Thresholds for decisions."""
    selectors: list[str] = Field(default_factory=lambda: ["rubric", "self_consistency", "random"])
    """Selectors compared in the report; the first one writes selections.jsonl."""
    rubrics_dir: str | None = None
    """Reuse ``DIR/<instance_id>/rubrics.yaml`` instead of exploring."""
    seed: int = 0
    """Seed of the tie-break and of the bootstrap."""
    max_k: int = Field(default=16, ge=1)
    """Largest K reported for Best@K."""
    bootstrap_resamples: int = Field(default=1000, ge=0)
    """Resamples of the 95% intervals (0 turns them off)."""
    task_concurrency: int = Field(default=4, ge=1)
    """Tasks explored and judged at the same time (does not change results)."""
    trajectories: bool = True
    """Write exploration trajectories to trajectories/ (does not change results)."""

    @field_validator("selectors")
    @classmethod
    def _known_selectors(cls, value: list[str]) -> list[str]:
        unknown = [s for s in value if s not in SELECTORS]
        if unknown or not value or len(set(value)) != len(value):
            raise ValueError(
                f"selectors must be distinct names among {', '.join(SELECTORS)}; got {value}"
            )
        return value

    def content_hash(self) -> str:
        """Hash of every setting that can change a result."""
        data = self.model_dump(mode="json", exclude={"task_concurrency", "trajectories"})
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(blob.encode()).hexdigest()


def load_config(path: Path | None, **overrides: Any) -> RunConfig:
    """A RunConfig from a YAML file (optional) with command-line overrides on top.

    Raises:
        ConfigError: the file is unreadable or a field is unknown or invalid (named with the file).
    """
    data: dict[str, Any] = {}
    if path is not None:
        try:
            loaded = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"{path}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"{path}: expected a mapping of settings")
        data = loaded
    for key, value in overrides.items():
        if value is None:
            continue
        section, _, field = key.partition("__")
        if field:
            data.setdefault(section, {})[field] = value
        else:
            data[key] = value
    try:
        return RunConfig.model_validate(data)
    except ValidationError as exc:
        err = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in err["loc"])
        raise ConfigError(f"{path or 'configuration'}: {where}: {err['msg']}") from exc


# --------------------------------------------------------------------------- stages


async def obtain_rubric(
    task: Task, config: RunConfig, folder: RunFolder, explorer: Explorer
) -> tuple[Rubric | None, dict[str, Any]]:
    """The task's rubric: from an earlier attempt in this folder, from ``--rubrics``, or explored."""
    status_path = folder.rubric_status_path(task.instance_id)
    if status_path.exists():
        earlier: dict[str, Any] = json.loads(status_path.read_text(encoding="utf-8"))
        if earlier["status"] != "ok":
            return None, earlier
        loaded, _ = load_rubric(folder.rubric_path(task.instance_id))
        return loaded, earlier
    started = time.monotonic()
    status: dict[str, Any] = {"schema": SCHEMA, "instance_id": task.instance_id}
    status["base_commit"] = task.base_commit
    rubric: Rubric | None = None
    trajectory: list[dict[str, Any]] = []
    if config.rubrics_dir is not None:
        status["source"] = "reused"
        rubric, status = _reuse_rubric(task, Path(config.rubrics_dir), status)
    else:
        status["source"] = f"explorer:{explorer.name}"
        rubric, trajectory, status = await _explore(task, explorer, status)
    if rubric is not None:
        try:  # what is written must load back: the report reads it from disk
            parse_rubric(rubric_to_yaml(rubric), str(folder.rubric_path(task.instance_id)))
        except RubricError as exc:
            rubric = None
            status.update(status="failed", reason="invalid_rubric", problems=len(exc.problems))
    if rubric is not None:
        write_rubric(rubric, folder.rubric_path(task.instance_id))
        status.update(
            status="ok",
            reason=None,
            hash=rubric.content_hash(),
            items=sum(1 for _ in rubric.items()),
            checked_items=sum(1 for _, i in rubric.items() if i.check is not None),
            lint_warnings=len(lint(rubric)),
        )
    status["seconds"] = round(time.monotonic() - started, 3)
    if config.trajectories and status["source"] != "reused":
        atomic_write_json(
            folder.trajectory_path(task.instance_id),
            {
                "schema": SCHEMA,
                "instance_id": task.instance_id,
                "explorer": explorer.name,
                "status": status["status"],
                "reason": status.get("reason"),
                "steps": trajectory,
            },
        )
    atomic_write_json(status_path, status)
    return rubric, status


def _reuse_rubric(
    task: Task, rubrics_dir: Path, status: dict[str, Any]
) -> tuple[Rubric | None, dict[str, Any]]:
    from agentic_rubrics.data import safe_name

    for name in (task.instance_id, safe_name(task.instance_id)):
        path = rubrics_dir / name / "rubrics.yaml"
        if path.exists():
            try:
                rubric, _ = load_rubric(path)
            except RubricError as exc:
                return None, {
                    **status,
                    "status": "failed",
                    "reason": "rubric_invalid",
                    "problems": len(exc.problems),
                }
            return rubric, status
    return None, {**status, "status": "failed", "reason": "rubric_not_found"}


async def _explore(
    task: Task, explorer: Explorer, status: dict[str, Any]
) -> tuple[Rubric | None, list[dict[str, Any]], dict[str, Any]]:
    from agentic_rubrics.sandbox import LocalCopySandbox

    if not task.repo_path:
        return None, [], {**status, "status": "failed", "reason": "no_repository"}
    try:
        sandbox = await asyncio.to_thread(LocalCopySandbox, Path(task.repo_path))
    except AgenticRubricsError as exc:
        return (
            None,
            [],
            {**status, "status": "failed", "reason": f"sandbox_error:{type(exc).__name__}"},
        )
    try:
        rubric, steps = await explorer.explore(task, sandbox)
        return rubric, steps, status
    except AgenticRubricsError as exc:
        return (
            None,
            [],
            {**status, "status": "failed", "reason": f"explore_error:{type(exc).__name__}"},
        )
    finally:
        await sandbox.close()


async def judge_task(
    task: Task, rubric: Rubric | None, judge: Judge, concurrency: int
) -> list[dict[str, Any]]:
    """Verdict rows for every candidate (none when the rubric failed: scoring says rubric_error)."""
    if rubric is None:
        return []
    limit = asyncio.Semaphore(concurrency)
    item_ids = [i.id for _, i in rubric.items()]

    async def one(candidate_id: str, patch: str) -> list[dict[str, Any]]:
        async with limit:
            verdicts = await judge.judge(
                instance_id=task.instance_id,
                issue=task.problem_statement,
                rubric=rubric,
                candidate_id=candidate_id,
                patch=patch,
            )
        if sorted(v.item_id for v in verdicts) != sorted(item_ids):
            raise JudgeError(
                f"{judge.name} returned verdicts for {sorted(v.item_id for v in verdicts)},"
                f" expected exactly the rubric's items {sorted(item_ids)}"
            )
        return [v.to_row() for v in verdicts]

    per_candidate = await asyncio.gather(*(one(c.id, c.patch) for c in task.candidates))
    return [row for rows in per_candidate for row in rows]


async def process_task(
    task: Task,
    config: RunConfig,
    folder: RunFolder,
    explorer: Explorer,
    judge: Judge,
    hook: ProgressHook | None = None,
) -> None:
    """Explore (or reuse) and judge one task, then record it as finished."""
    started = time.monotonic()
    public = task.public()
    rubric, status = await obtain_rubric(public, config, folder, explorer)
    if hook:
        hook("explored", task.instance_id)
    rows = await judge_task(public, rubric, judge, config.judge.concurrency)
    baselines: dict[str, dict[str, float | None]] = {}
    if "self_consistency" in config.selectors:
        baselines["self_consistency"] = self_consistency_ranking(
            {c.id: c.patch for c in public.candidates}
        )
    progress = {
        "schema": SCHEMA,
        "instance_id": task.instance_id,
        "repo": task.repo,
        "base_commit": task.base_commit,
        "explorer": config.explorer.kind if config.rubrics_dir is None else "reused",
        "judge": judge.name,
        "rubric": {k: status.get(k) for k in ("status", "reason", "hash", "source", "items")},
        "candidates": [
            {
                "id": c.id,
                "patch_hash": patch_hash(c.patch),
                "empty": is_empty_patch(c.patch),
                "resolved": c.resolved,
            }
            for c in task.candidates
        ],
        "baselines": baselines,
        "verdict_rows": len(rows),
        "cost": {"usd": 0.0, "calls": 0, "unknown_cost_calls": 0},
        "seconds": round(time.monotonic() - started, 3),
    }
    folder.record_task(rows, progress)
    if hook:
        hook("judged", task.instance_id)


async def run_async(
    tasks_file: Path,
    out: Path,
    config: RunConfig,
    *,
    restart: bool = False,
    stages: tuple[str, ...] = ("explore", "judge", "report"),
    hook: ProgressHook | None = None,
) -> dict[str, Any] | None:
    """Run the stages over every task of ``tasks_file`` into ``out``; return the report if made."""
    tasks = load_tasks(tasks_file)
    folder = RunFolder(out)
    folder.open(
        {**config.model_dump(mode="json"), "tasks_file": str(tasks_file)},
        config.content_hash(),
        restart=restart,
    )
    explorer = make_explorer(config.explorer)
    judge = make_judge(config.judge)
    limit = asyncio.Semaphore(config.task_concurrency)

    if "judge" in stages:
        done = folder.progress()
        todo = [t for t in tasks if t.instance_id not in done]
        if "explore" not in stages:
            unexplored = [
                t.instance_id
                for t in todo
                if not folder.rubric_status_path(t.instance_id).exists()
                and config.rubrics_dir is None
            ]
            if unexplored:
                raise ConfigError(
                    f"{len(unexplored)} task(s) have no rubric yet (e.g. {unexplored[0]});"
                    " run 'explore' first or pass --rubrics DIR"
                )
        for t in tasks:
            if t.instance_id in done and hook:
                hook("skipped", t.instance_id)

        async def guarded(task: Task) -> None:
            async with limit:
                await process_task(task, config, folder, explorer, judge, hook)

        await asyncio.gather(*(guarded(t) for t in todo))
    elif "explore" in stages:

        async def explore_only(task: Task) -> None:
            async with limit:
                await obtain_rubric(task.public(), config, folder, explorer)
                if hook:
                    hook("explored", task.instance_id)

        await asyncio.gather(*(explore_only(t) for t in tasks))
    if "report" not in stages:
        return None
    return write_report(folder, tasks)


def write_report(folder: RunFolder, tasks: list[Task] | None = None) -> dict[str, Any]:
    """Build report.json and report.md; with the tasks at hand, also selections.jsonl."""
    from agentic_rubrics.report import build_report, render_markdown

    report = build_report(folder)
    atomic_write_json(folder.report_json, report)
    atomic_write_text(folder.report_md, render_markdown(report))
    if tasks is not None:
        primary = report["primary_selector"]
        patches = {(t.instance_id, c.id): c.patch for t in tasks for c in t.candidates}
        lines = []
        for t in report["tasks"]:
            pick = t["picks"][primary]["candidate_id"]
            if pick is None:
                continue
            row = {
                "instance_id": t["instance_id"],
                "model_name_or_path": f"agentic-rubrics/{primary}",
                "model_patch": patches[(t["instance_id"], pick)],
            }
            lines.append(json.dumps(row, ensure_ascii=False) + "\n")
        atomic_write_text(folder.selections_path, "".join(lines))
    return report


def run(
    tasks_file: Path,
    out: Path,
    config: RunConfig | None = None,
    *,
    restart: bool = False,
    stages: tuple[str, ...] = ("explore", "judge", "report"),
    hook: ProgressHook | None = None,
) -> dict[str, Any] | None:
    """Synchronous :func:`run_async` (the library's main entry point)."""
    return asyncio.run(
        run_async(tasks_file, out, config or RunConfig(), restart=restart, stages=stages, hook=hook)
    )
