"""``agentic-rubrics compare RUN``: every method of a reported run side by side, with the cost table
(see :mod:`agentic_rubrics.report.method_comparison` and docs/verifiers.md, "The comparison")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentic_rubrics.cli.exit import EXIT_REFUSED, failed

FORMATS = ("table", "json")


def compare(
    run: Annotated[Path, typer.Argument(help="A reported run folder.")],
    format_: Annotated[
        str,
        typer.Option(
            "--format", help="table: comparison.md's tables; json: comparison.json's content."
        ),
    ] = "table",
) -> None:
    """Write RUN/comparison.json and RUN/comparison.md: random, the oracle, self-consistency, the
    patch classifier, the rubric, the tests, similarity and the hybrid on the run's candidates —
    Best@K with its interval, ROC-AUC, coverage and the cost table (artifact $ and agent turns per
    task, grading $ or CPU-seconds per candidate, total at K=16) — from report.json and the
    artifacts' status files, nothing rerun; print the tables. A method the run did not measure says
    so."""
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.report.method_comparison import compare_methods
    from agentic_rubrics.report.method_comparison_md import render

    if format_ not in FORMATS:
        typer.echo(f"error: --format {format_!r}: expected one of {', '.join(FORMATS)}", err=True)
        raise typer.Exit(EXIT_REFUSED)
    try:
        made = compare_methods(run)
    except AgenticRubricsError as exc:
        raise failed(exc) from exc
    if format_ == "json":
        typer.echo(json.dumps(made.to_json(), indent=2, sort_keys=True, ensure_ascii=False))
    else:
        typer.echo(render(made), nl=False)
    typer.echo(f"{run / 'comparison.json'}, comparison.md: written", err=True)
