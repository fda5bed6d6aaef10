"""``compare_verifiers.py``'s results as Markdown and as one Best@K plot (figures as given, none computed)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

METHODS = (
    "random",
    "oracle",
    "self_consistency",
    "patch_classifier",
    "rubric",
    "tests",
    "similarity",
    "hybrid",
)
FAKE_NOTE = (
    "**These figures measure the machinery, not a method's quality.** The shipped fake model wrote "
    "the rubrics, the test scripts and the proxy patches from scripts and graded by fixed rules; "
    "its dollar figures are the budget's estimate for unpriced tokens (it reports no price). Only a "
    "real model on real tasks says how the methods compare."
)


def _num(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _ci(value: Any, ci: Any) -> str:
    if value is None:
        return "—"
    if not ci or ci[0] is None:
        return _num(value)
    return f"{value:.3f} [{ci[0]:.2f}, {ci[1]:.2f}]"


def _ks(results: dict[str, Any]) -> list[str]:
    return sorted(results["methods"]["oracle"]["best_at_k"], key=int)


def markdown(results: dict[str, Any]) -> str:
    """results.md: Best@K with intervals, ranking quality and coverage, the cost table."""
    methods = results["methods"]
    ks = _ks(results)
    lines = [
        "# Verifiers compared on the same instances and candidates",
        "",
        f"Model: {results['model']}. {results['tasks']} tasks, {results['candidates']} candidates "
        f"(largest pool {results['max_pool']}); tests artifact: "
        + (
            "each task's hidden tests (`--tests-from-hidden`)."
            if results["tests_from_hidden"]
            else "the test-writing agent's script."
        ),
        "",
    ]
    if "fake" in results["model"]:
        lines += [FAKE_NOTE, ""]
    lines += [
        "## Best@K",
        "",
        "Expected share of tasks solved when the method picks one of K candidates drawn at random, "
        "95% bootstrap interval over tasks (report.json's figures; the oracle is the labels' Pass@K, "
        "given without an interval).",
        "",
        "| K | " + " | ".join(METHODS) + " |",
        "|---:|" + "---|" * len(METHODS),
    ]
    for k in ks:
        cells = [
            _ci(methods[m]["best_at_k"].get(k), methods[m]["best_at_k_ci"].get(k)) for m in METHODS
        ]
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Ranking quality and coverage",
        "",
        "| method | realised Best@1 | ROC-AUC | candidates with a value |",
        "|---|---|---|---|",
    ]
    for m in METHODS:
        f = methods[m]
        cover = f.get("coverage") or {}
        lines.append(
            f"| {m} | {_num(f.get('realised_best_at_1'))} | {_ci(f.get('roc_auc'), f.get('roc_auc_ci'))}"
            f" | {cover.get('n', '—')}/{cover.get('of', '—')} |"
        )
    lines += [
        "",
        "## Cost",
        "",
        "Artifact: written once per task (model $ and the writer agent's turns; CPU-seconds of the "
        "tests' validation on the base tree). Grading: per candidate of the run (model $ of the rubric judge, the "
        "similarity judge or the classifier; CPU-seconds of executing the tests). Total at K = 16: "
        "artifact + 16 × grading, per task. $ measured is what providers reported; $ est. what the "
        "run's budget was charged for calls without a price.",
        "",
        "| method | artifact $ | artifact $ est. | agent turns | artifact CPU-s | grading $ "
        "| grading $ est. | grading CPU-s | total@16 $ | total@16 $ est. | total@16 CPU-s |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for m in METHODS:
        c = results["cost"][m]
        a, g, t = c["artifact_per_task"], c["grading_per_candidate"], c["total_per_task_at_k16"]
        lines.append(
            f"| {m} | {a['usd']:.4f} | {a['estimated_usd']:.4f} | {a['agent_turns']:.1f}"
            f" | {a['cpu_seconds']:.3f} | {g['usd']:.5f} | {g['estimated_usd']:.5f}"
            f" | {g['cpu_seconds']:.3f} | {t['usd']:.4f} | {t['estimated_usd']:.4f}"
            f" | {t['cpu_seconds']:.2f} |"
        )
    weights = results.get("hybrid_weights")
    if weights:
        lines += [
            "",
            f"Hybrid weight on S: {weights.get('rubric_weight')} ({weights.get('source')}).",
        ]
    check = results.get("hidden_check")
    if check is not None:
        lines += [
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
    return "\n".join(lines) + "\n"


def plot_best_at_k(results: dict[str, Any], dest: Path) -> None:
    """One figure: every method's Best@K with its interval as a band."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = _ks(results)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for m in METHODS:
        f = results["methods"][m]
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
