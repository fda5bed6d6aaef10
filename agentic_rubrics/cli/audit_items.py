"""``agentic-rubrics audit-items RUN``: every rubric item of a reported run over its task's pool (see
:mod:`agentic_rubrics.report.item_audit` and docs/reports.md)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from agentic_rubrics.cli.exit import EXIT_REFUSED, failed

FORMATS = ("table", "json")


def audit_items(
    run: Annotated[Path, typer.Argument(help="A reported run folder.")],
    format_: Annotated[
        str,
        typer.Option(
            "--format",
            help="table: the run's figures as text; json: audit_items.json's content.",
        ),
    ] = "table",
    items: Annotated[
        bool, typer.Option("--items", help="With --format table: one line per item too.")
    ] = False,
    top: Annotated[
        int,
        typer.Option(
            "--top", help="Items listed as passing most often for unresolved candidates.", min=0
        ),
    ] = 10,
) -> None:
    """Write RUN/audit_items.json: each rubric item's pass rate over its task's candidates, whether
    it passes or fails for all (non-discriminating), and how it separates resolved from unresolved
    candidates; print the run's figures by axis and check kind."""
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.report.item_audit import audit_items as audit
    from agentic_rubrics.report.item_audit import render_table

    if format_ not in FORMATS:
        typer.echo(f"error: --format {format_!r}: expected one of {', '.join(FORMATS)}", err=True)
        raise typer.Exit(EXIT_REFUSED)
    try:
        made = audit(run, top=top)
    except AgenticRubricsError as exc:
        raise failed(exc) from exc
    if format_ == "json":
        typer.echo(json.dumps(made.to_json(), indent=2, sort_keys=True, ensure_ascii=False))
    else:
        typer.echo(render_table(made, items=items), nl=False)
    typer.echo(f"{run / 'audit_items.json'}: written", err=True)
