"""``compare_verifiers.py``'s results.md and its Best@K plot. The tables are the package's
(:func:`agentic_rubrics.report.method_comparison_md.sections`, what ``agentic-rubrics compare RUN``
writes): here only the benchmark's heading, the fake model's caveat and the hidden tests' check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentic_rubrics.report.method_comparison_md import sections
from agentic_rubrics.runfolder.method_comparison import METHODS, MethodComparison

FAKE_NOTE = (
    "**These figures measure the machinery, not a method's quality.** The shipped fake model wrote "
    "the rubrics, the test scripts and the proxy patches from scripts and graded by fixed rules; "
    "its dollar figures are the budget's estimate for unpriced tokens (it reports no price). Only a "
    "real model on real tasks says how the methods compare."
)


def _num(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ks(results: dict[str, Any]) -> list[str]:
    return sorted(results["methods"]["oracle"]["best_at_k"], key=int)


def _heading(results: dict[str, Any], comparison: MethodComparison) -> list[str]:
    unlabelled = comparison.tasks_without_labels
    return [
        "# Verifiers compared on the same instances and candidates",
        "",
        f"Model: {results['model']}. {results['tasks']} tasks"
        + (f" ({unlabelled} without a label: they count in no figure)" if unlabelled else "")
        + f", {results['candidates']} candidates (largest pool {results['max_pool']}); tests artifact: "
        + (
            "each task's hidden tests (`--tests-from-hidden`)."
            if results["tests_from_hidden"]
            else "the test-writing agent's script."
        ),
        "",
    ]


def _hidden(check: dict[str, Any]) -> list[str]:
    return [
        "",
        "## The hidden tests as the tests artifact",
        "",
        f"{check['candidates_checked']} candidates; pass/fail differs from labels.json for "
        f"{len(check['pass_fail_disagrees_with_labels'])}; the tests' Best@1 "
        f"{_num(check['tests_best_at_1'])}, the oracle's {_num(check['oracle_best_at_1'])}; its pick"
        f" among all candidates solves {_num(check['tests_realised_best_at_1'])} of the tasks,"
        f" the oracle's {_num(check['oracle_realised_best_at_1'])}; Best@K "
        + (
            "equals the oracle's at every K."
            if not check["best_at_k_differs_from_oracle"]
            else f"differs from the oracle's at K = {sorted(check['best_at_k_differs_from_oracle'])}."
        ),
    ]


def markdown(results: dict[str, Any], comparison: MethodComparison) -> str:
    """results.md: the benchmark's heading, the package's tables, the hidden tests' check."""
    lines = _heading(results, comparison)
    if "fake" in results["model"]:
        lines += [FAKE_NOTE, ""]
    lines += sections(comparison)
    check = results.get("hidden_check")
    if check is not None:
        lines += _hidden(check)
    return "\n".join(lines) + "\n"


def plot_best_at_k(results: dict[str, Any], dest: Path) -> None:
    """One figure: every measured method's Best@K with its interval as a band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = _ks(results)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in METHODS:
        f = results["methods"][m]
        if f["best_at_k"] is None:  # not measured: no line, never a line at 0
            continue
        xs = [int(k) for k in ks if f["best_at_k"].get(k) is not None]
        ys = [f["best_at_k"][str(k)] for k in xs]
        style = "--" if m in ("random", "oracle") else "-"
        (line,) = ax.plot(xs, ys, style, marker="o", markersize=3, label=m)
        cis = [f["best_at_k_ci"].get(str(k)) for k in xs]
        if all(ci and ci[0] is not None for ci in cis):
            ax.fill_between(
                xs, [c[0] for c in cis], [c[1] for c in cis], color=line.get_color(), alpha=0.1
            )
    ax.set_xlabel("K (candidates drawn)")
    ax.set_ylabel("Best@K")
    ax.set_ylim(0, 1.02)
    title = "Best@K on the same candidates"
    ax.set_title(
        title + (" (fake model: the machinery, not quality)" if "fake" in results["model"] else "")
    )
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(dest, dpi=110)
    plt.close(fig)
