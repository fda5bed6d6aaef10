"""The main job: explore → judge → rerank → report, into a resumable run folder.

Each task is explored and judged as a unit; its verdict rows and then its progress row are appended
when it finishes, so a killed run resumes where it stopped without redoing finished tasks. Explorers
and judges get the task's public view only (no labels, no candidate sources, no evaluation fields).
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from agentic_rubrics import Judge
from agentic_rubrics.config import RunConfig, load_config
from agentic_rubrics.data import (
    RunFolder,
    atomic_write_json,
    atomic_write_text,
    load_tasks,
    redactor,
)
from agentic_rubrics.exceptions import (
    AgenticRubricsError,
    ConfigError,
    JudgeError,
    ModelError,
    RubricError,
)
from agentic_rubrics.explore import Explorer, make_explorer
from agentic_rubrics.judge import ChecksJudge, LLMJudge
from agentic_rubrics.llm import LLM, Ledger, LLMConfig
from agentic_rubrics.patch import is_empty_patch, patch_hash
from agentic_rubrics.rerank import PatchClassifier, patch_features, self_consistency_ranking
from agentic_rubrics.rubric import lint, load_rubric, parse_rubric, rubric_to_yaml, write_rubric
from agentic_rubrics.types import SCHEMA, Rubric, Task

__all__ = ["RunConfig", "load_config", "run", "run_async", "write_report"]

log = logging.getLogger(__name__)

ProgressHook = Callable[[str, str, dict[str, Any]], None]
"""Called as ``hook(event, instance_id, info)`` with events ``explored``, ``judged``, ``skipped``;
``info`` holds the task's missing verdicts (``missing``) and the run's spending so far (``usd``,
``calls``)."""


# --------------------------------------------------------------------------- stages


async def obtain_rubric(task: Task, ctx: RunContext) -> tuple[Rubric | None, dict[str, Any]]:
    """The task's rubric: from an earlier attempt in this folder, from ``--rubrics``, or explored."""
    config, folder, explorer = ctx.config, ctx.folder, ctx.explorer
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
    sandbox_kind = None
    if config.rubrics_dir is not None:
        status["source"] = "reused"
        rubric, status = _reuse_rubric(task, Path(config.rubrics_dir), status)
    else:
        status["source"] = f"explorer:{explorer.name}"
        rubric, trajectory, status, sandbox_kind = await _explore(task, ctx, status)
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
        record = {
            "schema": SCHEMA,
            "instance_id": task.instance_id,
            "explorer": explorer.name,
            "model": config.explorer.model.model if config.explorer.model else None,
            "sandbox": sandbox_kind,
            "status": status["status"],
            "reason": status.get("reason"),
            "turns": len(trajectory),
            "cost": ctx.ledger.for_task(task.instance_id).get("explore", {}),
            "steps": trajectory,
        }
        atomic_write_json(folder.trajectory_path(task.instance_id), ctx.redact(record))
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
    task: Task, ctx: RunContext, status: dict[str, Any]
) -> tuple[Rubric | None, list[dict[str, Any]], dict[str, Any], str | None]:
    from agentic_rubrics.explore.agent import ExplorationFailed
    from agentic_rubrics.sandbox import open_sandbox

    cfg = ctx.config.explorer
    sandbox: Any = None
    try:
        local = cfg.sandbox.type in ("auto", "bubblewrap", "local-copy", "swerex-local")
        if cfg.uses_sandbox and not (local and not task.repo_path):
            sandbox = await open_sandbox(
                cfg.sandbox,
                instance_id=task.instance_id,
                repo_path=task.repo_path,
                model_commands=cfg.kind == "agent",
                allow_unisolated=cfg.allow_unisolated,
            )
        elif cfg.kind == "agent":
            return None, [], {**status, "status": "failed", "reason": "no_repository"}, None
        # the static explorer with no repository writes the issue-only static rubric
        kind = getattr(sandbox, "kind", None)
        try:
            rubric, steps = await ctx.explorer.explore(task, sandbox)
        except ExplorationFailed as failed:
            return None, failed.steps, {**status, "status": "failed", "reason": failed.reason}, kind
        return rubric, steps, status, kind
    except AgenticRubricsError as exc:
        if isinstance(exc, ModelError):
            raise  # authentication or an unknown model: the whole run cannot go on
        reason = "sandbox_error" if sandbox is None and cfg.uses_sandbox else "explore_error"
        log.warning("%s: %s: %s", task.instance_id, reason, exc)
        return (
            None,
            [],
            {**status, "status": "failed", "reason": f"{reason}:{type(exc).__name__}"},
            None,
        )
    finally:
        if sandbox is not None:
            await sandbox.close()


@dataclass
class RunContext:
    """What every task of a run shares: the judge, the models, their budget and concurrency."""

    config: RunConfig
    folder: RunFolder
    explorer: Explorer
    judge: Judge
    ledger: Ledger
    classifier: PatchClassifier | None = None
    models: list[LLM] = field(default_factory=list)

    redact: Callable[[Any], Any] = field(default=lambda x: x)

    @classmethod
    def build(cls, config: RunConfig, folder: RunFolder, api_key: str | None) -> RunContext:
        ledger = Ledger(max_cost_usd=config.max_cost_usd)
        models: dict[str, LLM] = {}

        def llm_for(llm_config: LLMConfig) -> LLM:
            # one LLM per distinct model configuration: the same model shares one concurrency limit
            key = llm_config.model_dump_json()
            if key not in models:
                models[key] = LLM(
                    llm_config,
                    api_key=SecretStr(api_key) if api_key else None,
                    cache_dir=folder.root / "cache" / "llm",
                    ledger=ledger,
                )
            return models[key]

        explorer_llm = llm_for(config.explorer.model) if config.explorer.model else None
        ctx = cls(
            config, folder, make_explorer(config.explorer, explorer_llm), ChecksJudge(), ledger
        )
        if config.judge.kind == "llm" and config.judge.model is not None:
            llm = llm_for(config.judge.model)
            ctx.judge = LLMJudge(llm, config.judge, seed=config.seed)
            if "patch_classifier" in config.selectors:
                ctx.classifier = PatchClassifier(llm)
        ctx.models = list(models.values())
        ctx.redact = redactor([api_key] if api_key else [])
        if config.explorer.kind == "agent" and config.explorer.allow_unisolated:
            log.warning(
                "UNISOLATED sandboxes allowed: model-chosen commands may run on this machine"
                " as this user (--unsafe-local-sandbox)"
            )
        return ctx

    def spending(self) -> dict[str, Any]:
        """Known dollars and model calls so far in this process."""
        calls = sum(int(e["calls"]) for e in self.ledger.entries.values())
        return {"usd": self.ledger.spent, "calls": calls}

    async def aclose(self) -> None:
        for llm in self.models:
            await llm.aclose()


def _generator_warning(task: Task, model: str) -> int:
    """Candidates whose source names the judge model (judging your own output inflates scores)."""
    base = re.sub(r"[^a-z0-9]", "", model.rsplit("/", 1)[-1].lower())
    if len(base) < 4:
        return 0
    return sum(
        1
        for c in task.candidates
        if c.source and base in re.sub(r"[^a-z0-9]", "", c.source.lower())
    )


async def judge_task(
    task: Task, rubric: Rubric | None, judge: Judge, *, repeats: int, concurrency: int
) -> list[dict[str, Any]]:
    """Verdict rows for every candidate (none when the rubric failed: scoring says rubric_error).

    Identical patches (after normalising white space and index lines) are judged once and share
    their verdicts. Checked items are recorded once (repeat 0): they cannot vary.
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

    async def one(key: str, repeat: int) -> list[dict[str, Any]]:
        first = groups[key][0]
        async with limit:
            verdicts = await judge.judge(
                instance_id=task.instance_id,
                issue=task.problem_statement,
                rubric=rubric,
                candidate_id=first,
                patch=patches[key],
                repeat=repeat,
            )
        if sorted(v.item_id for v in verdicts) != item_ids:
            raise JudgeError(
                f"{judge.name} returned verdicts for {sorted(v.item_id for v in verdicts)},"
                f" expected exactly the rubric's items {item_ids}"
            )
        rows = [v.to_row() for v in verdicts if repeat == 0 or v.origin != "checked"]
        return [{**r, "candidate_id": cid} for cid in groups[key] for r in rows]

    jobs = [one(key, r) for key in groups for r in range(repeats)]
    order = {c.id: n for n, c in enumerate(task.candidates)}
    rows = [row for part in await asyncio.gather(*jobs) for row in part]
    return sorted(rows, key=lambda r: (order[r["candidate_id"]], r["repeat"]))


async def process_task(task: Task, ctx: RunContext, hook: ProgressHook | None = None) -> None:
    """Explore (or reuse) and judge one task, then record it as finished."""
    started = time.monotonic()
    config = ctx.config
    public = task.public()
    rubric, status = await obtain_rubric(public, ctx)
    if hook:
        hook("explored", task.instance_id, ctx.spending())
    repeats = config.judge.repeats if config.judge.kind == "llm" else 1
    rows = await judge_task(
        public, rubric, ctx.judge, repeats=repeats, concurrency=config.judge.concurrency
    )
    baselines: dict[str, Any] = {}
    if "self_consistency" in config.selectors:
        baselines["self_consistency"] = self_consistency_ranking(
            {c.id: c.patch for c in public.candidates}
        )
    if "offline" in config.selectors:
        features = patch_features({c.id: c.patch for c in public.candidates})
        baselines["offline_features"] = features
    if ctx.classifier is not None:
        unique = {patch_hash(c.patch): c.patch for c in public.candidates}
        keys = list(unique)
        probs = await asyncio.gather(
            *(
                ctx.classifier.score(public.problem_statement, unique[k], task=task.instance_id)
                for k in keys
            )
        )
        by_key = dict(zip(keys, probs, strict=True))
        baselines["patch_classifier"] = {
            c.id: by_key[patch_hash(c.patch)] for c in public.candidates
        }
    own_output = 0
    if config.judge.model is not None:
        # sources are read only to warn; they never reach a judge or a score
        own_output = _generator_warning(task, config.judge.model.model)
        if own_output:
            log.warning(
                "%s: the judge model %s also generated %d candidate(s); its scores may be inflated",
                task.instance_id,
                config.judge.model.model,
                own_output,
            )
    progress = {
        "schema": SCHEMA,
        "instance_id": task.instance_id,
        "repo": task.repo,
        "base_commit": task.base_commit,
        "explorer": config.explorer.kind if config.rubrics_dir is None else "reused",
        "judge": ctx.judge.name,
        "repeats": repeats,
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
        "judge_generated_candidates": own_output,
        "cost": ctx.ledger.for_task(task.instance_id),
        "seconds": round(time.monotonic() - started, 3),
    }
    ctx.folder.record_task(rows, progress)
    if hook:
        missing = sum(1 for r in rows if r["origin"] == "missing")
        hook("judged", task.instance_id, {**ctx.spending(), "missing": missing})


async def run_async(
    tasks_file: Path,
    out: Path,
    config: RunConfig,
    *,
    restart: bool = False,
    stages: tuple[str, ...] = ("explore", "judge", "report"),
    hook: ProgressHook | None = None,
    api_key: str | None = None,
) -> dict[str, Any] | None:
    """Run the stages over every task of ``tasks_file`` into ``out``; return the report if made.

    ``api_key`` is used for model calls and never written anywhere.
    """
    tasks = load_tasks(tasks_file)
    folder = RunFolder(out)
    folder.open(
        {**config.model_dump(mode="json"), "tasks_file": str(tasks_file)},
        config.content_hash(),
        restart=restart,
    )
    ctx = RunContext.build(config, folder, api_key)
    limit = asyncio.Semaphore(config.task_concurrency)
    try:
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
                    hook("skipped", t.instance_id, {"missing": 0})

            async def guarded(task: Task) -> None:
                async with limit:
                    await process_task(task, ctx, hook)

            await asyncio.gather(*(guarded(t) for t in todo))
        elif "explore" in stages:

            async def explore_only(task: Task) -> None:
                async with limit:
                    await obtain_rubric(task.public(), ctx)
                    if hook:
                        hook("explored", task.instance_id, {**ctx.spending(), "explore_only": True})

            await asyncio.gather(*(explore_only(t) for t in tasks))
    finally:
        await ctx.aclose()
    if "report" not in stages:
        return None
    return write_report(folder, tasks)


def write_report(folder: RunFolder, tasks: list[Task] | None = None) -> dict[str, Any]:
    """Build report.json and report.md; with the tasks at hand, also selections.jsonl."""
    from agentic_rubrics.plots import write_plots
    from agentic_rubrics.report import build_report_and_results, render_markdown

    report, results = build_report_and_results(folder)
    plots = write_plots(folder.root, report, results)
    report["plots"] = [path for _, path in plots]
    atomic_write_json(folder.report_json, report)
    atomic_write_text(folder.report_md, render_markdown(report, plots))
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
    api_key: str | None = None,
) -> dict[str, Any] | None:
    """Synchronous :func:`run_async` (the library's main entry point)."""
    return asyncio.run(
        run_async(
            tasks_file,
            out,
            config or RunConfig(),
            restart=restart,
            stages=stages,
            hook=hook,
            api_key=api_key,
        )
    )
