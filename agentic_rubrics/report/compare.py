"""Selectors compared on the same tasks: paired differences in Best@K, and the gap each one closes.

- **Paired difference** of selector A against B at K: the mean over labelled tasks of
  ``Best@K(A) - Best@K(B)`` per task, with a 95% bootstrap interval over tasks whose resamples are the
  same for both (the report's resamples, so every interval of one report is paired), and the tasks
  where A's expected pick is better or worse. A difference whose interval holds 0 is not evidence.
- **Share of the random→oracle gap closed** at K: ``(Best@K - Random@K) / (Oracle Pass@K -
  Random@K)`` over the tasks (means first), with a bootstrap interval of that ratio over the same
  resamples (those where the oracle is no better than random dropped); undefined (``None``) where the
  oracle is no better than random (every pool all-resolved or all-unresolved; always at K = 1, where
  Best@1 is a random pick for every selector and every difference is 0).
  It compares selectors across generators of different strength: 0 is random, 1 the oracle.

Each selector is compared with the primary one and with ``self_consistency`` (when the report has it),
at K = 1, 4, 8, 16 and the largest K, where reachable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.intervals import Intervals
from agentic_rubrics.report.results import TaskResult
from agentic_rubrics.runfolder.comparisons import Comparisons, GapClosed, PairedDifference

TIE = 1e-12
"""Per-task differences smaller than this count as equal."""


def comparison_ks(ks: Sequence[int]) -> list[int]:
    """The K compared: 1, 4, 8, 16 and the largest, among those reported."""
    wanted = {1, 4, 8, 16, max(ks, default=1)}
    return [k for k in ks if k in wanted]


def _best(t: TaskResult, name: str, ks: list[int]) -> list[float | None]:
    ids = t.labelled_ids
    return metrics.best_at_ks(
        [t.rankings[name][c] for c in ids], [int(bool(t.labels[c])) for c in ids], ks
    )


def compare(
    tasks: list[TaskResult], selectors: list[str], ks: Sequence[int], cis: Intervals
) -> dict[str, Any]:
    """report.json's ``comparisons`` (see the module's docstring); ``tasks``: the labelled ones."""
    at = comparison_ks(ks)
    best = {name: [_best(t, name, at) for t in tasks] for name in selectors}
    ys = [[int(bool(t.labels[c])) for c in t.labelled_ids] for t in tasks]
    rand = [metrics.random_at_k(y) or 0.0 for y in ys]
    oracle = [[metrics.pass_at_k(y, k) or 0.0 for k in at] for y in ys]
    against = list(dict.fromkeys(n for n in (selectors[0], "self_consistency") if n in selectors))
    paired: dict[str, dict[str, dict[str, Any]]] = {}
    for name in selectors:
        for other in against:
            if other == name:
                continue
            paired.setdefault(name, {})[other] = {
                str(k): _difference(best[name], best[other], i, cis) for i, k in enumerate(at)
            }
    gap = {
        name: {
            str(k): _gap([b[i] for b in best[name]], rand, [o[i] for o in oracle], cis)
            for i, k in enumerate(at)
        }
        for name in selectors
    }
    return {"ks": at, "paired": paired, "gap_closed": gap}


def _difference(
    a: list[list[float | None]], b: list[list[float | None]], i: int, cis: Intervals
) -> dict[str, Any]:
    pairs = [(x[i], y[i]) for x, y in zip(a, b, strict=True)]
    diffs = [xi - yi for xi, yi in pairs if xi is not None and yi is not None]
    ci = cis.mean(diffs) if diffs else None
    return {
        "difference": metrics.mean(diffs),
        "ci": list(ci) if ci else None,
        "better": sum(1 for d in diffs if d > TIE),
        "worse": sum(1 for d in diffs if d < -TIE),
        "tasks": len(diffs),
    }


def _gap(
    best: list[float | None], rand: list[float], oracle: list[float], cis: Intervals
) -> dict[str, Any]:
    import numpy as np

    b = np.array([0.0 if x is None else x for x in best])
    num, den = b - np.array(rand), np.array(oracle) - np.array(rand)
    value = float(num.sum() / den.sum()) if len(b) and den.sum() > TIE else None
    counts = cis.resamples(len(b)) if value is not None else None
    ci = None
    if counts is not None:
        tops, bottoms = counts @ num, counts @ den
        ok = bottoms > TIE
        if ok.any():
            lo, hi = np.quantile(tops[ok] / bottoms[ok], [0.025, 0.975])
            ci = [float(lo), float(hi)]
    return {"value": value, "ci": ci}


def comparison_lines(comparisons: Comparisons | None) -> list[str]:
    """report.md's section: paired differences, then the share of the gap closed."""
    if comparisons is None or not comparisons.ks:
        return []
    ks = [str(k) for k in comparisons.ks]
    out = [
        "",
        "## Selectors compared",
        "",
        "Best@K of each selector minus another's on the same tasks, with a 95% paired bootstrap"
        " interval over tasks (tasks where its expected pick is better / worse); an interval that"
        " holds 0 is not evidence of a difference. At K = 1 the one candidate drawn is a random"
        " pick whatever the selector: 0 there.",
        "",
        "| selector | against | " + " | ".join(f"K = {k}" for k in ks) + " |",
        "|---|---|" + "---|" * len(ks),
    ]
    for name, others in comparisons.paired.items():
        for other, by_k in others.items():
            cells = [_diff(by_k[k]) if k in by_k else "" for k in ks]
            out.append(f"| {name} | {other} | " + " | ".join(cells) + " |")
    out += [
        "",
        "Share of the random→oracle gap closed, (Best@K − Random@K) / (Oracle Pass@K − Random@K):"
        " 0 is a random pick, 1 the oracle; it compares selectors across generators of different"
        " strength. n/a: the oracle is no better than random on these tasks (every pool all"
        " resolved or all unresolved; always at K = 1).",
        "",
        "| selector | " + " | ".join(f"K = {k}" for k in ks) + " |",
        "|---|" + "---|" * len(ks),
    ]
    for name, shares in comparisons.gap_closed.items():
        cells = [_share(shares[k]) if k in shares else "" for k in ks]
        out.append(f"| {name} | " + " | ".join(cells) + " |")
    return out


def _diff(d: PairedDifference) -> str:
    if d.difference is None:
        return "n/a"
    ci = f" [{d.ci[0]:+.3f}, {d.ci[1]:+.3f}]" if d.ci else ""
    return f"{d.difference:+.3f}{ci} ({d.better}/{d.worse})"


def _share(g: GapClosed) -> str:
    if g.value is None:
        return "n/a"
    ci = f" [{g.ci[0]:.2f}, {g.ci[1]:.2f}]" if g.ci else ""
    return f"{g.value:.2f}{ci}"
