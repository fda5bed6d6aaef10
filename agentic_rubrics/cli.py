"""The ``agentic-rubrics`` command. Each command builds its configuration and calls one library function.

Heavy modules (litellm, swe-rex, matplotlib, scikit-learn) are imported inside the commands that
need them, so ``agentic-rubrics --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

if TYPE_CHECKING:
    from agentic_rubrics.pipeline import RunConfig

app = typer.Typer(
    name="agentic-rubrics",
    help="Pick the right patch out of K candidates without running them.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="rubrics.yaml files to check.")],
    strict: Annotated[bool, typer.Option(help="Treat lint warnings as errors.")] = False,
) -> None:
    """Check rubrics.yaml files: YAML, schema, checks (errors) and lint (warnings). Exit 1 on errors."""
    from agentic_rubrics.exceptions import RubricError
    from agentic_rubrics.rubric import load_rubric

    errors = warnings = 0
    for path in files:
        try:
            rubric, lint_problems = load_rubric(path)
        except RubricError as exc:
            for p in exc.problems:
                typer.echo(str(p))
            errors += len(exc.problems)
            continue
        for p in lint_problems:
            typer.echo(str(p))
        warnings += len(lint_problems)
        n = sum(1 for _ in rubric.items())
        typer.echo(f"{path}: ok ({n} items, {len(lint_problems)} warnings)")
    typer.echo(f"{len(files)} file(s): {errors} error(s), {warnings} warning(s)")
    if errors or (strict and warnings):
        raise typer.Exit(1)


@app.command()
def schema(
    out: Annotated[Path | None, typer.Option(help="Write to this file instead of stdout.")] = None,
) -> None:
    """Print the JSON Schema of rubrics.yaml (for editors' YAML language servers)."""
    from agentic_rubrics.data import atomic_write_text
    from agentic_rubrics.rubric import json_schema

    text = json.dumps(json_schema(), indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        atomic_write_text(out, text)


# --------------------------------------------------------------------------- the main job

TasksOpt = Annotated[Path, typer.Option("--tasks", help="Tasks JSONL file (one task per line).")]
OutOpt = Annotated[Path, typer.Option("--out", help="Run folder (created, or resumed).")]
RubricsOpt = Annotated[
    Path | None, typer.Option("--rubrics", help="Reuse DIR/<instance_id>/rubrics.yaml.")
]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="YAML file of run settings.")]
ExplorerOpt = Annotated[
    str | None, typer.Option("--explorer", help="Explorer: static (rules over the repository).")
]
SelectorsOpt = Annotated[
    str | None,
    typer.Option(
        "--selectors", help="Comma-separated selectors; the first writes selections.jsonl."
    ),
]
SeedOpt = Annotated[int | None, typer.Option("--seed", help="Tie-break and bootstrap seed.")]
RestartOpt = Annotated[
    bool, typer.Option("--restart", help="Discard the folder's results instead of resuming.")
]
TrajOpt = Annotated[
    bool, typer.Option("--trajectories/--no-trajectories", help="Write exploration trajectories.")
]
QuietOpt = Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the report.")]


def _config(
    config: Path | None,
    rubrics: Path | None,
    explorer: str | None,
    selectors: str | None,
    seed: int | None,
    trajectories: bool,
) -> RunConfig:
    from agentic_rubrics.pipeline import load_config

    return load_config(
        config,
        rubrics_dir=str(rubrics) if rubrics else None,
        explorer__kind=explorer,
        selectors=[s.strip() for s in selectors.split(",") if s.strip()] if selectors else None,
        seed=seed,
        trajectories=None if trajectories else False,
    )


def _run_stages(
    stages: tuple[str, ...],
    tasks: Path,
    out: Path,
    rubrics: Path | None,
    config: Path | None,
    explorer: str | None,
    selectors: str | None,
    seed: int | None,
    restart: bool,
    trajectories: bool,
    quiet: bool,
) -> None:
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.pipeline import run

    try:
        cfg = _config(config, rubrics, explorer, selectors, seed, trajectories)
        report = run(tasks, out, cfg, restart=restart, stages=stages)
    except AgenticRubricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if report is not None and not quiet:
        typer.echo((out / "report.md").read_text(encoding="utf-8"), nl=False)
    typer.echo(f"run folder: {out}", err=True)


@app.command()
def run(
    tasks: TasksOpt,
    out: OutOpt,
    rubrics: RubricsOpt = None,
    config: ConfigOpt = None,
    explorer: ExplorerOpt = None,
    selectors: SelectorsOpt = None,
    seed: SeedOpt = None,
    restart: RestartOpt = False,
    trajectories: TrajOpt = True,
    quiet: QuietOpt = False,
) -> None:
    """All stages: explore (or reuse rubrics), judge every candidate, rerank, report."""
    _run_stages(
        ("explore", "judge", "report"),
        tasks, out, rubrics, config, explorer, selectors, seed, restart, trajectories, quiet,
    )  # fmt: skip


@app.command()
def explore(
    tasks: TasksOpt,
    out: OutOpt,
    rubrics: RubricsOpt = None,
    config: ConfigOpt = None,
    explorer: ExplorerOpt = None,
    selectors: SelectorsOpt = None,
    seed: SeedOpt = None,
    restart: RestartOpt = False,
    trajectories: TrajOpt = True,
) -> None:
    """Only write the rubrics (rubrics/<instance_id>/rubrics.yaml)."""
    _run_stages(
        ("explore",),
        tasks, out, rubrics, config, explorer, selectors, seed, restart, trajectories, True,
    )  # fmt: skip


@app.command()
def judge(
    tasks: TasksOpt,
    out: OutOpt,
    rubrics: RubricsOpt = None,
    config: ConfigOpt = None,
    explorer: ExplorerOpt = None,
    selectors: SelectorsOpt = None,
    seed: SeedOpt = None,
    trajectories: TrajOpt = True,
) -> None:
    """Only judge every candidate against the rubrics already in the run folder (or --rubrics)."""
    _run_stages(
        ("judge",),
        tasks, out, rubrics, config, explorer, selectors, seed, False, trajectories, True,
    )  # fmt: skip


@app.command()
def report(
    out: OutOpt,
    tasks: Annotated[
        Path | None, typer.Option("--tasks", help="Also rewrite selections.jsonl from these tasks.")
    ] = None,
    quiet: QuietOpt = False,
) -> None:
    """Recompute report.json and report.md from a run folder's files."""
    from agentic_rubrics.data import RunFolder, load_tasks
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.pipeline import write_report

    try:
        write_report(RunFolder(out), load_tasks(tasks) if tasks else None)
    except AgenticRubricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if not quiet:
        typer.echo((out / "report.md").read_text(encoding="utf-8"), nl=False)


@app.command()
def demo(
    out: Annotated[
        Path | None, typer.Option("--out", help="Run folder (default: a new one under ./runs).")
    ] = None,
    rubrics: RubricsOpt = None,
    config: ConfigOpt = None,
    explorer: ExplorerOpt = None,
    selectors: SelectorsOpt = None,
    seed: SeedOpt = None,
    restart: RestartOpt = False,
    trajectories: TrajOpt = True,
    quiet: QuietOpt = False,
) -> None:
    """`run` on the bundled example tasks, into a fresh folder under the current directory."""
    import time

    from agentic_rubrics.bundled import write_tasks_jsonl

    if out is None:
        out = Path("runs") / time.strftime("demo-%Y%m%d-%H%M%S")
        n = 1
        while out.exists():
            out = Path("runs") / time.strftime(f"demo-%Y%m%d-%H%M%S-{n}")
            n += 1
    from agentic_rubrics.exceptions import AgenticRubricsError

    try:
        tasks = write_tasks_jsonl(out / "demo_tasks.jsonl")
    except AgenticRubricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    _run_stages(
        ("explore", "judge", "report"),
        tasks, out, rubrics, config, explorer, selectors, seed, restart, trajectories, quiet,
    )  # fmt: skip


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
