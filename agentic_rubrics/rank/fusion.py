"""Fusion: a weighted combination of several signals' per-candidate values, normalised per task.

A *signal* is any per-candidate value a run holds: a selector's values (``rubric``: S,
``self_consistency``: line agreement, ``patch_classifier``, a user's own selector such as a tests pass
rate) or one of the content features (``content.func_agreement`` ...). Within each task every signal is
normalised over the candidates that have it:

- ``rank`` (the default): the candidate's rank among them, ties averaged, scaled to [0, 1];
- ``minmax``: ``(v - min) / (max - min)``;
- ``rrf`` (reciprocal rank fusion, Cormack et al. 2009): ``1 / (k + rank)``, rank 1 the best, ties
  averaged, ``k`` = :data:`RRF_K` by default.

A signal equal for every candidate that has it says nothing in that task: each of them gets the middle
(0.5; for ``rrf`` the shared average rank). A weight's sign is its direction (a negative weight: lower is
better, the value is taken as ``1 - z``, or its rank counted from the other end). The fused value of a
candidate is the mean of its normalised signals weighted by ``|w|`` over **the signals it has**: a
missing value is excluded and the weights renormalised, never read as 0. A candidate with no signal at
all has no value (ranked last). With every signal present the ranking is that of ``Σ w·z``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import ConfigError, DataError
from agentic_rubrics.runfolder.files import parse_json

Values = Mapping[str, float | None]
"""Candidate id -> a signal's value (``None``: the candidate has none)."""

METHODS = ("rank", "minmax", "rrf")
RRF_K = 60.0
"""Reciprocal rank fusion's constant (Cormack, Clarke and Büttcher 2009)."""
WEIGHTS_SCHEMA = "agentic-rubrics/fusion-weights/1"
"""The version of a fitted weights file (:func:`read_fusion_file`)."""


@dataclass(frozen=True)
class Fusion:
    """Signals and their weights, and how each is normalised per task."""

    weights: dict[str, float]
    method: str = "rank"
    rrf_k: float = RRF_K

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise ConfigError(
                f"fusion method {self.method!r}: expected one of {', '.join(METHODS)}"
            )
        if not self.weights or not any(w != 0 for w in self.weights.values()):
            raise ConfigError("a fusion needs at least one signal with a weight other than 0")
        bad = {k: w for k, w in self.weights.items() if not math.isfinite(w)}
        if bad or not math.isfinite(self.rrf_k) or self.rrf_k < 0:
            raise ConfigError(f"fusion weights must be finite numbers (and rrf_k >= 0): {bad}")

    def to_json(self) -> dict[str, Any]:
        return {"method": self.method, "weights": dict(self.weights), "rrf_k": self.rrf_k}


def _ranks(present: Mapping[str, float]) -> dict[str, float]:
    """1-based ranks, the highest value first, ties sharing their average rank."""
    ordered = sorted(present.values(), reverse=True)
    first: dict[float, int] = {}
    count: dict[float, int] = {}
    for pos, v in enumerate(ordered, start=1):
        first.setdefault(v, pos)
        count[v] = count.get(v, 0) + 1
    return {c: first[v] + (count[v] - 1) / 2 for c, v in present.items()}


def normalise(
    values: Values, method: str = "rank", rrf_k: float = RRF_K
) -> dict[str, float | None]:
    """One task's values of one signal, normalised over the candidates that have one (see the
    module's docstring); ``None`` stays ``None``."""
    present = {c: float(v) for c, v in values.items() if v is not None and math.isfinite(v)}
    out: dict[str, float | None] = dict.fromkeys(values)
    if not present:
        return out
    if method == "rrf":
        out.update({c: 1.0 / (rrf_k + r) for c, r in _ranks(present).items()})
        return out
    lo, hi = min(present.values()), max(present.values())
    if hi == lo:
        out.update(dict.fromkeys(present, 0.5))
    elif method == "minmax":
        out.update({c: (v - lo) / (hi - lo) for c, v in present.items()})
    else:
        n = len(present)
        out.update({c: (n - r) / (n - 1) for c, r in _ranks(present).items()})
    return out


def _oriented(z: float, weight: float, method: str, rrf_k: float, n: int) -> float:
    """A normalised value turned so that higher is better under the weight's sign."""
    if weight > 0:
        return z
    if method == "rrf":  # the rank counted from the other end
        rank = 1.0 / z - rrf_k
        return 1.0 / (rrf_k + n + 1 - rank)
    return 1.0 - z


def fuse(
    signals: Mapping[str, Values], fusion: Fusion, candidates: Iterable[str]
) -> dict[str, float | None]:
    """Each candidate's fused value (see the module's docstring). ``signals``: signal name -> that
    signal's values in this task; a signal of the fusion absent from ``signals`` is a ``DataError``."""
    ids = list(candidates)
    total = dict.fromkeys(ids, 0.0)
    weight = dict.fromkeys(ids, 0.0)
    for name, w in fusion.weights.items():
        if w == 0:
            continue
        if name not in signals:
            raise DataError(f"fusion signal {name!r}: no values for it")
        raw = {c: signals[name].get(c) for c in ids}
        n = sum(1 for v in raw.values() if v is not None and math.isfinite(v))
        for c, z in normalise(raw, fusion.method, fusion.rrf_k).items():
            if z is not None:
                total[c] += abs(w) * _oriented(z, w, fusion.method, fusion.rrf_k, n)
                weight[c] += abs(w)
    return {c: total[c] / weight[c] if weight[c] else None for c in ids}


def instance_sha256(instance_id: str) -> str:
    """How a weights file names a fitted instance: the sha256 of its id."""
    return hashlib.sha256(instance_id.encode("utf-8", "surrogatepass")).hexdigest()


@dataclass(frozen=True)
class FittedFusion:
    """A fusion read from a weights file, with what it was fitted on and its cross-validated evidence."""

    fusion: Fusion
    fitted_on: dict[str, Any]
    evidence: dict[str, Any]
    fit_ids: frozenset[str] = field(default_factory=frozenset)
    sha256: str = ""
    """The weights file's own sha256 (the report names the file it used)."""

    def in_fit(self, instance_ids: Iterable[str]) -> int:
        return sum(1 for i in set(instance_ids) if instance_sha256(i) in self.fit_ids)

    def to_json(self) -> dict[str, Any]:
        return {
            "schema": WEIGHTS_SCHEMA,
            "fusion": self.fusion.to_json(),
            "fitted_on": self.fitted_on,
            "evidence": self.evidence,
            "fit_instance_sha256": sorted(self.fit_ids),
        }


def _field(raw: Any, key: str, kind: type, path: Path) -> Any:
    value = raw.get(key) if isinstance(raw, dict) else None
    if not isinstance(value, kind) or isinstance(value, bool):
        raise DataError(f"{path}: field {key!r} must be a {kind.__name__}, got {value!r:.80}")
    return value


def read_fusion_file(path: Path) -> FittedFusion:
    """A weights file written by ``agentic-rubrics fit`` (a :class:`DataError` naming the file and the
    field when it is not one, or is of another version)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: not a fusion weights file ({type(exc).__name__}: {exc})") from exc
    # a located error, also for 100,000 nested lists
    raw = parse_json(data, f"{path}: not a fusion weights file")
    if not isinstance(raw, dict) or raw.get("schema") != WEIGHTS_SCHEMA:
        got = raw.get("schema") if isinstance(raw, dict) else type(raw).__name__
        raise DataError(f"{path}: schema is {got!r}; this version reads {WEIGHTS_SCHEMA!r}")
    spec = _field(raw, "fusion", dict, path)
    weights = _field(spec, "weights", dict, path)
    if not all(isinstance(w, int | float) and not isinstance(w, bool) for w in weights.values()):
        raise DataError(f"{path}: field 'fusion.weights' must map signal names to numbers")
    hashes = _field(raw, "fit_instance_sha256", list, path)
    try:
        fusion = Fusion(
            weights={str(k): float(w) for k, w in weights.items()},
            method=str(spec.get("method", "rank")),
            rrf_k=float(spec.get("rrf_k", RRF_K)),
        )
    except (ConfigError, TypeError, ValueError) as exc:
        raise DataError(f"{path}: field 'fusion': {exc}") from exc
    return FittedFusion(
        fusion=fusion,
        fitted_on=_field(raw, "fitted_on", dict, path),
        evidence=_field(raw, "evidence", dict, path),
        fit_ids=frozenset(str(h) for h in hashes),
        sha256=hashlib.sha256(data).hexdigest(),
    )
