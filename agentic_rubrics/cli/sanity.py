"""``agentic-rubrics sanity``: the gaming suite (see :mod:`agentic_rubrics.gaming.suite`)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentic_rubrics.cli.exit import EXIT_FAILED, failed, finish_problems
from agentic_rubrics.cli.options import RunOptions, with_run_options

TasksOpt = Annotated[
    Path,
    typer.Option(
        "--tasks", help="Tasks JSONL file with labels (resolved) for the candidates of each task."
    ),
]
OutOpt = Annotated[
    Path,
    typer.Option(
        "--out",
        help="Folder of the suite: sanity.json, sanity.md and the run folder run/ (created, or"
        " resumed).",
    ),
]
KindsOpt = Annotated[
    str | None,
    typer.Option(
        "--kinds",
        help="Comma-separated attack kinds (default: all): noop, keywords, stealth, conftest,"
        " agentdir_conftest, skip_all, empty, comment_only, test_deletion, docstring,"
        " dead_branch, reformat, dead_store.",
    ),
]
GuardedOpt = Annotated[
    str | None,
    typer.Option(
        "--guarded",
        help="Comma-separated selectors and rewards --fail-on-win checks (default: those of"
        " rubric, tests, hybrid, offline_content, reward_checks the run measures).",
    ),
]
FailOpt = Annotated[
    bool,
    typer.Option(
        "--fail-on-win",
        help="Exit 1 when an attack ranks at least as high as the best resolved candidate on a"
        " task under a guarded selector or reward.",
    ),
]


def _names(value: str | None) -> list[str] | None:
    return [x.strip() for x in value.split(",") if x.strip()] if value else None


def _sanity(
    tasks: TasksOpt,
    out: OutOpt,
    kinds: KindsOpt = None,
    guarded: GuardedOpt = None,
    fail_on_win: FailOpt = False,
    **kwargs: Any,
) -> None:
    """Add non-fixing candidates (attacks) to each task, run the pipeline and the reward, and count
    on how many tasks each attack ranks at least as high as the best resolved candidate."""
    from agentic_rubrics.cli.progress import RunProgress
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.gaming.record import table
    from agentic_rubrics.gaming.suite import measure, prepare
    from agentic_rubrics.pipeline.config import load_config

    opts = RunOptions(**kwargs)
    try:
        cfg = load_config(opts.config, opts.overrides())
        plan = prepare(tasks, out, cfg, kinds=_names(kinds), guarded=_names(guarded))
        with RunProgress(len(plan.copies), title="sanity: the tasks with an attack") as progress:
            report, made = measure(
                plan,
                api_key=opts.api_key,
                restart=opts.restart,
                redo_changed=opts.redo_changed,
                retry_missing=opts.retry_missing,
                hook=progress,
            )
    except AgenticRubricsError as exc:
        raise failed(exc) from exc
    typer.echo(table(report), nl=False)
    typer.echo(f"sanity.json, sanity.md: {out}", err=True)
    finish_problems(made.problems)
    won = report.guarded_wins()
    if fail_on_win and won:
        for kind, columns in won.items():
            typer.echo(f"error: the {kind} attack wins on {', '.join(columns)}", err=True)
        raise typer.Exit(EXIT_FAILED)


sanity = with_run_options(_sanity, ["tasks", "out", "kinds", "guarded", "fail_on_win"], "run")
