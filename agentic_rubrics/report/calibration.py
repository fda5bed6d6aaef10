"""Calibration: fit S -> P(resolved) on one run (isotonic regression), apply it to another.

The fit uses only candidates that have both an S and a label; S is left untouched everywhere else (the
calibrated probability is an extra column, never a verdict). The reliability diagram and the Brier score
and expected calibration error (ECE) are reported before and after, on the run it is applied to.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.report.build import build_report_and_results
from agentic_rubrics.runfolder.files import atomic_write_json, read_json
from agentic_rubrics.runfolder.folder import RunFolder
from agentic_rubrics.types import SCHEMA


@dataclass(frozen=True)
class Calibration:
    """A fitted monotone map from S to P(resolved), by its breakpoints (linear in between)."""

    x: list[float]
    y: list[float]
    fitted_on: str
    candidates: int

    def __call__(self, s: float) -> float:
        if s <= self.x[0]:
            return self.y[0]
        for i in range(1, len(self.x)):
            if s <= self.x[i]:
                x0, x1, y0, y1 = self.x[i - 1], self.x[i], self.y[i - 1], self.y[i]
                return y0 if x1 == x0 else y0 + (y1 - y0) * (s - x0) / (x1 - x0)
        return self.y[-1]


def scored_pairs(folder: Path) -> list[tuple[float, int]]:
    """(S, label) of every candidate of a run that has both."""
    _, results = build_report_and_results(RunFolder(folder), n_resamples=0)
    pairs = []
    for t in results:
        for cid, s in t.scores.items():
            label = t.labels.get(cid)
            if s.score is not None and label is not None:
                pairs.append((s.score, int(bool(label))))
    return pairs


def fit_calibration(folder: Path) -> Calibration:
    """Isotonic regression of the labels on S (scikit-learn), clipped to [0, 1].

    Raises:
        DataError: the run has no candidate with both an S and a label, or only one label value.
    """
    from sklearn.isotonic import IsotonicRegression

    pairs = scored_pairs(folder)
    if len({y for _, y in pairs}) < 2:
        raise DataError(f"{folder}: calibration needs resolved and unresolved candidates with an S")
    model = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip")
    model.fit([s for s, _ in pairs], [y for _, y in pairs])
    return Calibration(
        x=[float(v) for v in model.X_thresholds_],
        y=[float(v) for v in model.y_thresholds_],
        fitted_on=_run_id(folder),
        candidates=len(pairs),
    )


def _run_id(folder: Path) -> str:
    recorded = RunFolder(folder).config()
    return f"{recorded.get('run_id', 'unknown')} ({recorded['config_hash'][:19]})"


def reliability(probs: list[float], labels: list[int], bins: int = 10) -> list[dict[str, Any]]:
    """Equal-width bins of predicted probability: count, mean prediction, observed frequency."""
    out = []
    for b in range(bins):
        lo, hi = b / bins, (b + 1) / bins
        members = [
            (p, y)
            for p, y in zip(probs, labels, strict=True)
            if lo <= p < hi or (b == bins - 1 and p == 1.0)
        ]
        out.append(
            {
                "lo": lo,
                "hi": hi,
                "count": len(members),
                "mean_predicted": sum(p for p, _ in members) / len(members) if members else None,
                "observed": sum(y for _, y in members) / len(members) if members else None,
            }
        )
    return out


def brier(probs: list[float], labels: list[int]) -> float | None:
    """Mean squared error of the probabilities (Brier 1950); ``None`` with no candidate."""
    return (
        sum((p - y) ** 2 for p, y in zip(probs, labels, strict=True)) / len(probs)
        if probs
        else None
    )


def ece(bins: list[dict[str, Any]]) -> float | None:
    """Expected calibration error: count-weighted |observed - predicted| over bins (Naeini et al. 2015)."""
    n: int = sum(b["count"] for b in bins)
    if not n:
        return None
    gap: float = sum(
        b["count"] * abs(b["observed"] - b["mean_predicted"]) for b in bins if b["count"]
    )
    return gap / n


def apply_calibration(calibration: Calibration, folder: Path, out: Path) -> dict[str, Any]:
    """Apply to another run; write calibration.json and reliability.png under ``out``."""
    pairs = scored_pairs(folder)
    if not pairs:
        raise DataError(f"{folder}: no candidate with both an S and a label to calibrate")
    raw = [s for s, _ in pairs]
    labels = [y for _, y in pairs]
    calibrated = [calibration(s) for s in raw]
    raw_bins, cal_bins = reliability(raw, labels), reliability(calibrated, labels)
    result = {
        "schema": SCHEMA,
        "method": "isotonic",
        "calibration": asdict(calibration),
        "applied_to": _run_id(folder),
        "candidates": len(pairs),
        "brier": {"s_as_probability": brier(raw, labels), "calibrated": brier(calibrated, labels)},
        "ece": {"s_as_probability": ece(raw_bins), "calibrated": ece(cal_bins)},
        "reliability": {"s_as_probability": raw_bins, "calibrated": cal_bins},
    }
    atomic_write_json(out / "calibration.json", result)
    _diagram(result, out / "reliability.png")
    return result


def _diagram(result: dict[str, Any], path: Path) -> None:
    from agentic_rubrics.report.figures import figure, save

    fig, ax = figure(5.2, 4.6)
    ax.plot([0, 1], [0, 1], "k:", lw=1, label="perfect")
    for key, color, name in (
        ("s_as_probability", "#d62728", "S as a probability"),
        ("calibrated", "#1f77b4", "calibrated"),
    ):
        pts = [
            (b["mean_predicted"], b["observed"]) for b in result["reliability"][key] if b["count"]
        ]
        e = result["ece"][key]
        ax.plot(
            [p for p, _ in pts],
            [o for _, o in pts],
            marker="o",
            color=color,
            label=f"{name} (ECE {e:.3f})",
        )
    ax.set(
        xlabel="predicted P(resolved)",
        ylabel="observed share resolved",
        xlim=(0, 1),
        ylim=(0, 1),
        title=f"Reliability ({result['candidates']} candidates)",
    )
    ax.legend(fontsize=8, loc="upper left")
    save(fig, path)


def shared_instances(fit_on: Path, apply_to: Path) -> list[str]:
    """Instance ids finished in both run folders (all of them when both name the same folder)."""
    fit_ids = set(RunFolder(fit_on).progress())
    return sorted(fit_ids & set(RunFolder(apply_to).progress()))


def calibrate(
    fit_on: Path, apply_to: Path, out: Path | None = None, *, allow_overlap: bool = False
) -> dict[str, Any]:
    """Fit on one run folder, apply to another; returns what calibration.json holds.

    Raises:
        DataError: the two runs share instances (the fit would be scored on its own training data,
            which flatters Brier and ECE), unless ``allow_overlap``; then the result records it.
    """
    shared = shared_instances(fit_on, apply_to)
    if shared and not allow_overlap:
        raise DataError(
            f"{fit_on} and {apply_to} share {len(shared)} instance(s) ({', '.join(shared[:5])}"
            f"{' ...' if len(shared) > 5 else ''}): a calibration applied to the tasks it was fitted"
            " on reports a flattering Brier and ECE. Fit on one set of instances and apply to"
            " another, or pass --allow-overlap to go on anyway (the result then says so)."
        )
    result = apply_calibration(fit_calibration(fit_on), apply_to, out or apply_to / "calibration")
    if shared:
        result["shared_instances"] = len(shared)
        atomic_write_json((out or apply_to / "calibration") / "calibration.json", result)
    return result


def load_calibration(path: Path) -> Calibration:
    """A calibration from a calibration.json (a :class:`DataError` naming the file when it is not one)."""
    data = read_json(path)
    try:
        return Calibration(**data["calibration"])
    except (KeyError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: not a calibration file ({type(exc).__name__}: {exc})") from exc
