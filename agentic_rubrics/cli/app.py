"""The ``agentic-rubrics`` command. Each command builds its configuration and calls one library function.

Heavy modules (litellm, swe-rex, matplotlib, scikit-learn) are imported inside the commands that
need them, so ``agentic-rubrics --help`` stays fast.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from agentic_rubrics.cli.audit_items import audit_items as _audit_items
from agentic_rubrics.cli.compare import compare as _compare
from agentic_rubrics.cli.docker import build_env as _build_env
from agentic_rubrics.cli.docker import clean_containers as _clean_containers
from agentic_rubrics.cli.envcheck import env_check as _env_check
from agentic_rubrics.cli.exit import failed as _failed
from agentic_rubrics.cli.exit import finish as _finish
from agentic_rubrics.cli.exit import finish_problems as _finish_problems
from agentic_rubrics.cli.export_sft import export_sft as _export_sft
from agentic_rubrics.cli.fit import fit as _fit
from agentic_rubrics.cli.options import RunOptions, with_run_options
from agentic_rubrics.cli.reward import serve_reward as _serve_reward
from agentic_rubrics.cli.sanity import sanity as _sanity
from agentic_rubrics.cli.swebench_import import pool_summary, runs
from agentic_rubrics.cli.view import view as _view

if TYPE_CHECKING:
    pass

app = typer.Typer(
    name="agentic-rubrics",
    help="Pick the right patch out of K candidates without running them.",
    no_args_is_help=True,
    add_completion=False,
    # help as written: no rich markup ("[ray]" is text), flags shown without a value
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
)


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help="rubrics.yaml files to check.")],
    strict: Annotated[bool, typer.Option(help="Treat lint warnings as errors.")] = False,
) -> None:
    """Check rubrics.yaml files: YAML, schema, checks (errors) and lint (warnings). Exit 1 on errors."""
    from agentic_rubrics.exceptions import RubricError
    from agentic_rubrics.rubric.file import load_rubric

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
        typer.echo(f"{path}: ok ({len(list(rubric.items()))} items, {len(lint_problems)} warnings)")
    typer.echo(f"{len(files)} file(s): {errors} error(s), {warnings} warning(s)")
    if errors or (strict and warnings):
        raise typer.Exit(1)


@app.command()
def schema(
    out: Annotated[Path | None, typer.Option(help="Write to this file instead of stdout.")] = None,
    run_folder: Annotated[
        bool,
        typer.Option(
            "--run-folder", help="The run folder's task record instead, with its schema version."
        ),
    ] = False,
) -> None:
    """Print the JSON Schema of rubrics.yaml (for editors' YAML language servers)."""
    from agentic_rubrics.rubric.file import json_schema
    from agentic_rubrics.runfolder.files import atomic_write_text
    from agentic_rubrics.runfolder.records import run_folder_schema

    text = json.dumps(run_folder_schema() if run_folder else json_schema(), indent=2) + "\n"
    if out is None:
        typer.echo(text, nl=False)
    else:
        atomic_write_text(out, text)


# --------------------------------------------------------------------------- the main job


def _run_stages(stages: tuple[str, ...], tasks: Path, out: Path, opts: RunOptions) -> None:
    from agentic_rubrics.cli.progress import RunProgress
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.pipeline.config import load_config
    from agentic_rubrics.pipeline.runner import run
    from agentic_rubrics.runfolder.tasks import load_tasks

    try:
        cfg, loaded = load_config(opts.config, opts.overrides()), load_tasks(tasks)
        title = " + ".join(s for s in stages if s != "report")
        with RunProgress(len(loaded), title=title) as progress:
            report = run(
                tasks,
                out,
                cfg,
                restart=opts.restart,
                stages=stages,
                api_key=opts.api_key,
                hook=progress,
                redo_changed=opts.redo_changed,
                retry_missing=opts.retry_missing,
            )
    except AgenticRubricsError as exc:
        raise _failed(exc) from exc
    if report is not None and not opts.quiet:
        typer.echo((out / "report.md").read_text(encoding="utf-8"), nl=False)
    typer.echo(f"run folder: {out}", err=True)
    if report is not None:
        _finish(report)
    elif "explore" in stages:
        from agentic_rubrics.report.problems import explore_problems
        from agentic_rubrics.runfolder.folder import RunFolder

        folder = RunFolder(out)
        statuses = [folder.rubric_status(t.instance_id) for t in loaded]
        url = cfg.repos.model_dump()["url_template"] or "none"  # credentials removed
        _finish_problems(explore_problems([s for s in statuses if s is not None], url))


TasksOpt = Annotated[Path, typer.Option("--tasks", help="Tasks JSONL file (one task per line).")]
OutOpt = Annotated[Path, typer.Option("--out", help="Run folder (created, or resumed).")]


def _command(stages: tuple[str, ...], doc: str) -> Any:
    def command(tasks: TasksOpt, out: OutOpt, **kwargs: Any) -> None:
        _run_stages(stages, tasks, out, RunOptions(**kwargs))

    command.__doc__ = doc
    name = stages[0] if len(stages) == 1 else "run"
    return with_run_options(command, ["tasks", "out"], name)


app.command("run")(
    _command(
        ("explore", "judge", "report"),
        "All stages: explore (or reuse rubrics), judge every candidate, rerank, report.",
    )
)
app.command("explore")(
    _command(("explore",), "Only write the rubrics (rubrics/<instance_id>/rubrics.yaml).")
)
app.command("judge")(
    _command(
        ("judge",),
        "Only judge every candidate against the rubrics already in the run folder (or --rubrics).",
    )
)


ImportOut = Annotated[Path, typer.Option("--out", help="The tasks JSONL file to write.")]
CandidatesOpt = Annotated[
    Path | None,
    typer.Option("--candidates", help="Combined file: one record per instance with candidates."),
]
DatasetOpt = Annotated[
    Path | None,
    typer.Option("--dataset", help="SWE-bench rows (JSON, JSONL, or a datasets export)."),
]
PredictionsOpt = Annotated[
    list[Path] | None,
    typer.Option("--predictions", help="A run's predictions; repeat for several runs."),
]
ReportsOpt = Annotated[
    list[Path] | None,
    typer.Option(
        "--report",
        help="The harness output of the run at the same position (labels): a run report, an"
        " older results.json, or a folder of per-instance logs.",
    ),
]
SourcesOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--source",
        help="A name for the run at the same position (default: its model_name_or_path).",
    ),
]
AllCandidatesOpt = Annotated[
    bool, typer.Option("--all-candidates", help="Keep resolved-only sources too (biased pools).")
]
MinCandidatesOpt = Annotated[
    int, typer.Option("--min-candidates", help="Leave out instances with fewer candidates.")
]
DedupOpt = Annotated[bool, typer.Option("--dedup", help="One candidate per distinct patch.")]
CapOpt = Annotated[
    int | None, typer.Option("--cap-per-source", help="At most this many candidates per source.")
]


@app.command("import-swebench")
def import_swebench(
    out: ImportOut,
    candidates: CandidatesOpt = None,
    dataset: DatasetOpt = None,
    predictions: PredictionsOpt = None,
    reports: ReportsOpt = None,
    sources: SourcesOpt = None,
    all_candidates: AllCandidatesOpt = False,
    min_candidates: MinCandidatesOpt = 2,
    dedup: DedupOpt = False,
    cap_per_source: CapOpt = None,
) -> None:
    """Turn SWE-bench files into a tasks JSONL file for run/explore/judge."""
    from agentic_rubrics.datasets.swebench import (
        PoolOptions,
        load_candidates_file,
        pool_from_runs,
        write_tasks,
    )
    from agentic_rubrics.exceptions import AgenticRubricsError, DataError

    options = PoolOptions(
        full_run_only=not all_candidates,
        min_candidates=min_candidates,
        dedup=dedup,
        cap_per_source=cap_per_source,
    )
    try:
        if candidates is not None:
            pool = load_candidates_file(candidates, options)
        elif dataset is not None and predictions:
            pool = pool_from_runs(dataset, runs(predictions, reports, sources), options)
        else:
            raise typer.BadParameter("give --candidates, or --dataset with --predictions")
        if not pool.tasks:  # nothing to write: say what was left out, and why
            left = ", ".join(f"{k}: {v}" for k, v in sorted(pool.dropped.items())) or "none"
            raise DataError(f"no task to write to {out} (instances left out, by reason: {left})")
        write_tasks(pool, out)
    except AgenticRubricsError as exc:
        raise _failed(exc) from exc
    for line in pool_summary(out, pool):
        typer.echo(line)


@app.command()
def calibrate(
    fit: Annotated[Path, typer.Option("--fit", help="Run folder to fit S -> P(resolved) on.")],
    apply: Annotated[Path, typer.Option("--apply", help="Run folder to apply it to.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Where calibration.json and reliability.png go.")
    ] = None,
    allow_overlap: Annotated[
        bool,
        typer.Option(
            "--allow-overlap", help="Go on when the two runs share instances (flattering numbers)."
        ),
    ] = False,
) -> None:
    """Fit an isotonic calibration of S on one run and apply it to another (reliability diagram)."""
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.report.calibration import calibrate as run_calibration

    try:
        result = run_calibration(fit, apply, out, allow_overlap=allow_overlap)
    except AgenticRubricsError as exc:
        raise _failed(exc) from exc
    target = out or apply / "calibration"
    b, e = result["brier"], result["ece"]
    typer.echo(
        f"{target}: {result['candidates']} candidates; Brier {b['s_as_probability']:.4f} -> "
        f"{b['calibrated']:.4f}, ECE {e['s_as_probability']:.4f} -> {e['calibrated']:.4f}"
    )
    if result.get("shared_instances"):
        typer.echo(
            f"WARNING: fitted and applied on {result['shared_instances']} shared instance(s)"
            " (--allow-overlap): these Brier and ECE figures are in-sample and flatter the calibration",
            err=True,
        )


ReportOut = Annotated[
    Path,
    typer.Option(
        "--out", help="The run folder to report on (it must exist; nothing is written elsewhere)."
    ),
]


@app.command()
def report(
    out: ReportOut,
    tasks: Annotated[
        Path | None,
        typer.Option(
            "--tasks",
            help="Read labels from this tasks file (default: the run's own, if still there);"
            " refused if its patches or issues differ from what was scored.",
        ),
    ] = None,
    labels: Annotated[
        Path | None,
        typer.Option(
            "--labels",
            help="Read labels from this JSONL file ({instance_id, candidate_id, resolved} rows).",
        ),
    ] = None,
    seed: Annotated[
        int | None,
        typer.Option("--seed", help="Tie-break and bootstrap seed (default: the run's)."),
    ] = None,
    selectors: Annotated[
        str | None,
        typer.Option(
            "--selectors",
            help="Comma-separated selectors; the first writes selections.jsonl (default: the run's).",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the report.")] = False,
) -> None:
    """Recompute report.json, report.md, scores.jsonl and selections.jsonl from a run folder's files.

    Selection is a report-time computation: labels, seed and selectors can change here, nothing is rerun.
    """
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.pipeline.runner import report_folder

    names = [x.strip() for x in selectors.split(",") if x.strip()] if selectors else None
    try:
        made = report_folder(out, tasks_file=tasks, labels_file=labels, seed=seed, selectors=names)
    except AgenticRubricsError as exc:
        raise _failed(exc) from exc
    if not quiet:
        typer.echo((out / "report.md").read_text(encoding="utf-8"), nl=False)
    _finish(made)


def _demo(
    out: Annotated[
        Path | None, typer.Option("--out", help="Run folder (default: a new one under ./runs).")
    ] = None,
    **kwargs: Any,
) -> None:
    """`run` on the bundled example tasks, into a fresh folder under the current directory."""
    import time

    from agentic_rubrics.datasets.bundled import write_tasks_jsonl
    from agentic_rubrics.exceptions import AgenticRubricsError

    if out is None:
        out = Path("runs") / time.strftime("demo-%Y%m%d-%H%M%S")
        n = 1
        while out.exists():
            out = Path("runs") / time.strftime(f"demo-%Y%m%d-%H%M%S-{n}")
            n += 1
    try:
        tasks = write_tasks_jsonl(out / "demo_tasks.jsonl")
    except AgenticRubricsError as exc:
        raise _failed(exc) from exc
    _run_stages(("explore", "judge", "report"), tasks, out, RunOptions(**kwargs))


app.command("demo")(with_run_options(_demo, ["out"]))
app.command("fit")(_fit)
app.command("serve-reward")(_serve_reward)
app.command("sanity")(_sanity)
app.command("export-sft")(_export_sft)
app.command("view")(_view)
app.command("audit-items")(_audit_items)
app.command("compare")(_compare)
app.command("env-check")(_env_check)
app.command("build-env")(_build_env)
app.command("clean-containers")(_clean_containers)


def main() -> None:
    """Console-script entry point. A path the command cannot read or write (a folder given for a
    file, a file for a folder, no permission) ends it with ``error:`` naming the path and exit 2,
    not a traceback."""
    from agentic_rubrics.cli.exit import EXIT_REFUSED

    try:
        app()
    except OSError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise SystemExit(EXIT_REFUSED) from None


if __name__ == "__main__":
    main()
