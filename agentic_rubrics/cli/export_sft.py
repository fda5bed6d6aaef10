"""``agentic-rubrics export-sft``: run folders as chat fine-tuning data (see
:mod:`agentic_rubrics.export.sft` and docs/training-data.md)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from agentic_rubrics.cli.exit import failed

_TASK = (
    "rubric: the rubric agent's trajectories; classifier: (issue, patch) -> YES/NO from labels;"
    " judge: (rubric item, patch) -> the judge's verdict."
)


def export_sft(
    runs: Annotated[list[Path], typer.Argument(help="Run folders to export.")],
    out: Annotated[Path, typer.Option("--out", help="The folder to write (JSONL, README.md).")],
    task: Annotated[str, typer.Option("--task", help=_TASK)] = "rubric",
    keep_thinking: Annotated[
        bool,
        typer.Option("--keep-thinking", help="Keep the models' thinking (removed by default)."),
    ] = False,
    min_auc: Annotated[
        float,
        typer.Option("--min-auc", help="Utility filter: keep tasks whose ROC-AUC of S is above."),
    ] = 0.5,
    utility: Annotated[
        bool, typer.Option("--utility/--no-utility", help="Apply the utility filter (with labels).")
    ] = True,
    require_utility: Annotated[
        bool, typer.Option("--require-utility", help="Leave out tasks of unmeasurable utility too.")
    ] = False,
    max_tokens: Annotated[
        int,
        typer.Option("--max-tokens", help="Longest example kept (estimated: chars / 4).", min=1),
    ] = 32_768,
    validation: Annotated[
        float, typer.Option("--validation", help="Share of examples held out, by repository.")
    ] = 0.1,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the repository split.")] = 0,
    labels: Annotated[
        Path | None,
        typer.Option("--labels", help="Labels file or tasks file (default: the run's)."),
    ] = None,
    tasks: Annotated[
        Path | None,
        typer.Option("--tasks", help="Tasks file with the issues (default: the run's)."),
    ] = None,
    force: Annotated[
        bool, typer.Option("--force", help="Write into a non-empty folder that is not an export.")
    ] = False,
) -> None:
    """Export run folders as fine-tuning JSONL (OpenAI chat format and Hugging Face messages),
    redacted, filtered, split by repository, with a data card (README.md)."""
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.export.sft import export_sft as export

    settings: dict[str, Any] = {"task": task, "keep_thinking": keep_thinking, "seed": seed}
    settings.update(force=force)
    settings.update(min_auc=min_auc if utility else None, require_utility=require_utility)
    settings.update(
        max_tokens=max_tokens, validation_fraction=validation, labels=labels, tasks=tasks
    )
    try:
        counts = export(runs, out, **settings).manifest["counts"]
    except AgenticRubricsError as exc:
        raise failed(exc) from exc
    dropped = ", ".join(f"{k} {v}" for k, v in counts["dropped"].items()) or "none"
    typer.echo(
        f"{out}: {counts['kept']} of {counts['read']} kept ({counts['train']} train,"
        f" {counts['validation']} validation); left out: {dropped}; card: {out / 'README.md'}"
    )
