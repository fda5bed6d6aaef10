"""``import-swebench``'s helpers: runs from its repeated options, and what it says it wrote."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import typer

if TYPE_CHECKING:
    from agentic_rubrics.datasets.swebench import Pool


def runs(
    predictions: list[Path], reports: list[Path] | None, sources: list[str] | None
) -> list[tuple[Path, Path | None, str | None]]:
    """Each run's predictions with the report and the name at the same position."""
    labels, names = list(reports or []), list(sources or [])
    if labels and len(labels) != len(predictions):
        raise typer.BadParameter("give one --report per --predictions, in the same order")
    if names and len(names) != len(predictions):
        raise typer.BadParameter("give one --source per --predictions, in the same order")
    return [
        (p, labels[i] if labels else None, names[i] if names else None)
        for i, p in enumerate(predictions)
    ]


def pool_summary(out: Path, pool: Pool) -> list[str]:
    """What import-swebench wrote and what it left out (and why)."""
    n = sum(len(t.candidates) for t in pool.tasks)
    labelled = sum(1 for t in pool.tasks for c in t.candidates if c.resolved is not None)
    lines = [
        f"{out}: {len(pool.tasks)} tasks, {n} candidates ({labelled} labelled); left out: {pool.dropped or 'none'}"
    ]
    if pool.unresolved_reasons:
        why = ", ".join(f"{k} {v}" for k, v in pool.unresolved_reasons.items())
        lines.append(f"unresolved candidates by reason: {why}")
    if pool.unknown_instances:
        shown = ", ".join(pool.unknown_instances[:20])
        more = len(pool.unknown_instances) - 20
        lines.append(
            f"left out {len(pool.unknown_instances)} instance id(s) that are not in the dataset: {shown}"
            + (f" and {more} more" if more > 0 else "")
        )
    return lines
