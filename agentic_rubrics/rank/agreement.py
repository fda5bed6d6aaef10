"""Agreement between the candidates of a task: the self-consistency ranking and what the report says of it.

Two candidates agree as much as their changed lines do (:func:`agentic_rubrics.patch.changed_lines`):
``2 LCS(A, B) / (|A| + |B|)``; a candidate's value is the mean over the other candidates.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Any

from agentic_rubrics.patch import changed_lines

Ranking = dict[str, float | None]

SIMILARITY = "indel-lines"
"""The name recorded with every task's agreement values (see :func:`line_similarity`)."""
SIMILARITY_MAX_LINES = 10_000
"""Changed lines of a patch that agreement compares: the first ones; a longer patch is capped (and
the report says how many candidates were)."""


def line_similarity(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """rapidfuzz's normalized Indel similarity of two sequences of lines.

    ``1 - (|a| + |b| - 2 LCS(a, b)) / (|a| + |b|) = 2 LCS(a, b) / (|a| + |b|)``, where LCS is the
    length of the longest common subsequence of the two sequences (lines compared whole, exactly);
    0.0 when either is empty: a candidate with no changed lines (not a diff, or only a binary file,
    a mode or a name changed) shares nothing, not even with another such candidate, so that three
    replies of prose cannot outvote the real changes. Bit-parallel: about ``|a| |b| / 64``
    machine-word steps.
    """
    if not a or not b:
        return 0.0
    from rapidfuzz.distance import Indel

    return float(Indel.normalized_similarity(a, b))


def line_agreement(
    patches: Mapping[str, str],
    max_lines: int = SIMILARITY_MAX_LINES,
    similarity: Callable[[Sequence[int], Sequence[int]], float] = line_similarity,
) -> tuple[Ranking, list[str]]:
    """Self-consistency values and the candidates whose changed lines were capped at ``max_lines``.

    Each distinct sequence of changed lines is compared once with each other one (identical patches
    share a row, and agree with each other fully); lines are numbered per pool, so the comparison is
    exact. A candidate's value is the mean of its ``similarity`` to every other candidate (one with
    no changed lines agrees with none: see :func:`line_similarity`).
    """
    numbers: dict[str, int] = {}
    keyed: dict[str, tuple[int, ...]] = {}
    capped = []
    for cid, patch in patches.items():
        lines = changed_lines(patch)
        if len(lines) > max_lines:
            capped.append(cid)
        keyed[cid] = tuple(numbers.setdefault(ln, len(numbers)) for ln in lines[:max_lines])
    distinct = list(dict.fromkeys(keyed.values()))
    row = {seq: n for n, seq in enumerate(distinct)}
    # identical changes agree fully; no change agrees with nothing, itself included
    sims = [[1.0 if seq else 0.0] * len(distinct) for seq in distinct]
    for i, a in enumerate(distinct):
        for j in range(i + 1, len(distinct)):
            sims[i][j] = sims[j][i] = similarity(a, distinct[j])
    sizes = [0] * len(distinct)
    for seq in keyed.values():
        sizes[row[seq]] += 1
    others = len(keyed) - 1
    out: Ranking = {}
    for cid, seq in keyed.items():
        i = row[seq]
        # every other candidate once; fsum: the same value whatever the order of the pool
        total = math.fsum([*(sizes[j] * sims[i][j] for j in range(len(distinct))), -sims[i][i]])
        out[cid] = total / others if others else None
    return out, capped


def self_consistency_ranking(patches: Mapping[str, str]) -> Ranking:
    """Self-consistency: for each candidate, the mean over the other candidates of
    :func:`line_similarity` on the ``+``/``-`` lines of the two diffs (the first
    :data:`SIMILARITY_MAX_LINES` of each).

    A pool of one has no other candidate to agree with: its value is ``None``; so is the value of a
    candidate with no changed line (an empty patch, a reply that is not a diff): the
    ``self_consistency`` selector never picks one, and neither does :func:`~agentic_rubrics.select`
    over these values.
    """
    values = line_agreement(patches)[0]
    return {c: v if changed_lines(patches[c]) else None for c, v in values.items()}


def similarity_summary(stored: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
    """What the report says about agreement: the measure, the line cap and how many were capped.

    ``None`` when no task recorded agreement values. Tasks computed before the measure was recorded
    used ``difflib``'s ratio; a run mixing both says so in ``measures``.
    """
    measures: dict[str, int] = {}
    capped = max_lines = 0
    for baselines in stored:  # each task's selector features (its progress row's ``baselines``)
        if "self_consistency" not in baselines and "offline_features" not in baselines:
            continue
        record = baselines.get("similarity") or {"measure": "difflib-ratio"}
        measures[record["measure"]] = measures.get(record["measure"], 0) + 1
        capped += int(record.get("capped", 0))
        max_lines = max(max_lines, int(record.get("max_lines", 0)))
    if not measures:
        return None
    return {
        "measures": dict(sorted(measures.items())),
        "max_lines": max_lines or None,
        "capped_candidates": capped,
    }
