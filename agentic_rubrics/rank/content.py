"""Content features: what a candidate does to the code, and how it agrees with the other candidates.

The ``offline_content`` ranking (:mod:`agentic_rubrics.rank.selectors.offline_content`) reads these, and
the benchmark (``benchmarks/content_features.py``) imports them: one definition for both.

At judge time, per candidate (:func:`content_features`): line agreement and file agreement with the
other candidates (:func:`agentic_rubrics.rank.rerank.patch_features`), function agreement (mean Jaccard
similarity of the sets of functions the candidates change: from the post-image analysis when the task's
tree is at hand, else from the diff's enclosing definitions, :func:`diff_functions`), and the post-image
findings (the patch did not apply, introduces a syntax error, undefined name or redefinition, removes a
name the repository still uses; all 0 without a tree). At report time (:func:`content_rows`): the rubric
S and each feature relative to the pool (minus the pool's max or mean). The patch-shape features stay
in the stored rows (the benchmark compares with them) but carry no weight: they mostly tell which agent
wrote the patch, which a user's pool of one agent's samples cannot use.

Shipped weights (:func:`shipped_weights`, ``content_weights.json``) carry their provenance: the data
file and its sha256, the pools, the fit method, and the fitted instance ids as sha256 hashes, so a
report can say when a run's instances were in the fit (its figures are then in-sample).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentic_rubrics.exceptions import DataError, PatchParseError
from agentic_rubrics.patch import enclosing_chains, is_empty_patch, is_test_path, parse_patch
from agentic_rubrics.rank.offline import (
    OFFLINE_FEATURES,
    add_relative,
    offline_feature_rows,
    patch_features,
)
from agentic_rubrics.rank.rerank import Ranking
from agentic_rubrics.rubric.behaviour import program_file, tree_behaviour
from agentic_rubrics.runfolder.files import read_json

if TYPE_CHECKING:
    from agentic_rubrics.rubric.postimage import PostimageResult

ERROR_KINDS = ("syntax_error", "undefined_name", "redefinition")
"""Introduced pyflakes categories that count as a new error."""

SHAPE_FEATURES = (
    "log_changed_lines",
    "log_changed_lines_rel_median",
    "files",
    "new_files",
    "touches_tests",
)
"""The ``offline`` ranking's patch-shape features: they mostly tell which agent wrote the patch."""

CONTENT_FEATURES = (
    *(f for f in OFFLINE_FEATURES if f not in SHAPE_FEATURES),  # S, line and file agreement
    "func_agreement",
    "func_agreement_rel_max",
    "not_applied",
    "new_error",
    "removes_used",
)
"""The features ``offline_content`` weighs: none that mainly identifies the patch's source."""

CONTENT_GROUPS = {
    "rubric S": ("s", "s_rel_max"),
    "line agreement": ("agreement", "agreement_rel_max", "agreement_rel_mean"),
    "file agreement": ("file_agreement", "file_agreement_rel_max"),
    "function agreement": ("func_agreement", "func_agreement_rel_max"),
    "post-image findings": ("not_applied", "new_error", "removes_used"),
}
"""The content features by group (the benchmark's ablation)."""

WEIGHTS_FILE = Path(__file__).with_name("content_weights.json")
"""The shipped weights of ``offline_content``, with their provenance."""


def post_row(result: PostimageResult | None) -> dict[str, Any] | None:
    """What the content features and behaviour consensus read of one post-image analysis (``None``:
    no analysis, or one that could not be attempted, e.g. it timed out: then the diff stands in).
    On an approximate tree (a release standing in for the base commit) a patch that does not apply
    is read as one that does not apply, as everywhere: a candidate that cannot be checked on the tree
    at hand never outranks one that can (a patch made to fail there on purpose must not escape).
    Names and hashes only, never contents."""
    if result is None or result.apply.method == "not_attempted":
        return None
    cats = result.introduced_by_category()
    funcs = sorted(
        {
            f"{f.path}::{s.qualname.rsplit('.', 1)[-1]}"
            for f in result.files
            if not is_test_path(f.path)
            for s in f.symbols
        }
    )
    return {
        "method": result.apply.method,
        "applied": result.applied,
        "new_error": any(c in cats for c in ERROR_KINDS),
        "removes_used": bool(result.removed_still_used),
        "functions": funcs,
        # what behaviour_consensus reads (:mod:`agentic_rubrics.rank.consensus`): hashes only
        "behaviour": tree_behaviour(result) if result.applied else None,
        "delta": {
            f.path: list(f.behaviour_delta)
            for f in result.files
            if f.python and f.behaviour_delta is not None and program_file(f.path)
        },
    }


def diff_functions(patch: str) -> list[str] | None:
    """``path::name`` of the innermost definition around each changed line, from the diff alone
    (test files and non-Python files left out; ``None``: empty or unparsable)."""
    if is_empty_patch(patch):
        return None
    try:
        parsed = parse_patch(patch)
    except PatchParseError:
        return None
    out: set[str] = set()
    for f in parsed.files:
        if is_test_path(f.path) or not f.path.endswith(".py"):
            continue
        for chain in enclosing_chains(f):
            out.add(f"{f.path}::{chain[-1][0] if chain else '<module>'}")
    return sorted(out)


def mean_jaccard(sets: Mapping[str, set[str]], cid: str) -> float:
    """Mean Jaccard similarity of ``sets[cid]`` with every other set (0 for two empty sets, or alone)."""
    others = [o for o in sets if o != cid]
    if not others:
        return 0.0
    vals = [
        len(sets[cid] & sets[o]) / len(sets[cid] | sets[o]) if sets[cid] | sets[o] else 0.0
        for o in others
    ]
    return sum(vals) / len(vals)


def content_features(
    patches: Mapping[str, str],
    post: Mapping[str, dict[str, Any] | None],
    agreement: Ranking | None = None,
) -> dict[str, dict[str, float] | None]:
    """Judge-time features of each candidate (``None``: empty or unparsable patch).

    ``post``: each candidate's :func:`post_row` (``None`` or absent: no tree, or no analysis).
    ``agreement``: the self-consistency values, when already computed."""
    shape = patch_features(patches, agreement)
    funcs: dict[str, set[str]] = {}
    for cid, patch in patches.items():
        row = post.get(cid)
        if row is not None and row["applied"]:
            funcs[cid] = set(row["functions"])
        else:
            funcs[cid] = set(diff_functions(patch) or [])
    out: dict[str, dict[str, float] | None] = {}
    for cid, f in shape.items():
        row = post.get(cid)
        out[cid] = (
            None
            if f is None
            else {
                **f,
                "func_agreement": mean_jaccard(funcs, cid),
                "not_applied": float(row is not None and not row["applied"]),
                "new_error": float(row is not None and row["new_error"]),
                "removes_used": float(row is not None and row["removes_used"]),
            }
        )
    return out


def content_rows(
    features: Mapping[str, dict[str, float] | None], scores: Mapping[str, float | None]
) -> dict[str, dict[str, float]]:
    """Report-time rows of the usable candidates: the features, S (missing counts as 0) and the
    values relative to the pool."""
    rows = offline_feature_rows(features, scores)
    add_relative(rows, "func_agreement", "max")
    return rows


def instance_hash(instance_id: str) -> str:
    """How a fit set names an instance: the sha256 of its id."""
    return hashlib.sha256(instance_id.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class ContentWeights:
    """A linear ranking over :data:`CONTENT_FEATURES` and what it was fitted on."""

    weights: dict[str, float]
    bias: float
    fitted_on: dict[str, Any]
    """Data file and its sha256, pools, instance count, fit method (no instance ids)."""
    fit_ids: frozenset[str] = field(default_factory=frozenset)
    """The fitted instances, as :func:`instance_hash` values."""

    def in_fit(self, instance_ids: Iterable[str]) -> int:
        """How many of ``instance_ids`` were fitted on."""
        return sum(1 for i in set(instance_ids) if instance_hash(i) in self.fit_ids)

    def to_json(self) -> dict[str, Any]:
        return {
            "features": list(CONTENT_FEATURES),
            "weights": self.weights,
            "bias": self.bias,
            "fitted_on": self.fitted_on,
            "fit_instance_sha256": sorted(self.fit_ids),
        }


def read_weights(path: Path) -> ContentWeights:
    """Weights from a file written by :meth:`ContentWeights.to_json` (a :class:`DataError` naming the
    file and the field when it is not one)."""
    raw = read_json(path, what="not a content weights file")  # also 100,000 nested lists
    try:
        weights = {str(k): float(v) for k, v in raw["weights"].items()}
        unknown = sorted(set(weights) - set(CONTENT_FEATURES))
        if unknown:
            raise ValueError(f"weights: unknown features {unknown}")
        return ContentWeights(
            weights=weights,
            bias=float(raw["bias"]),
            fitted_on=dict(raw["fitted_on"]),
            fit_ids=frozenset(str(h) for h in raw["fit_instance_sha256"]),
        )
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(
            f"{path}: not a content weights file ({type(exc).__name__}: {exc})"
        ) from exc


@lru_cache(maxsize=1)
def shipped_weights() -> ContentWeights:
    """The weights that ship with the package (:data:`WEIGHTS_FILE`)."""
    return read_weights(WEIGHTS_FILE)


def content_ranking(
    features: Mapping[str, dict[str, float] | None],
    scores: Mapping[str, float | None],
    weights: ContentWeights,
) -> Ranking:
    """``bias + Σ w·x`` over the content features (empty or unparsable patches: ``None``, last)."""
    rows = content_rows(features, scores)
    out: Ranking = dict.fromkeys(features)
    for cid, row in rows.items():
        out[cid] = weights.bias + sum(w * row[k] for k, w in weights.weights.items())
    return out
