"""The patch-similarity judge: each candidate rated 1-5 for its semantic closeness to a proxy patch.

Candidates go to the model several per request (``candidates_per_call``), each under a label of the
request (``C1``, ``C2`` ...: never a candidate's own id, which may be anything); identical patches are
rated once, empty ones and ones that are not valid text never sent. The reply is read like the rubric
judge's (:func:`~agentic_rubrics.judge.judges.last_json_object`): a rating is an integer from 1 to 5, and
anything else — a string, a float, a bool, 0, 6, a label given twice with different values — is
``missing: invalid_value``; a truncated, refused, empty or unparsable reply leaves its whole batch
missing with that reason; a label the reply skips is asked again alone, once, then is
``skipped_by_judge``. A score is never invented. Repeats (``judge.repeats``) shuffle the candidates'
order; the rating is the majority of the repeats that gave one, a tie ``split_vote``. Calls go through
the one model door (:mod:`agentic_rubrics.llm.door`): its cache, retries, budget and accounting.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from agentic_rubrics.exceptions import BudgetExceeded
from agentic_rubrics.judge.judges import FAILURE_REASON, last_json_object
from agentic_rubrics.llm.door import LLM, CallFailed
from agentic_rubrics.patch import is_empty_patch, patch_hash
from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.protocols import Completion
from agentic_rubrics.surrogates import has_lone_surrogates

log = logging.getLogger(__name__)

LOW, HIGH = 1, 5
"""The rating scale."""
PHASE = "similarity"
"""The phase its calls are accounted under."""


def normalised(rating: int | None) -> float | None:
    """A 1-5 rating on 0-1: ``(rating - 1) / 4``."""
    return None if rating is None else (rating - LOW) / (HIGH - LOW)


def read_ratings(
    completion: Completion, labels: list[str]
) -> tuple[dict[str, int], dict[str, str]]:
    """Ratings for the requested labels and reasons for those without one; a label the reply does not
    mention is in neither (it is asked again)."""
    if completion.finish_reason == "length":
        return {}, dict.fromkeys(labels, "truncated")
    if completion.refusal or completion.finish_reason == "content_filter":
        return {}, dict.fromkeys(labels, "refusal")
    text = completion.content or ""
    if not text.strip():
        return {}, dict.fromkeys(labels, "empty_reply")
    obj = last_json_object(text)
    if obj is None:
        return {}, dict.fromkeys(labels, "unparsable_reply")
    ratings: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for label in labels:
        if label not in obj:
            continue
        value = obj[label]
        if type(value) is int and LOW <= value <= HIGH and label not in obj.conflicts:
            ratings[label] = value
        else:
            reasons[label] = "invalid_value"
    return ratings, reasons


@dataclass
class Rating:
    """One candidate's outcome: the majority rating, or the reason there is none."""

    rating: int | None
    reason: str | None
    ratings: list[int | None] = field(default_factory=list)
    """Each repeat's rating."""

    @property
    def value(self) -> float | None:
        """The rating normalised (what the ``similarity`` selector ranks by)."""
        return normalised(self.rating)


def majority(answers: list[tuple[int | None, str | None]]) -> Rating:
    """The rating most repeats gave; a tie between ratings is ``split_vote``; no rating at all keeps
    the first repeat's reason."""
    given = [r for r, _ in answers if r is not None]
    ratings = [r for r, _ in answers]
    if not given:
        reason = next((why for _, why in answers if why), "skipped_by_judge")
        return Rating(None, reason, ratings)
    counts = Counter(given).most_common()
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return Rating(None, "split_vote", ratings)
    return Rating(counts[0][0], None, ratings)


class SimilarityJudge:
    """Rates a task's candidates against its proxy patch (see the module's docstring)."""

    def __init__(
        self,
        llm: LLM,
        *,
        candidates_per_call: int = 4,
        repeats: int = 1,
        concurrency: int = 8,
        seed: int = 0,
    ) -> None:
        self.llm = llm
        self.per_call = candidates_per_call
        self.repeats = repeats
        self.concurrency = concurrency
        self.seed = seed
        self.prompt = load_prompt("similarity_judge")
        self.name = f"{llm.name} + {self.prompt.ref}"

    async def _ask(
        self, issue: str, proxy: str, batch: list[tuple[str, str]], repeat: int, task: str
    ) -> tuple[dict[str, int], dict[str, str]]:
        """One request about ``batch`` (key, patch): ratings and reasons by key."""
        labels = [f"C{n}" for n in range(1, len(batch) + 1)]
        messages = self.prompt.messages(
            issue=issue,
            proxy=proxy,
            candidates=[
                {"id": label, "patch": p} for label, (_, p) in zip(labels, batch, strict=True)
            ],
            candidate_ids=labels,
        )
        keys = dict(zip(labels, (k for k, _ in batch), strict=True))
        try:
            completion = await self.llm.complete(messages, repeat=repeat, phase=PHASE, task=task)
        except BudgetExceeded:
            return {}, dict.fromkeys(keys.values(), "budget")
        except CallFailed as failure:
            log.warning("similarity call failed for %s (%s): %s", task, failure.kind, failure)
            reason = FAILURE_REASON.get(failure.kind, "provider_error")
            return {}, dict.fromkeys(keys.values(), reason)
        ratings, reasons = read_ratings(completion, labels)
        return (
            {keys[k]: v for k, v in ratings.items()},
            {keys[k]: v for k, v in reasons.items()},
        )

    async def _repeat(
        self, issue: str, proxy: str, unique: dict[str, str], repeat: int, task: str, limit: Any
    ) -> dict[str, tuple[int | None, str | None]]:
        """One repeat over every distinct patch: batches, then each skipped one alone."""
        keys = sorted(unique)
        random.Random(f"{self.seed}:{task}:{repeat}").shuffle(keys)

        async def ask(batch: list[str]) -> tuple[dict[str, int], dict[str, str]]:
            async with limit:
                return await self._ask(issue, proxy, [(k, unique[k]) for k in batch], repeat, task)

        ratings: dict[str, int] = {}
        reasons: dict[str, str] = {}
        batches = [keys[i : i + self.per_call] for i in range(0, len(keys), self.per_call)]
        for got, why in await asyncio.gather(*(ask(b) for b in batches)):
            ratings.update(got)
            reasons.update(why)
        skipped = [k for k in keys if k not in ratings and k not in reasons]
        for got, why in await asyncio.gather(*(ask([k]) for k in skipped)):  # alone, once
            ratings.update(got)
            reasons.update(why)
        return {k: (ratings.get(k), reasons.get(k, "skipped_by_judge")) for k in keys}

    async def rate(
        self, task: str, issue: str, proxy: str, patches: dict[str, str]
    ) -> dict[str, Rating]:
        """Each candidate's rating against ``proxy`` (candidate id -> :class:`Rating`)."""
        unique: dict[str, str] = {}
        keyed: dict[str, str] = {}
        out: dict[str, Rating] = {}
        for cid, patch in patches.items():
            if has_lone_surrogates(patch):
                out[cid] = Rating(None, "invalid_text")
            elif is_empty_patch(patch):
                out[cid] = Rating(None, "empty_patch")
            else:
                keyed[cid] = patch_hash(patch)
                unique.setdefault(keyed[cid], patch)
        if unique:
            limit = asyncio.Semaphore(self.concurrency)
            rounds = await asyncio.gather(
                *(self._repeat(issue, proxy, unique, r, task, limit) for r in range(self.repeats))
            )
            by_key = {k: majority([answers[k] for answers in rounds]) for k in unique}
            out.update({cid: by_key[key] for cid, key in keyed.items()})
        return {cid: out[cid] for cid in patches}
