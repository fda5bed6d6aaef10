"""The report's bootstrap intervals, each computed once and remembered in the run folder.

:class:`Intervals` computes each interval once and keeps it in a small JSON file of the run folder,
keyed by a hash of everything it depends on (the statistic, the values, resamples, level, seed and the
version of this algorithm): a ``report`` rerun on an unchanged folder reads it back, and any change of
the inputs misses the cache and computes afresh. A remembered entry is used only where it fits the
data: within the range the statistic can take, blank only where the statistic is undefined, and
holding the statistic's own value; any other is computed again.
The numerics are :mod:`agentic_rubrics.rank.bootstrap`'s.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.bootstrap import (
    ALGORITHM,
    MAX_CACHED,
    AucKind,
    Interval,
    auc_interval,
    finite,
    mean_interval,
    resample_counts,
)

log = logging.getLogger(__name__)


class Intervals:
    """The report's intervals: computed once for given inputs, remembered in ``cache_path``.

    ``n_resamples`` 0 turns intervals off (every one is ``None``).
    """

    def __init__(
        self,
        n_resamples: int,
        *,
        level: float = 0.95,
        seed: int = 0,
        cache_path: Path | None = None,
    ) -> None:
        self.n_resamples, self.level, self.seed = n_resamples, level, seed
        self.cache_path = cache_path
        self._counts: dict[int, Any] = {}
        self._stored = _read_cache(cache_path) if cache_path is not None else {}
        self._used: dict[str, list[float] | None] = {}
        self.computed = 0
        """Intervals computed by this object (the rest came from the cache)."""

    def _key(self, kind: str, payload: Any) -> str:
        blob = json.dumps(
            [ALGORITHM, kind, self.n_resamples, self.level, self.seed, payload],
            separators=(",", ":"),
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def _counts_for(self, n: int) -> Any:
        if n not in self._counts:
            self._counts[n] = resample_counts(n, self.n_resamples, self.seed)
        return self._counts[n]

    def resamples(self, n: int) -> Any:
        """The resample counts over ``n`` units every interval of this object uses: two statistics
        of the same units are paired (``None`` with resampling off)."""
        return self._counts_for(n) if self.n_resamples else None

    def _remembered(
        self, key: str, compute: Any, bounds: tuple[float, float], point: Any
    ) -> Interval:
        found = self._stored.get(key)
        if key not in self._stored or not _consistent(found, bounds, point):
            interval = compute()
            self.computed += 1
            found = None if interval is None else [interval[0], interval[1]]
        self._used[key] = found
        return None if found is None else (found[0], found[1])

    def mean(self, values: Sequence[float | None]) -> Interval:
        """The interval of the mean over units (``None``: undefined)."""
        if self.n_resamples == 0 or not values:
            return None
        floats = [None if v is None else float(v) for v in values]
        key = self._key("mean", floats)
        defined = [v for v in floats if v is not None]
        bounds = (min(defined), max(defined)) if defined else (math.inf, -math.inf)
        return self._remembered(
            key,
            lambda: mean_interval(self._counts_for(len(values)), values, self.level),
            bounds,
            lambda: metrics.mean(floats),
        )

    def auc(self, groups: Sequence[Sequence[tuple[float, int]]], kind: AucKind) -> Interval:
        """The interval of ROC-AUC or average precision over units' pooled pairs."""
        if self.n_resamples == 0 or not groups:
            return None
        payload = [[[float(s), int(y)] for s, y in g] for g in groups]
        key = self._key(kind, payload)
        statistic = metrics.roc_auc if kind == "roc_auc" else metrics.pr_auc
        return self._remembered(
            key,
            lambda: auc_interval(self._counts_for(len(groups)), groups, kind, self.level),
            (0.0, 1.0),
            lambda: statistic(
                [float(s) for g in groups for s, _ in g], [int(y) for g in groups for _, y in g]
            ),
        )

    def save(self) -> None:
        """Write the cache (this report's intervals first) if anything new was computed."""
        if self.cache_path is None or not self.computed:
            return
        from agentic_rubrics.runfolder.files import atomic_write_text

        kept = dict(self._used)
        for key, value in self._stored.items():
            if len(kept) >= MAX_CACHED:
                break
            kept.setdefault(key, value)
        try:
            doc = {"schema": ALGORITHM, "intervals": kept}
            # not flushed to disk: losing the file costs a recomputation, never a wrong number
            atomic_write_text(self.cache_path, json.dumps(doc) + "\n", durable=False)
        # a read-only folder: the report is still right, only slower next time
        except OSError as exc:
            log.info("%s: intervals not remembered: %s", self.cache_path, exc)


def _consistent(found: list[float] | None, bounds: tuple[float, float], point: Any) -> bool:
    """Whether a remembered interval can be this statistic's: blank only where the statistic is
    undefined on the data itself, else within the range it can take and holding its value on the data
    (a percentile interval that does not is computed again at every report: slower, never wrong)."""
    value: float | None = point()
    if found is None or value is None:
        return found is None and value is None
    slack = 1e-9 * max(1.0, abs(value))  # the point and the interval are rounded differently
    low, high = found
    return bounds[0] <= low <= high <= bounds[1] and low - slack <= value <= high + slack


def _read_cache(path: Path) -> dict[str, list[float] | None]:
    """The remembered intervals; anything unreadable or malformed is ignored (recomputed)."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):  # deep nesting: RecursionError
        return {}
    if not isinstance(doc, dict) or doc.get("schema") != ALGORITHM:
        return {}
    entries = doc.get("intervals")
    if not isinstance(entries, dict):
        return {}
    out: dict[str, list[float] | None] = {}
    for key, value in entries.items():
        if value is None:
            out[key] = None
        elif isinstance(value, list) and len(value) == 2:
            bounds = [finite(v) for v in value]
            if bounds[0] is not None and bounds[1] is not None and bounds[0] <= bounds[1]:
                out[key] = [bounds[0], bounds[1]]
    return out
