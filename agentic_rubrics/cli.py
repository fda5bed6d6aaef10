"""The ``agentic-rubrics`` command. Each command builds its configuration and calls one library function.

Heavy modules (litellm, swe-rex, matplotlib, scikit-learn) are imported inside the commands that
need them, so ``agentic-rubrics --help`` stays fast.
"""

from __future__ import annotations

import inspect
import json
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

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


@dataclass
class RunOptions:
    """The options shared by run, explore, judge and demo."""

    rubrics: Path | None = None
    config: Path | None = None
    explorer: str | None = None
    selectors: str | None = None
    seed: int | None = None
    restart: bool = False
    trajectories: bool = True
    quiet: bool = False
    model: str | None = None
    judge_model: str | None = None
    explorer_model: str | None = None
    api_base: str | None = None
    api_key: str | None = None
    repeats: int | None = None
    items_per_call: int | None = None
    max_cost: float | None = None
    llm_concurrency: int | None = None
    llm_processes: int | None = None
    timeout: float | None = None
    sandbox: str | None = None
    unsafe_local_sandbox: bool = False
    max_turns: int | None = None
    executor: str | None = None
    ray_address: str | None = None
    workers: int | None = None

    def overrides(self) -> dict[str, Any]:
        """Nested settings for :func:`agentic_rubrics.config.load_config` (``None`` = unset)."""

        def llm(model: str | None) -> dict[str, Any] | None:
            if model is None:
                return None
            return {
                "model": model,
                "api_base": self.api_base,
                "concurrency": self.llm_concurrency,
                "processes": self.llm_processes,
                "timeout": self.timeout,
            }

        judge_model = self.judge_model or self.model
        return {
            "rubrics_dir": str(self.rubrics) if self.rubrics else None,
            "explorer": {
                "kind": self.explorer,
                "model": llm(self.explorer_model or self.model)
                if (self.explorer or "static") != "static" or self.explorer_model
                else None,
                "sandbox": {"type": self.sandbox} if self.sandbox else None,
                "allow_unisolated": True if self.unsafe_local_sandbox else None,
                "max_turns": self.max_turns,
            },
            "judge": {
                "kind": "llm" if judge_model else None,
                "model": llm(judge_model),
                "repeats": self.repeats,
                "items_per_call": self.items_per_call,
            },
            "selectors": [x.strip() for x in self.selectors.split(",") if x.strip()]
            if self.selectors
            else None,
            "seed": self.seed,
            "max_cost_usd": self.max_cost,
            "executor": self.executor,
            "ray_address": self.ray_address,
            "workers": self.workers,
            "trajectories": None if self.trajectories else False,
        }


def _options(
    rubrics: Annotated[
        Path | None, typer.Option("--rubrics", help="Reuse DIR/<instance_id>/rubrics.yaml.")
    ] = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="YAML file of run settings.")
    ] = None,
    explorer: Annotated[
        str | None,
        typer.Option(
            "--explorer",
            help="static (rules, no model), agent (a model in a sandbox) or issue-only.",
        ),
    ] = None,
    selectors: Annotated[
        str | None,
        typer.Option(
            "--selectors", help="Comma-separated selectors; the first writes selections.jsonl."
        ),
    ] = None,
    seed: Annotated[
        int | None, typer.Option("--seed", help="Tie-break, shuffle and bootstrap seed.")
    ] = None,
    restart: Annotated[
        bool, typer.Option("--restart", help="Discard the folder's results instead of resuming.")
    ] = False,
    trajectories: Annotated[
        bool,
        typer.Option("--trajectories/--no-trajectories", help="Write exploration trajectories."),
    ] = True,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the report.")] = False,
    model: Annotated[
        str | None,
        typer.Option("--model", help="litellm model string for the judge and the explorer."),
    ] = None,
    judge_model: Annotated[
        str | None, typer.Option("--judge-model", help="Judge model (overrides --model).")
    ] = None,
    explorer_model: Annotated[
        str | None, typer.Option("--explorer-model", help="Explorer model (overrides --model).")
    ] = None,
    api_base: Annotated[
        str | None,
        typer.Option("--api-base", help="OpenAI-compatible server URL (vLLM, Ollama, a proxy)."),
    ] = None,
    api_key: Annotated[
        str | None,
        typer.Option(
            "--api-key",
            envvar="AGENTIC_RUBRICS_API_KEY",
            help="API key (never written anywhere).",
            show_default=False,
        ),
    ] = None,
    repeats: Annotated[
        int | None,
        typer.Option("--repeats", help="Judge each candidate R times; majority verdict."),
    ] = None,
    items_per_call: Annotated[
        int | None, typer.Option("--items-per-call", help="Items per judge call (0: all, 1: one).")
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option("--max-cost", help="Stop starting model calls after this many dollars."),
    ] = None,
    llm_concurrency: Annotated[
        int | None, typer.Option("--llm-concurrency", help="Model calls in flight at once.")
    ] = None,
    llm_processes: Annotated[
        int | None, typer.Option("--llm-processes", help="Run litellm in N worker processes.")
    ] = None,
    timeout: Annotated[
        float | None, typer.Option("--timeout", help="Seconds per model call.")
    ] = None,
    sandbox: Annotated[
        str | None,
        typer.Option(
            "--sandbox",
            help="auto, bubblewrap, local-copy, swerex-local, swerex-docker or swerex-modal"
            " (swerex-remote: through --config).",
        ),
    ] = None,
    unsafe_local_sandbox: Annotated[
        bool,
        typer.Option("--unsafe-local-sandbox", help="Let a model's commands run unisolated here."),
    ] = False,
    max_turns: Annotated[
        int | None, typer.Option("--max-turns", help="The agent explorer's turn budget.")
    ] = None,
    executor: Annotated[
        str | None, typer.Option("--executor", help="local (this process) or ray (needs [ray]).")
    ] = None,
    ray_address: Annotated[
        str | None,
        typer.Option("--ray-address", help="Ray cluster to join (default: a local one)."),
    ] = None,
    workers: Annotated[
        int | None, typer.Option("--workers", help="Ray tasks in flight at once.")
    ] = None,
) -> RunOptions:
    return RunOptions(**locals())


def _run_stages(stages: tuple[str, ...], tasks: Path, out: Path, opts: RunOptions) -> None:
    from agentic_rubrics.config import load_config
    from agentic_rubrics.data import load_tasks
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.pipeline import run
    from agentic_rubrics.progress import RunProgress

    try:
        cfg = load_config(opts.config, opts.overrides())
        total = len(load_tasks(tasks))
        with RunProgress(total, title=" + ".join(s for s in stages if s != "report")) as progress:
            report = run(
                tasks,
                out,
                cfg,
                restart=opts.restart,
                stages=stages,
                api_key=opts.api_key,
                hook=progress,
            )
    except AgenticRubricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    if report is not None and not opts.quiet:
        typer.echo((out / "report.md").read_text(encoding="utf-8"), nl=False)
    typer.echo(f"run folder: {out}", err=True)


TasksOpt = Annotated[Path, typer.Option("--tasks", help="Tasks JSONL file (one task per line).")]
OutOpt = Annotated[Path, typer.Option("--out", help="Run folder (created, or resumed).")]


def _command(stages: tuple[str, ...], doc: str) -> Any:
    def command(tasks: TasksOpt, out: OutOpt, **kwargs: Any) -> None:
        _run_stages(stages, tasks, out, _options(**kwargs))

    _copy_signature(command, _options, ["tasks", "out"])
    command.__doc__ = doc
    return command


def _copy_signature(target: Any, source: Any, leading: list[str]) -> None:
    """Give ``target`` the parameters of ``source`` after its own leading ones (typer reads them).

    Annotations are resolved here, since this module's annotations are strings.
    """
    hints = {
        **typing.get_type_hints(source, include_extras=True),
        **typing.get_type_hints(target, include_extras=True),
    }
    own = inspect.signature(target).parameters
    params = [own[name] for name in leading] + list(inspect.signature(source).parameters.values())
    params = [p.replace(annotation=hints.get(p.name, p.annotation)) for p in params]
    target.__signature__ = inspect.Signature(params)
    target.__annotations__ = {p.name: p.annotation for p in params}


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


@app.command("import-swebench")
def import_swebench(
    out: Annotated[Path, typer.Option("--out", help="The tasks JSONL file to write.")],
    candidates: Annotated[
        Path | None,
        typer.Option(
            "--candidates", help="Combined file: one record per instance with candidates."
        ),
    ] = None,
    dataset: Annotated[
        Path | None,
        typer.Option("--dataset", help="SWE-bench rows (JSON, JSONL, or a datasets export)."),
    ] = None,
    predictions: Annotated[
        list[Path] | None,
        typer.Option("--predictions", help="A run's predictions; repeat for several runs."),
    ] = None,
    reports: Annotated[
        list[Path] | None,
        typer.Option(
            "--report", help="The harness report of the run at the same position (labels)."
        ),
    ] = None,
    all_candidates: Annotated[
        bool,
        typer.Option("--all-candidates", help="Keep resolved-only sources too (biased pools)."),
    ] = False,
    min_candidates: Annotated[int, typer.Option("--min-candidates")] = 2,
    dedup: Annotated[
        bool, typer.Option("--dedup", help="One candidate per distinct patch.")
    ] = False,
    cap_per_source: Annotated[int | None, typer.Option("--cap-per-source")] = None,
) -> None:
    """Turn SWE-bench files into a tasks JSONL file for run/explore/judge."""
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.swebench import (
        PoolOptions,
        load_candidates_file,
        pool_from_runs,
        write_tasks,
    )

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
            paired = list(predictions)
            labels = list(reports or [])
            if labels and len(labels) != len(paired):
                raise typer.BadParameter("give one --report per --predictions, in the same order")
            pool = pool_from_runs(
                dataset, [(p, labels[i] if labels else None) for i, p in enumerate(paired)], options
            )
        else:
            raise typer.BadParameter("give --candidates, or --dataset with --predictions")
        write_tasks(pool, out)
    except AgenticRubricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    n = sum(len(t.candidates) for t in pool.tasks)
    labelled = sum(1 for t in pool.tasks for c in t.candidates if c.resolved is not None)
    typer.echo(
        f"{out}: {len(pool.tasks)} tasks, {n} candidates ({labelled} labelled); left out: {pool.dropped or 'none'}"
    )


@app.command()
def calibrate(
    fit: Annotated[Path, typer.Option("--fit", help="Run folder to fit S -> P(resolved) on.")],
    apply: Annotated[Path, typer.Option("--apply", help="Run folder to apply it to.")],
    out: Annotated[
        Path | None, typer.Option("--out", help="Where calibration.json and reliability.png go.")
    ] = None,
) -> None:
    """Fit an isotonic calibration of S on one run and apply it to another (reliability diagram)."""
    from agentic_rubrics.calibration import calibrate as run_calibration
    from agentic_rubrics.exceptions import AgenticRubricsError

    try:
        result = run_calibration(fit, apply, out)
    except AgenticRubricsError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    target = out or apply / "calibration"
    b, e = result["brier"], result["ece"]
    typer.echo(
        f"{target}: {result['candidates']} candidates; Brier {b['s_as_probability']:.4f} -> "
        f"{b['calibrated']:.4f}, ECE {e['s_as_probability']:.4f} -> {e['calibrated']:.4f}"
    )


@app.command()
def report(
    out: OutOpt,
    tasks: Annotated[
        Path | None, typer.Option("--tasks", help="Also rewrite selections.jsonl from these tasks.")
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print the report.")] = False,
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


def _demo(
    out: Annotated[
        Path | None, typer.Option("--out", help="Run folder (default: a new one under ./runs).")
    ] = None,
    **kwargs: Any,
) -> None:
    """`run` on the bundled example tasks, into a fresh folder under the current directory."""
    import time

    from agentic_rubrics.bundled import write_tasks_jsonl
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
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from exc
    _run_stages(("explore", "judge", "report"), tasks, out, _options(**kwargs))


_copy_signature(_demo, _options, ["out"])
app.command("demo")(_demo)


def main() -> None:
    """Console-script entry point."""
    app()


if __name__ == "__main__":
    main()
