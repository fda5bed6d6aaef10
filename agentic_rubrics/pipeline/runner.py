"""The main job: explore → judge → rerank → report, into a resumable run folder.

Each task is explored and judged as a unit; its verdict rows and then its progress row are appended
when it finishes, so a killed run resumes where it stopped without redoing finished tasks. Explorers
and judges get the task's public view only (no labels, no candidate sources, no evaluation fields).
"""

from __future__ import annotations

import asyncio
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.inputs import changed_tasks, refuse_changed
from agentic_rubrics.datasets.labels import (
    Labels,
    from_tasks,
    load_labels,
    recorded_labels,
    recorded_tasks_file,
)
from agentic_rubrics.exceptions import ConfigError, DataError
from agentic_rubrics.llm.spend import read_spending
from agentic_rubrics.pipeline.config import RunConfig, load_config, resume_refusal
from agentic_rubrics.pipeline.driver import ProgressHook, run_tasks
from agentic_rubrics.pipeline.verifiers import get_spec, in_order
from agentic_rubrics.report.problems import diagnose
from agentic_rubrics.report.unscored import unscored
from agentic_rubrics.runfolder.files import atomic_write_json, atomic_write_text
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.runfolder.lock import folder_lock
from agentic_rubrics.runfolder.report import Report
from agentic_rubrics.runfolder.retry import RetryPlan, plan_retries
from agentic_rubrics.runfolder.tasks import load_tasks
from agentic_rubrics.types import Task

__all__ = ["RunConfig", "load_config", "report_folder", "run", "run_async", "write_report"]

log = logging.getLogger(__name__)


async def run_async(
    tasks_file: Path | str,
    out: Path | str,
    config: RunConfig,
    *,
    restart: bool = False,
    stages: tuple[str, ...] = ("explore", "judge", "report"),
    hook: ProgressHook | None = None,
    api_key: str | None = None,
    redo_changed: bool = False,
    retry_missing: bool = True,
) -> Report | None:
    """Run the stages over every task of ``tasks_file`` into ``out``; return report.json's content if
    the report was made.

    ``api_key`` is used for model calls and never written anywhere. A task whose inputs differ from
    what the folder scored is refused, unless ``redo_changed``: then that task alone is redone.
    ``retry_missing``: resuming retries the items and rubrics that failed transiently
    (:mod:`agentic_rubrics.runfolder.retry`).
    """
    tasks_file = Path(tasks_file)
    tasks = load_tasks(tasks_file)
    if "judge" in stages and not any(t.candidates for t in tasks):  # a misspelt key, say
        raise DataError(
            f"{tasks_file}: no task has a candidate to judge: expected a non-empty 'candidates'"
            " list of {id, patch} objects (`explore` alone writes rubrics without them)"
        )
    job = _Job(tasks, tasks_file, RunFolder(out), config, stages, hook, api_key)
    with folder_lock(job.folder.root):
        job.open(restart, redo_changed)
        return await job.run(retry_missing)


@dataclass
class _Job:
    tasks: list[Task]
    tasks_file: Path
    folder: RunFolder
    config: RunConfig
    stages: tuple[str, ...]
    hook: ProgressHook | None
    api_key: str | None

    def open(self, restart: bool, redo_changed: bool) -> None:
        """Create or resume the folder: the same configuration, and the same inputs, or refuse."""
        config, folder = self.config, self.folder
        wanted = {
            **config.model_dump(mode="json"),
            "prompts": config.prompt_hashes(),
            "tasks_file": str(self.tasks_file.resolve()),
        }
        if restart or not folder.config_path.exists():
            _check_folders(config, wanted)
        if folder.config_path.exists() and not restart:
            recorded = folder.config()
            if recorded.get("config_hash") != config.content_hash():
                raise ConfigError(resume_refusal(folder.root, recorded.get("config", {}), wanted))
        entries = {s.name: s.entry() for s in in_order(config.verifiers)}
        folder.open(wanted, config.content_hash(), restart=restart, verifiers=entries)
        changed = changed_tasks(folder, self.tasks)
        if not redo_changed:
            refuse_changed(
                changed,
                remedy="Run again with --redo-changed to redo these tasks (and only these), or"
                " give the tasks file this folder was made with, or use another --out folder.",
            )
        folder.forget(set(changed), rubrics=True)
        if config.max_cost_usd is not None:
            _warn_unpriced(config)
        if config.explorer.model_commands and config.explorer.allow_unisolated:
            log.warning(
                "UNISOLATED sandboxes allowed: model-chosen commands may run on this machine"
                " as this user (--unsafe-local-sandbox)"
            )

    async def run(self, retry_missing: bool) -> Report | None:
        config, folder, tasks, stages = self.config, self.folder, self.tasks, self.stages
        plans: dict[str, RetryPlan] = {}
        if retry_missing and ("explore" in stages or "judge" in stages):
            plans = plan_retries(
                folder, tasks, rubrics="explore" in stages, verdicts="judge" in stages
            )
            for redo_rubric in (True, False):
                folder.forget(
                    {i for i, p in plans.items() if p.redo_rubric == redo_rubric},
                    rubrics=redo_rubric,
                )
            for iid, plan in plans.items():
                for name in plan.redo_artifacts:  # a failed artifact is written again
                    where = get_spec(name).folder
                    status = folder.artifact_status(where, iid)
                    if status is not None and status.status != "ok":
                        folder.artifact_status_path(where, iid).unlink()
        explore_only = "judge" not in stages
        if "judge" in stages:
            done = folder.progress()
            todo = [t for t in tasks if t.instance_id not in done]
            if "explore" not in stages:
                _refuse_unexplored(folder, config, todo)
            for t in tasks:
                if t.instance_id in done and self.hook:
                    self.hook("skipped", t.instance_id, {"missing": 0})
        elif "explore" in stages:
            todo = [t for t in tasks if not _explored(folder, config, t.instance_id)]
        else:
            todo = []
        if todo:
            # the budget covers the whole run: what earlier processes spent counts
            spent = read_spending(folder.spend_path).budget_charge
            await run_tasks(
                todo,
                config,
                folder,
                self.api_key,
                explore_only=explore_only,
                hook=self.hook,
                spent_before=spent,
                plans=plans,
            )
        if "report" not in stages:
            return None
        labels = from_tasks(tasks, f"tasks file {self.tasks_file}")
        return write_report(folder, labels=labels)


def write_report(
    folder: RunFolder,
    tasks: list[Task] | None = None,
    *,
    labels: Labels | None = None,
    seed: int | None = None,
    selectors: list[str] | None = None,
    expected: tuple[str, list[str]] | None = None,
) -> Report:
    """Build report.json, report.md, scores.jsonl and selections.jsonl from the run folder.

    Labels come from ``labels``, else from ``tasks``, else from the run's own tasks file (see
    :mod:`agentic_rubrics.datasets.labels`); ``seed`` and ``selectors`` default to the recorded ones.
    ``expected``: a tasks file's name and its task ids; those the folder has not scored yet (a run
    stopped before them) are a warning, or a failure when it has scored none of them.
    """
    from agentic_rubrics.report.build import build_report_and_results
    from agentic_rubrics.report.markdown import render_markdown
    from agentic_rubrics.report.scores import score_rows
    from agentic_rubrics.report.selection import write_selections

    if labels is None and tasks is not None:
        labels = from_tasks(tasks, "the tasks given")
    report, results = build_report_and_results(
        folder, labels=labels, seed=seed, selectors=selectors
    )
    report.problems = diagnose(report)
    if expected is not None:
        unscored(expected, {r.instance_id for r in results}, report.problems)
    draw = folder.recorded().config.plots
    plots = []
    if draw:
        from agentic_rubrics.report.plots import write_plots

        plots = write_plots(folder.root, report, results)
    report.plots = [path for _, path in plots]
    atomic_write_json(folder.report_json, report.to_json())
    atomic_write_text(folder.report_md, render_markdown(report, plots))
    atomic_write_text(
        folder.scores_path,
        "".join(json.dumps(r.to_json(), sort_keys=True) + "\n" for r in score_rows(results)),
    )
    write_selections(folder, report, results)
    return report


def report_folder(
    out: Path | str,
    *,
    tasks_file: Path | str | None = None,
    labels_file: Path | str | None = None,
    seed: int | None = None,
    selectors: list[Any] | None = None,
) -> Report:
    """The ``report`` command: recompute every report file of a run folder, nothing rerun.

    Labels are read now: from ``labels_file``, else ``tasks_file``, else the run's own tasks file if it
    is still there, else those recorded in the folder. A tasks file whose patches, candidates or
    issue texts differ from what the folder scored is refused.
    """
    out = Path(out)
    tasks_file = Path(tasks_file) if tasks_file is not None else None
    labels_file = Path(labels_file) if labels_file is not None else None
    folder = RunFolder(out)
    folder.config()  # not a run folder: say so first
    if selectors is not None:  # a selector object or function given in Python: by its name
        from agentic_rubrics.rank.selectors import register_selector

        selectors = [s if isinstance(s, str) else register_selector(s) for s in selectors]
    with folder_lock(folder.root):
        return _report_locked(folder, out, tasks_file, labels_file, seed, selectors)


def _report_locked(
    folder: RunFolder,
    out: Path,
    tasks_file: Path | None,
    labels_file: Path | None,
    seed: int | None,
    selectors: list[str] | None,
) -> Report:
    labels = load_labels(labels_file) if labels_file is not None else None
    tasks_file = tasks_file or recorded_tasks_file(folder)
    expected = None
    if tasks_file is not None:
        tasks = load_tasks(tasks_file)
        expected = (str(tasks_file), [t.instance_id for t in tasks])
        refuse_changed(
            changed_tasks(folder, tasks),
            remedy=f"Run `agentic-rubrics run --tasks {tasks_file} --out {out} --redo-changed` to"
            " redo them, or report with the tasks file the run was made with.",
        )
        labels = labels or from_tasks(tasks, f"tasks file {tasks_file}")
    return write_report(
        folder,
        labels=labels or recorded_labels(folder),
        seed=seed,
        selectors=selectors,
        expected=expected,
    )


def run(
    tasks_file: Path | str,
    out: Path | str,
    config: RunConfig | None = None,
    *,
    restart: bool = False,
    stages: tuple[str, ...] = ("explore", "judge", "report"),
    hook: ProgressHook | None = None,
    api_key: str | None = None,
    redo_changed: bool = False,
    retry_missing: bool = True,
) -> Report | None:
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
            redo_changed=redo_changed,
            retry_missing=retry_missing,
        )
    )


def _warn_unpriced(config: RunConfig) -> None:
    """A budget over a model with no price is kept by estimates: say so, and how, before any call."""
    from agentic_rubrics.llm.price import prices

    seen: set[str] = set()
    for model in (config.explorer.model, config.judge.model):
        if model is None or model.model in seen:
            continue
        seen.add(model.model)
        if prices(model) is None:
            log.warning(
                "--max-cost $%.4f: %s has no price (litellm does not know it and the configuration"
                " sets none), so the cost of its calls is unknown; the budget charges each call"
                " an estimate of $%.2f per million tokens (prompt and answer, from the provider's"
                " counts or the text's length), reported apart from measured dollars. Set"
                " input_cost_per_token and output_cost_per_token in the model's settings to price it",
                config.max_cost_usd,
                model.model,
                model.unpriced_usd_per_mtok,
            )


def _explored(folder: RunFolder, config: RunConfig, instance_id: str) -> bool:
    """Whether every verifier's artifact of a task is written."""
    return all(
        folder.artifact_status_path(spec.folder, instance_id).exists()
        for spec in in_order(config.verifiers)
    )


def _refuse_unexplored(folder: RunFolder, config: RunConfig, tasks: list[Task]) -> None:
    """``judge`` alone writes no artifact that only ``explore`` writes (a rubric): a task without one
    is refused, unless that verifier's artifacts are given (``--rubrics DIR``)."""
    for spec in in_order(config.verifiers):
        section = config.verifier_settings.get(spec.name)
        if not spec.explore_first or (section is not None and section.given()):
            continue
        unexplored = [
            t.instance_id
            for t in tasks
            if not folder.artifact_status_path(spec.folder, t.instance_id).exists()
        ]
        if unexplored:
            raise ConfigError(
                f"{len(unexplored)} task(s) have no {spec.artifact} yet (e.g. {unexplored[0]});"
                f" run 'explore' first or pass {spec.given_option or 'its artifacts'}"
            )


def _check_folders(config: RunConfig, wanted: dict[str, Any]) -> None:
    """The folders a new run's verifiers reuse (``--rubrics``, ``--tests``, ``--proxies``): a typo is
    caught before any work (a resumed run recorded them, and its finished tasks need none)."""
    from agentic_rubrics.pipeline.verifiers import settings_class

    for spec in in_order(config.verifiers):
        fields = getattr(settings_class(spec), "model_fields", {})
        for key in (k for k in fields if k.endswith("_dir")):
            value = wanted.get(key)
            if isinstance(value, str) and not Path(value).is_dir():
                option = f"--{key.removesuffix('_dir')}"
                raise ConfigError(
                    f"{option} ({key}): {value} is not a folder (expected DIR/<instance_id>/...)"
                )
