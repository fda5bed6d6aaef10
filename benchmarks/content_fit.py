"""The shipped ``offline_content`` weights: fitted on single-generator pools, with their provenance.

A user's Best@K pool is one agent's samples, so the weights the library ships are fitted on the
single-generator pools of the development file (per instance and source family, a pool of that family's
candidates only, features recomputed on that pool): logistic regression on standardised features,
mapped back to weights on the raw features (:func:`fit_weights`), which is what
``agentic_rubrics.rank.content.content_ranking`` reads. The figures the benchmark reports use the same fit
leaving each repository out (:func:`loro_weights`); the shipped file (``--write-weights``) is the fit on
every pool, and names the fitted instances by the sha256 of their ids so a report can warn when a run's
instances were in it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from agentic_rubrics.rank.content import CONTENT_FEATURES, ContentWeights, instance_hash

FIT_METHOD = (
    "logistic regression (scikit-learn LogisticRegression, C=1, max_iter=5000) on standardised"
    " features, weights mapped back to the raw features; every candidate of every single-generator pool"
    " (an instance's candidates of one source family, at least two) is one row, labelled by the"
    " SWE-bench harness; features recomputed on that pool; S from the static rubric grounded in the"
    " repository where it was at hand, else the issue-only static rubric rebuilt on the pool"
)


def fit_weights(
    rows: Sequence[dict[str, float]], labels: Sequence[int], features: Sequence[str], c: float = 1.0
) -> tuple[dict[str, float], float]:
    """Logistic regression on standardised features, returned as weights on the raw features."""
    import numpy as np
    from sklearn.linear_model import LogisticRegression
    from threadpoolctl import threadpool_limits

    x = np.array([[r[f] for f in features] for r in rows], dtype=float)
    mean, std = x.mean(axis=0), x.std(axis=0)
    std[std == 0] = 1.0
    # one BLAS thread: at a few thousand rows OpenBLAS's threads only spin (3-4x the CPU, same fit)
    with threadpool_limits(limits=1, user_api="blas"):
        model = LogisticRegression(C=c, max_iter=5000).fit((x - mean) / std, np.array(labels))
    coef = model.coef_[0] / std
    bias = float(model.intercept_[0] - (coef * mean).sum())
    return {f: float(w) for f, w in zip(features, coef, strict=True)}, bias


def _rows(pools: Iterable[Any]) -> tuple[list[dict[str, float]], list[int]]:
    rows, ys = [], []
    for p in pools:
        for cid, r in p.rows.items():
            rows.append(r)
            ys.append(int(p.labels[cid]))
    return rows, ys


def content_weights(pools: Sequence[Any], fitted_on: dict[str, Any]) -> ContentWeights:
    """The content weights fitted on ``pools`` (each with ``rows``, ``labels``, ``instance_id``)."""
    weights, bias = fit_weights(*_rows(pools), CONTENT_FEATURES)
    ids = {p.instance_id for p in pools}
    return ContentWeights(
        weights={k: round(v, 6) for k, v in weights.items()},
        bias=round(bias, 6),
        fitted_on=fitted_on,
        fit_ids=frozenset(instance_hash(i) for i in ids),
    )


def loro_weights(pools: Sequence[Any], repos: Iterable[str]) -> dict[str, ContentWeights]:
    """Per repository, the weights fitted on the other repositories' single-generator pools."""
    return {
        repo: content_weights([p for p in pools if p.repo != repo], {"left_out_repository": repo})
        for repo in sorted(set(repos))
    }


def provenance(data: Path, pools_by_family: dict[str, list[Any]], command: str) -> dict[str, Any]:
    """What the shipped weights were fitted on (no instance id: those go in as hashes)."""
    pools = [p for ps in pools_by_family.values() for p in ps]
    return {
        "data": data.name,
        "data_sha256": hashlib.sha256(data.read_bytes()).hexdigest(),
        "pools": {
            fam: {"pools": len(ps), "candidates": sum(len(p.labels) for p in ps)}
            for fam, ps in pools_by_family.items()
        },
        "instances": len({p.instance_id for p in pools}),
        "candidates": sum(len(p.labels) for p in pools),
        "method": FIT_METHOD,
        "command": command,
    }
