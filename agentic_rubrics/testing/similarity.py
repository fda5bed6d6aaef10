"""The shipped fake's patch-similarity judge: a deterministic 1-5 rating from a real comparison.

It reads the request as the real judge's prompt lays it out — the proxy patch and the candidates in
their fences, the labels asked for — and rates each candidate by how much it shares with the proxy:
the mean of the Jaccard overlaps of their changed files and of their changed lines (``+``/``-`` lines,
white space trimmed), mapped to 1-5 as ``1 + round(4 * overlap)``. An identical patch gets 5, one with
nothing in common 1. Not a model: a real comparison, so a run's similarity figures mean something.
"""

from __future__ import annotations

import json
import re
from typing import Any

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.patch import changed_lines, parse_patch
from agentic_rubrics.testing.replies import Reply, message_text

_FENCED = re.compile(r"<<<BEGIN UNTRUSTED (\w+) [0-9a-f]+>>>\n(.*?)\n<<<END UNTRUSTED \1 ", re.S)
_LABELS = re.compile(r"Rate exactly these candidates: (\[[^\n]*\])")
ASKS = "rate how close it is to the reference patch"
"""Words of the similarity judge's system prompt the fake recognises it by."""


def _files(patch: str) -> set[str]:
    try:
        return {f.path for f in parse_patch(patch).files}
    except PatchParseError:
        return set()


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a | b else 0.0


def overlap_rating(proxy: str, candidate: str) -> int:
    """1-5 from the changed files and changed lines the two patches share (see the module doc)."""
    lines_p = {line[1:].strip() for line in changed_lines(proxy)} - {""}
    lines_c = {line[1:].strip() for line in changed_lines(candidate)} - {""}
    overlap = (_jaccard(_files(proxy), _files(candidate)) + _jaccard(lines_p, lines_c)) / 2
    return 1 + round(4 * overlap)


def similarity_answer(body: dict[str, Any]) -> Reply:
    """The reply to one similarity request: a JSON object of ratings for the labels asked for."""
    text = message_text((body.get("messages") or [{}])[-1])
    fenced = _FENCED.findall(text)
    proxy = next((b for kind, b in fenced if kind == "PROXY"), "")
    candidates = [b for kind, b in fenced if kind == "CANDIDATE"]
    found = _LABELS.findall(text)
    labels = [str(x) for x in json.loads(found[-1])] if found else []
    ratings = {
        label: overlap_rating(proxy, patch)
        for label, patch in zip(labels, candidates, strict=False)
    }
    return Reply(content=json.dumps(ratings))
