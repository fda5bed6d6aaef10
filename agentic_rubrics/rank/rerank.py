"""Selection per task, and the rankings the selectors of :mod:`agentic_rubrics.rank.selectors` compute.

A selector maps each candidate of a task to a ranking value (higher is better, ``None`` lowest). The
realised selection is the top-ranked candidate; ties are broken by the smallest
``sha256(f"{seed}:{instance_id}:{candidate_id}")`` — deterministic, independent of the order of the
candidates in the file, and uniform over the tied candidates across tasks. Expected Best@K treats ties
as uniform instead (see :func:`agentic_rubrics.rank.metrics.best_at_k`); the report gives both.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.payloads import Completion
from agentic_rubrics.text import has_lone_surrogates
from agentic_rubrics.types import CandidateScore, Selection

if TYPE_CHECKING:
    from agentic_rubrics.protocols import Model

Ranking = dict[str, float | None]

BASE_SELECTORS = ["offline_content", "offline", "rubric", "self_consistency", "random"]
"""The default selectors without a judge model (``offline_content`` leads: the no-model ranking that
does best on pools of one agent's samples, a user's Best@K; see benchmarks/README.md)."""
MODEL_SELECTORS = [
    "rubric",
    "offline_content",
    "offline",
    "self_consistency",
    "random",
    "patch_classifier",
]
"""The default selectors with a judge model (``rubric`` leads, ``patch_classifier`` joins)."""


def tie_break_key(seed: int, instance_id: str, candidate_id: str) -> str:
    """The documented deterministic tie-break: the smallest hash wins."""
    return hashlib.sha256(f"{seed}:{instance_id}:{candidate_id}".encode()).hexdigest()


def select(
    instance_id: str, ranking: Mapping[str, float | None], selector: str, seed: int = 0
) -> Selection:
    """The top-ranked candidate of one task, ties broken by :func:`tie_break_key`."""
    if not ranking:
        return Selection(
            instance_id=instance_id,
            selector=selector,
            candidate_id=None,
            score=None,
            tied=0,
            pool_size=0,
        )

    def key(cid: str) -> tuple[int, float]:
        value = ranking[cid]
        return (0, 0.0) if value is None else (1, value)

    top = max(key(c) for c in ranking)
    tied = sorted(
        (c for c in ranking if key(c) == top), key=lambda c: tie_break_key(seed, instance_id, c)
    )
    pick = tied[0]
    return Selection(
        instance_id=instance_id,
        selector=selector,
        candidate_id=pick,
        score=ranking[pick],
        tied=len(tied),
        pool_size=len(ranking),
    )


def rubric_ranking(scores: Mapping[str, CandidateScore]) -> Ranking:
    """The rubric selector: each candidate's tiered ranking value."""
    return {cid: s.rank_value for cid, s in scores.items()}


def random_ranking(candidate_ids: list[str]) -> Ranking:
    """The random selector: all tied, so selection is the uniform tie-break."""
    return dict.fromkeys(candidate_ids, 0.0)


_HUNK = re.compile(r"@@ -\d{1,10}(?:,(\d{1,10}))? \+\d{1,10}(?:,(\d{1,10}))? @@")
"""A hunk header; counts of more than ten digits are no hunk (git calls such a patch corrupt)."""


def changed_lines(patch: str) -> list[str]:
    """The ``+``/``-`` lines of a diff's hunks (CRLF read as LF), as many as each ``@@`` header
    counts, the way ``git apply`` reads them.

    So a removed line whose text starts with ``--`` (a SQL comment, a YAML separator) or an added one
    starting with ``++`` is a change, and nothing outside a hunk is: not the ``---``/``+++`` file
    headers, not the ``-- `` signature or the commit message of a ``git format-patch`` mail, not a
    line past what a hunk's header counts. Text with no hunk (not a diff) has no changed lines.
    """
    out: list[str] = []
    old = new = 0  # lines of the current hunk still to come
    for line in patch.replace("\r\n", "\n").split("\n"):
        if old > 0 or new > 0:
            tag = line[:1]
            if tag == "-" and old > 0:
                out.append(line)
                old -= 1
                continue
            if tag == "+" and new > 0:
                out.append(line)
                new -= 1
                continue
            if tag in (" ", "") and old > 0 and new > 0:  # context (a blank one may lose its space)
                old, new = old - 1, new - 1
                continue
            if tag == "\\":  # "\ No newline at end of file"
                continue
            old = new = 0  # not a line this hunk holds: it is over
        hunk = _HUNK.match(line)
        if hunk is not None:
            old = 1 if hunk.group(1) is None else int(hunk.group(1))
            new = 1 if hunk.group(2) is None else int(hunk.group(2))
    return out


SIMILARITY = "indel-lines"
"""The name recorded with every task's agreement values (see :func:`line_similarity`)."""
SIMILARITY_MAX_LINES = 10_000
"""Changed lines of a patch that agreement compares: the first ones; a longer patch is capped (and
the report says how many candidates were)."""


def line_similarity(a: Sequence[Hashable], b: Sequence[Hashable]) -> float:
    """rapidfuzz's normalized Indel similarity of two sequences of lines.

    ``1 - (|a| + |b| - 2 LCS(a, b)) / (|a| + |b|) = 2 LCS(a, b) / (|a| + |b|)``, where LCS is the
    length of the longest common subsequence of the two sequences (lines compared whole, exactly);
    1.0 for two empty sequences. Bit-parallel: about ``|a| |b| / 64`` machine-word steps.
    """
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
    exact. A candidate's value is the mean of its ``similarity`` to every other candidate.
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
    sims = [[1.0] * len(distinct) for _ in distinct]
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
        total = math.fsum([*(sizes[j] * sims[i][j] for j in range(len(distinct))), -1.0])
        out[cid] = total / others if others else None
    return out, capped


def self_consistency_ranking(patches: Mapping[str, str]) -> Ranking:
    """Self-consistency: for each candidate, the mean over the other candidates of
    :func:`line_similarity` on the ``+``/``-`` lines of the two diffs (the first
    :data:`SIMILARITY_MAX_LINES` of each).

    A pool of one has no other candidate to agree with: its value is ``None``.
    """
    return line_agreement(patches)[0]


# --------------------------------------------------------------------------- the patch classifier

# linear on any reply: one possessive run of spaces and stars, no two quantifiers over the same text
_ANSWER = re.compile(r"^[\s*]*+(YES|NO)\b[\s:,*-]*+([01](?:\.\d+)?|\.\d+)?", re.I | re.M)


def _probability(logprob: Any) -> float | None:
    """exp(logprob) for a usable log-probability (a finite number <= 0), else ``None``."""
    if isinstance(logprob, bool) or not isinstance(logprob, int | float):
        return None
    if not math.isfinite(logprob) or logprob > 0:
        return None  # null, NaN, 1000 ...: a provider's garbage, not a probability
    return math.exp(logprob)


def _from_logprobs(logprobs: list[dict[str, Any]]) -> float | None:
    first = logprobs[0]
    alternatives = first.get("top_logprobs") or [first]
    yes = no = 0.0
    for alt in alternatives:
        p = _probability(alt.get("logprob"))
        if p is None:
            return None  # one absurd value discredits the whole list: fall back to the text
        token = str(alt.get("token", "")).strip().upper()
        if token.startswith("YES") or token == "Y":
            yes += p
        elif token.startswith("NO") or token == "N":
            no += p
    return yes / (yes + no) if yes + no > 0 else None


def yes_probability(completion: Completion) -> float | None:
    """P(the patch resolves the issue) from a YES/NO answer.

    From the first token's log-probabilities when the provider returns usable ones (normalised over
    the YES and NO alternatives); otherwise from the probability written after YES/NO; otherwise 1 or 0
    from the bare answer. ``None`` when the reply holds no answer.
    """
    if completion.logprobs:
        found = _from_logprobs(completion.logprobs)
        if found is not None:
            return found
    match = _ANSWER.search(completion.content or "")
    if match is None:
        return None
    if match.group(2) is not None:
        return min(1.0, max(0.0, float(match.group(2))))
    return 1.0 if match.group(1).upper() == "YES" else 0.0


CLASSIFIER_ANSWER_TOKENS = 32
"""The classifier's answer budget ("YES 0.8" and a little slack), before any reasoning reserve."""


class PatchClassifier:
    """The patch-classifier baseline: the model judges a patch from the issue alone (no rubric)."""

    def __init__(self, llm: Model) -> None:
        from agentic_rubrics.prompts import load_prompt

        self.llm = llm
        self.prompt = load_prompt("patch_classifier")

    async def score(self, issue: str, patch: str, *, task: str) -> float | None:
        """P(YES) for one patch; ``None`` for an empty patch or a failed or unreadable answer."""
        from agentic_rubrics.exceptions import BudgetExceeded
        from agentic_rubrics.llm.door import CallFailed

        if is_empty_patch(patch) or has_lone_surrogates(patch):
            return None  # nothing to judge, or not text: never sent
        messages = self.prompt.messages(issue=issue, patch=patch)
        try:
            completion = await self.llm.complete(
                messages,
                phase="classifier",
                task=task,
                # the answer is one short line; a reasoning model gets its reasoning reserve on top
                answer_tokens=CLASSIFIER_ANSWER_TOKENS,
                # sent where litellm says the model returns them; else the written probability is read
                logprobs=True,
                top_logprobs=5,
            )
        except (CallFailed, BudgetExceeded):
            return None
        return yes_probability(completion)


# --------------------------------------------------------------------------- the offline ranking

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


OFFLINE_WEIGHTS: dict[str, float] = {
    "s": 8.1448,
    "s_rel_max": -6.0336,
    "agreement": 5.0075,
    "agreement_rel_max": 1.1301,
    "agreement_rel_mean": -2.6837,
    "file_agreement": 0.4934,
    "file_agreement_rel_max": 0.8592,
    "log_changed_lines": -0.6492,
    "log_changed_lines_rel_median": 0.6433,
    "files": 0.0475,
    "new_files": -0.3024,
    "touches_tests": 1.1339,
}
"""Logistic-regression weights on the raw features, fitted on every full-run candidate of the SWE-bench
Lite development file (202 instances, 2591 candidates; ``weights_fitted_on_all`` of
``python benchmarks/swebench_rerank.py --data lite_candidates.jsonl.gz``, refitted when agreement became
the Indel similarity of :func:`line_similarity`). The benchmark reports the ranking with weights
refitted leaving each repository out, not these in-sample ones."""
OFFLINE_BIAS = -9.048


def offline_ranking(
    features: Mapping[str, dict[str, float] | None],
    scores: Mapping[str, float | None],
    weights: Mapping[str, float] | None = None,
    bias: float | None = None,
) -> Ranking:
    """The offline ranking: a linear score over :data:`OFFLINE_FEATURES` (empty or unparsable: last)."""
    w = OFFLINE_WEIGHTS if weights is None else weights
    b = OFFLINE_BIAS if bias is None else bias
    rows = offline_feature_rows(features, scores)
    out: Ranking = dict.fromkeys(features)
    for cid, row in rows.items():
        out[cid] = b + sum(w.get(k, 0.0) * row[k] for k in OFFLINE_FEATURES)
    return out


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
