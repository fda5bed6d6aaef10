"""How a command ends: its exit code, its error message, and the warnings and failures of its run.

Exit codes (also in the README):

- 0: the command did its job; warnings, if any, are printed at the end (one line per cause);
- 1: it ran, but a phase failed for everyone (every model request, every rubric, the primary selector
  everywhere); a paragraph says the cause and the fix;
- 2: nothing was done: bad input or configuration, a folder started with another configuration, a tasks
  file whose inputs changed since they were scored (`agentic-rubrics validate` also exits 1 on errors);
- 3: another process is writing to the run folder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from agentic_rubrics.runfolder.report import Problems, Report

EXIT_OK = 0
"""The command did its job (warnings, if any, are printed at the end)."""
EXIT_FAILED = 1
"""The run finished but a phase failed for everyone; the summary says why and what to do."""
EXIT_REFUSED = 2
"""Nothing was done: bad input or configuration, a folder started otherwise, changed inputs."""
EXIT_BUSY = 3
"""Another process is writing to the run folder."""


def failed(exc: Exception) -> typer.Exit:
    """Print an error and return the exit that goes with it."""
    from agentic_rubrics.exceptions import RunFolderBusy, WorkerStartError

    typer.echo(f"error: {exc}", err=True)
    if isinstance(exc, WorkerStartError):
        return typer.Exit(EXIT_FAILED)
    return typer.Exit(EXIT_BUSY if isinstance(exc, RunFolderBusy) else EXIT_REFUSED)


def finish(typed: Report) -> None:
    """The end of a command that made a report: the selection, the warnings, the failures."""
    selection = typed.selection
    typer.echo(
        f"selections.jsonl: written by the {selection.primary} selector — {selection.reason}",
        err=True,
    )
    finish_problems(typed.problems)


def finish_problems(problems: Problems) -> None:
    """Warnings, one line per cause; then the failures, and exit code 1 if there are any."""
    for line in problems.warnings:
        typer.echo(f"warning: {line}", err=True)
    for text in problems.fatal:
        typer.echo(f"error: {text}", err=True)
    if problems.fatal:
        raise typer.Exit(EXIT_FAILED)
