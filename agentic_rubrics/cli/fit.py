"""``agentic-rubrics fit``: fusion weights fitted on labelled run folders (see :mod:`agentic_rubrics.report.fit`)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated

import typer

from agentic_rubrics.cli.exit import failed


def fit(
    runs: Annotated[
        list[Path], typer.Argument(help="Labelled run folders (labels from each run's tasks file).")
    ],
    out: Annotated[Path, typer.Option("--out", help="The weights file to write (JSON).")],
    signals: Annotated[
        str | None,
        typer.Option(
            "--signals",
            help="Comma-separated signals to weigh: selector names (rubric, self_consistency,"
            " patch_classifier, module:attribute) or content.<feature> (default: self-consistency,"
            " rubric S, the content features, and patch_classifier when every run has it).",
        ),
    ] = None,
    k: Annotated[int, typer.Option("--k", help="The Best@K the choice maximises.", min=1)] = 16,
    method: Annotated[
        str, typer.Option("--method", help="Per-task normalisation: rank, minmax or rrf.")
    ] = "rank",
    resamples: Annotated[
        int, typer.Option("--resamples", help="Bootstrap resamples of the intervals.", min=0)
    ] = 1000,
) -> None:
    """Fit fusion weights on labelled runs, with nested cross-validation; use them with
    --selectors fitted:FILE. Refuses too few labelled instances; warns when the fit's held-out
    interval does not beat self-consistency."""
    from agentic_rubrics.exceptions import AgenticRubricsError
    from agentic_rubrics.rank.fusion import METHODS
    from agentic_rubrics.report.fit import fit_runs

    if method not in METHODS:
        raise typer.BadParameter(f"--method must be one of {', '.join(METHODS)}")
    names = [x.strip() for x in signals.split(",") if x.strip()] if signals else None
    command = "agentic-rubrics " + " ".join(sys.argv[1:])
    try:
        result = fit_runs(
            runs, out, signals=names, k=k, method=method, resamples=resamples, command=command
        )
    except AgenticRubricsError as exc:
        raise failed(exc) from exc
    w = result.weights
    ev, key = w.evidence, f"best_at_{k}"
    fitted, base, diff = ev["fitted"], ev["self_consistency"], ev["difference"]
    typer.echo(
        f"{out}: {w.fitted_on['configuration']}; weights "
        + ", ".join(f"{s} {v:+.3g}" for s, v in w.fusion.weights.items())
    )
    typer.echo(
        f"held out ({ev['pools']} pools): Best@{k} {_pct(fitted[key], fitted[key + '_ci'])},"
        f" self-consistency {_pct(base[key], base[key + '_ci'])}, difference"
        f" {_pct(diff[key], diff['ci'], sign=True)}; ROC-AUC {_auc(fitted)} vs {_auc(base)}"
    )
    for warning in result.warnings:
        typer.echo(f"WARNING: {warning}", err=True)
    typer.echo(f"use it: --selectors fitted:{out}", err=True)


def _pct(value: float, ci: list[float] | None, sign: bool = False) -> str:
    fmt = "+.1f" if sign else ".1f"
    shown = f"{100 * value:{fmt}}"
    return shown + (f" [{100 * ci[0]:{fmt}}, {100 * ci[1]:{fmt}}]" if ci else "")


def _auc(figures: dict[str, object]) -> str:
    auc = figures.get("roc_auc")
    return "n/a" if not isinstance(auc, float) else f"{auc:.3f}"
