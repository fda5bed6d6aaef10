"""The report's plots (matplotlib, PNG): Best@K by selector, S by label, per-axis S by label, ROC curves.

matplotlib is imported only when a figure is drawn (:mod:`agentic_rubrics.report.figures`).
"""

from __future__ import annotations

from pathlib import Path

from agentic_rubrics.rank.metrics import roc_curve
from agentic_rubrics.report.figures import figure as _figure
from agentic_rubrics.report.figures import save as _save
from agentic_rubrics.report.results import TaskResult
from agentic_rubrics.runfolder.report import Report
from agentic_rubrics.types import AXES

PLOTS_DIR = "plots"
_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]


def write_plots(root: Path, report: Report, results: list[TaskResult]) -> list[tuple[str, str]]:
    """Write the plots under ``root/plots``; returns ``(title, relative path)`` pairs for report.md."""
    labelled = [t for t in results if t.labelled]
    out: list[tuple[str, str]] = []
    if report.oracle_pass_at_k:
        out.append(_best_at_k_plot(root, report))
    by_label, axes = _s_by_label(labelled)
    if by_label[True] or by_label[False]:
        out += _label_plots(root, by_label, axes)
    out += _roc_plot(root, report, labelled)
    return out


def _best_at_k_plot(root: Path, report: Report) -> tuple[str, str]:
    selectors = list(report.selectors)
    ks = [int(k) for k in report.oracle_pass_at_k]
    fig, ax = _figure()
    for n, name in enumerate(selectors):
        ys = [report.selectors[name].best_at_k[str(k)] for k in ks]
        ax.plot(ks, ys, marker="o", ms=3, color=_COLORS[n % len(_COLORS)], label=name)
    ax.plot(ks, [report.oracle_pass_at_k[str(k)] for k in ks], "k--", label="oracle Pass@K")
    ax.plot(ks, [report.random_at_k] * len(ks), "k:", label="Random@K")
    ax.set(
        xlabel="K (candidates drawn)",
        ylabel="share of tasks solved",
        ylim=(0, 1.02),
        title="Best@K",
    )
    ax.legend(fontsize=8, loc="lower right")  # a fixed place: "best" searches, slowly
    ax.grid(alpha=0.3)
    _save(fig, root / PLOTS_DIR / "best_at_k.png")
    return ("Best@K by selector, with Oracle Pass@K and Random@K", f"{PLOTS_DIR}/best_at_k.png")


_ByLabel = dict[bool, list[float]]
_AxesByLabel = dict[bool, dict[str, list[float]]]


def _s_by_label(labelled: list[TaskResult]) -> tuple[_ByLabel, _AxesByLabel]:
    """S and each axis's S of the labelled candidates, by label."""
    by_label: _ByLabel = {True: [], False: []}
    axes: _AxesByLabel = {
        True: {a: [] for a in AXES},
        False: {a: [] for a in AXES},
    }
    for t in labelled:
        for cid, s in t.scores.items():
            if t.labels[cid] is None:
                continue
            label = bool(t.labels[cid])
            if s.score is not None:
                by_label[label].append(s.score)
            for a, v in s.axis_scores.items():
                if v is not None:
                    axes[label][a].append(v)
    return by_label, axes


def _label_plots(root: Path, by_label: _ByLabel, axes: _AxesByLabel) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    fig, ax = _figure()
    bins = [i / 20 for i in range(21)]
    ax.hist(
        by_label[False],
        bins=bins,
        alpha=0.6,
        color="#d62728",
        label=f"unresolved ({len(by_label[False])})",
    )
    ax.hist(
        by_label[True],
        bins=bins,
        alpha=0.6,
        color="#2ca02c",
        label=f"resolved ({len(by_label[True])})",
    )
    ax.set(
        xlabel="S (candidates with a verdict)",
        ylabel="candidates",
        title="S by ground-truth label",
    )
    ax.legend(fontsize=8, loc="upper left")
    _save(fig, root / PLOTS_DIR / "s_by_label.png")
    out.append(("S by ground-truth label", f"{PLOTS_DIR}/s_by_label.png"))

    fig, ax = _figure()
    width = 0.38
    names = [a.removesuffix("_rubrics") for a in AXES]
    for offset, label, color in ((-width / 2, True, "#2ca02c"), (width / 2, False, "#d62728")):
        means = [sum(axes[label][a]) / len(axes[label][a]) if axes[label][a] else 0.0 for a in AXES]
        counts = [len(axes[label][a]) for a in AXES]
        bars = ax.bar(
            [i + offset for i in range(len(AXES))],
            means,
            width,
            color=color,
            label="resolved" if label else "unresolved",
        )
        for bar, n in zip(bars, counts, strict=True):
            ax.annotate(
                f"n={n}",
                (bar.get_x() + bar.get_width() / 2, bar.get_height()),
                ha="center",
                va="bottom",
                fontsize=7,
            )
    ax.set_xticks(range(len(AXES)), names)
    ax.set(ylabel="mean axis S", ylim=(0, 1.1), title="Per-axis S by ground-truth label")
    ax.legend(fontsize=8, loc="upper right")
    _save(fig, root / PLOTS_DIR / "axis_by_label.png")
    out.append(("Per-axis S by ground-truth label", f"{PLOTS_DIR}/axis_by_label.png"))

    return out


def _roc_plot(root: Path, report: Report, labelled: list[TaskResult]) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    selectors = list(report.selectors)
    curves = []
    for name in selectors:
        values, labels = [], []
        for t in labelled:
            mapping = t.values[name]
            for cid, v in mapping.items():
                if v is not None and t.labels[cid] is not None:
                    values.append(float(v))
                    labels.append(int(bool(t.labels[cid])))
        points = roc_curve(values, labels)
        if points:
            curves.append((name, points, report.selectors[name].roc_auc))
    if curves:
        fig, ax = _figure(5.2, 4.6)
        for n, (name, points, auc) in enumerate(curves):
            auc_text = "n/a" if auc is None else f"{auc:.3f}"
            ax.plot(
                [p[0] for p in points],
                [p[1] for p in points],
                color=_COLORS[n % len(_COLORS)],
                label=f"{name} (AUC {auc_text})",
            )
        ax.plot([0, 1], [0, 1], "k:", lw=1)
        ax.set(xlabel="false-positive rate", ylabel="true-positive rate", title="ROC curves")
        ax.legend(fontsize=8, loc="lower right")
        _save(fig, root / PLOTS_DIR / "roc.png")
        out.append(("ROC curves (rubric: S; others: their ranking values)", f"{PLOTS_DIR}/roc.png"))
    return out
