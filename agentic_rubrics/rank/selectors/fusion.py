"""Fusion selectors: a weighted combination of other selectors' values and content features.

Named in ``--selectors`` (or ``selectors`` of a configuration) three ways:

- ``fusion:self_consistency*2+rubric``: signals joined by ``+``, each with an optional ``*weight``
  (1 by default; a negative weight means lower is better: ``content.new_error*-1``), normalised per
  task by rank (:mod:`agentic_rubrics.rank.fusion`); ``fusion-minmax:...`` normalises by min-max;
- ``rrf:self_consistency+rubric``: reciprocal rank fusion of the same;
- ``fitted:weights.json``: the fusion ``agentic-rubrics fit`` wrote, with its provenance and its
  cross-validated evidence, which the report states.

A signal is a selector's name (its values: ``rubric`` gives S, ``self_consistency`` the line agreement,
``patch_classifier`` its P(YES) — a selector whose features need a model must be named in the run too —
or a ``module:attribute`` of your own, such as a tests pass rate) or ``content.<feature>``, one of the
content features every run stores (:data:`CONTENT_SIGNALS`). A fusion is not a signal of another.
"""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import ConfigError, DataError
from agentic_rubrics.rank.fusion import FittedFusion, Fusion, Values, fuse, read_fusion_file
from agentic_rubrics.rank.selectors import (
    BaseSelector,
    Ranking,
    RankingInput,
    check_names,
    get_selector,
    is_fusion_name,
    stored,
)

PREFIXES = {"fusion": "rank", "fusion-minmax": "minmax", "rrf": "rrf"}
"""Name prefix -> normalisation of a fusion given by its signals (``fitted:PATH``: a weights file)."""
CONTENT_SIGNALS = (
    "file_agreement",
    "func_agreement",
    "not_applied",
    "new_error",
    "removes_used",
    "log_changed_lines",
    "files",
    "new_files",
    "touches_tests",
)
"""The judge-time content features (``content_features``, :mod:`agentic_rubrics.rank.content`) a
fusion may use as ``content.<name>``. The last four are the patch's shape, which mostly tells who wrote
it (see benchmarks/README.md)."""
_TERM = re.compile(r"^\s*([A-Za-z_][\w.:]*)\s*(?:\*\s*([-+]?[\d.]+(?:[eE][-+]?\d+)?))?\s*$")


def parse_fusion(name: str) -> Fusion:
    """The fusion a name such as ``fusion:self_consistency*2+rubric`` gives (a ``ConfigError`` saying
    what is expected otherwise)."""
    prefix, _, spec = name.partition(":")
    weights: dict[str, float] = {}
    for term in spec.split("+"):
        found = _TERM.match(term)
        if found is None:
            raise ConfigError(
                f"selector {name!r}: {term!r} is not a signal; expected {prefix}:SIGNAL[*WEIGHT]+..."
                " with SIGNAL a selector's name or content.<feature>"
            )
        signal, weight = found.group(1), float(found.group(2) or 1.0)
        if signal in weights or not math.isfinite(weight):
            raise ConfigError(f"selector {name!r}: {signal!r} given twice or with no finite weight")
        check_signal(signal, name)
        weights[signal] = weight
    return Fusion(weights=weights, method=PREFIXES[prefix])


def check_signal(signal: str, owner: str) -> None:
    """Refuse a signal a fusion cannot read (a ``ConfigError`` naming the fusion and the signal)."""
    if signal.startswith("content."):
        if signal.removeprefix("content.") not in CONTENT_SIGNALS:
            raise ConfigError(
                f"selector {owner!r}: unknown content feature {signal!r}; known:"
                f" {', '.join('content.' + s for s in CONTENT_SIGNALS)}"
            )
    elif is_fusion_name(signal) or signal == owner:
        raise ConfigError(f"selector {owner!r}: a fusion is not a signal of another ({signal!r})")
    else:
        try:
            check_names([signal])
        except ValueError as exc:
            raise ConfigError(f"selector {owner!r}: unknown selector {signal!r}: {exc}") from exc


def signal_values(task: RankingInput, signal: str) -> Values:
    """One signal's per-candidate values in a task (a ``DataError`` when the run holds none)."""
    if signal.startswith("content."):
        features = stored(task, "content_features", "offline_content")
        key = signal.removeprefix("content.")
        return {c: (features.get(c) or {}).get(key) for c in task.scores}
    selector = get_selector(signal)
    return selector.values(task, selector.ranking(task))


class FusionSelector(BaseSelector):
    """A :class:`~agentic_rubrics.rank.fusion.Fusion` as a selector (see the module's docstring)."""

    def __init__(self, fusion: Fusion, name: str, fitted: FittedFusion | None = None) -> None:
        self.fusion, self.name, self.fitted = fusion, name, fitted
        terms = " + ".join(f"{w:g}·{s}" for s, w in fusion.weights.items())
        self.description = f"fusion ({fusion.method}-normalised per task) of {terms}"
        for signal in fusion.weights:
            check_signal(signal, name)

    def ranking(self, task: RankingInput) -> Ranking:
        signals = {}
        for signal, weight in self.fusion.weights.items():
            if weight == 0:
                continue
            try:
                signals[signal] = signal_values(task, signal)
            except (DataError, ConfigError) as exc:
                raise DataError(
                    f"selector {self.name!r} needs the signal {signal!r}: {exc}; a selector whose"
                    " features need a model must be named in the run's selectors too"
                ) from exc
        fused = fuse(signals, self.fusion, task.scores)
        # an empty patch ranks last, whatever its signals (as for rubric and self_consistency)
        return {c: None if s.empty_patch else fused[c] for c, s in task.scores.items()}

    def fitted_on(self, instance_ids: list[str]) -> dict[str, Any] | None:
        if self.fitted is None:
            return None
        runs = self.fitted.fitted_on.get("runs")
        return {
            "data": f"{len(runs)} labelled run(s)" if isinstance(runs, list) else "?",
            **self.fitted.fitted_on,
            "weights_sha256": self.fitted.sha256,
            "out_of_sample": self.fitted.evidence,
            "run_instances_in_fit": self.fitted.in_fit(instance_ids),
        }


def fusion_selector(name: str) -> FusionSelector:
    """The selector a fusion name gives: ``fitted:PATH`` reads the weights file (relative to the
    current directory), the others their signals."""
    prefix, _, rest = name.partition(":")
    if prefix != "fitted":
        return FusionSelector(parse_fusion(name), name)
    fitted = read_fusion_file(Path(rest))
    try:
        return FusionSelector(fitted.fusion, name, fitted)
    except ConfigError as exc:
        raise DataError(f"{rest}: field 'fusion.weights': {exc}") from exc
