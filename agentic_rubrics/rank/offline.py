"""The offline ranking: rubric S, agreement with the other candidates and the patch's shape, weighted.

Its weights are data, not code: ``offline_weights.json`` beside this module, with their provenance (the
data file, the fit, the command). Its shape features mostly say which agent wrote a patch: on mixed
pools of public runs it must be read beside the best-system prior (benchmarks/README.md).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.rank.agreement import self_consistency_ranking
from agentic_rubrics.surrogates import has_lone_surrogates

Ranking = dict[str, float | None]
WEIGHTS_FILE = Path(__file__).with_name("offline_weights.json")

OFFLINE_FEATURES = (
    "s",
    "s_rel_max",
    "agreement",
    "agreement_rel_max",
    "agreement_rel_mean",
    "file_agreement",
    "file_agreement_rel_max",
    "log_changed_lines",
    "log_changed_lines_rel_median",
    "files",
    "new_files",
    "touches_tests",
)
"""What the offline ranking reads of a candidate: its rubric S, its agreement with the other candidates
(line-level and file-level, also relative to the pool), and the shape of its patch."""


def patch_features(
    patches: Mapping[str, str], agreement: Ranking | None = None
) -> dict[str, dict[str, float] | None]:
    """Per candidate: agreement with the others and the patch's shape (``None``: empty or unparsable).

    Everything here is read from the patches alone; S is added at report time. ``agreement``: the
    self-consistency values, when already computed.
    """
    from agentic_rubrics.exceptions import PatchParseError
    from agentic_rubrics.patch import is_test_path, parse_patch

    if agreement is None:
        agreement = self_consistency_ranking(patches)
    parsed: dict[str, Any] = {}
    for cid, patch in patches.items():
        try:
            unusable = is_empty_patch(patch) or has_lone_surrogates(patch)  # not a diff, not text
            parsed[cid] = None if unusable else parse_patch(patch)
        except PatchParseError:
            parsed[cid] = None
    sources = {
        cid: {path for f in p.files for path in f.paths if not is_test_path(path)}
        for cid, p in parsed.items()
        if p is not None
    }
    out: dict[str, dict[str, float] | None] = {}
    for cid, p in parsed.items():
        if p is None:
            out[cid] = None
            continue
        others = [o for o in sources if o != cid]
        jaccard = [
            len(sources[cid] & sources[o]) / len(sources[cid] | sources[o])
            if sources[cid] | sources[o]
            else 0.0
            for o in others
        ]
        out[cid] = {
            "agreement": agreement[cid] or 0.0,
            "file_agreement": sum(jaccard) / len(jaccard) if jaccard else 0.0,
            "log_changed_lines": math.log1p(p.changed_lines),
            "files": float(len(p.files)),
            "new_files": float(sum(1 for f in p.files if f.is_new)),
            "touches_tests": float(any(is_test_path(path) for f in p.files for path in f.paths)),
        }
    return out


def add_relative(rows: dict[str, dict[str, float]], key: str, how: str) -> None:
    """``r[f"{key}_rel_{how}"] = r[key] - ref``, ref the pool's max, mean or median of ``key``."""
    values = sorted(r[key] for r in rows.values())
    if not values:
        return
    ref = {
        "max": values[-1],
        "mean": sum(values) / len(values),
        "median": values[len(values) // 2],
    }[how]
    for r in rows.values():
        r[f"{key}_rel_{how}"] = r[key] - ref


def offline_feature_rows(
    features: Mapping[str, dict[str, float] | None], scores: Mapping[str, float | None]
) -> dict[str, dict[str, float]]:
    """The full feature rows of a pool's usable candidates (S missing counts as 0)."""
    rows = {cid: {**f, "s": scores.get(cid) or 0.0} for cid, f in features.items() if f is not None}
    add_relative(rows, "s", "max")
    add_relative(rows, "agreement", "max")
    add_relative(rows, "agreement", "mean")
    add_relative(rows, "file_agreement", "max")
    add_relative(rows, "log_changed_lines", "median")
    return rows


@cache
def shipped() -> tuple[dict[str, float], float, dict[str, Any]]:
    """The shipped weights, bias and provenance (``offline_weights.json``; a :class:`DataError`
    naming the file when it is not of that shape)."""
    try:
        raw = json.loads(WEIGHTS_FILE.read_text(encoding="utf-8"))
        weights = {str(k): float(v) for k, v in raw["weights"].items()}
        bias = float(raw["bias"])
        fitted_on = dict(raw["fitted_on"])
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(f"{WEIGHTS_FILE}: not the offline ranking's weights ({exc})") from exc
    if set(weights) != set(OFFLINE_FEATURES):
        raise DataError(
            f"{WEIGHTS_FILE}: weights for {sorted(weights)}, not {list(OFFLINE_FEATURES)}"
        )
    return weights, bias, fitted_on


def offline_ranking(
    features: Mapping[str, dict[str, float] | None],
    scores: Mapping[str, float | None],
    weights: Mapping[str, float] | None = None,
    bias: float | None = None,
) -> Ranking:
    """The offline ranking: a linear score over :data:`OFFLINE_FEATURES` (empty or unparsable: last)."""
    shipped_weights, shipped_bias, _ = shipped()
    w = shipped_weights if weights is None else weights
    b = shipped_bias if bias is None else bias
    rows = offline_feature_rows(features, scores)
    out: Ranking = dict.fromkeys(features)
    for cid, row in rows.items():
        out[cid] = b + sum(w.get(k, 0.0) * row[k] for k in OFFLINE_FEATURES)
    return out
