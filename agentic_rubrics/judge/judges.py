"""Judges: one verdict per rubric item for one candidate.

Items with a ``check`` are always decided by the check (``checked``) and never go to a model. The
checks-only judge leaves every other item ``missing: not_configured``. The LLM judge asks a model
about the other items — by default all of a candidate's items in one call — and never invents a score:
an item the model did not answer with 0/1/true/false is ``missing`` with the reason.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import re
from typing import Annotated, Any, Literal, cast

from pydantic import BaseModel, ConfigDict, Field

from agentic_rubrics.exceptions import BudgetExceeded
from agentic_rubrics.llm.door import LLM, CallFailed, LLMConfig
from agentic_rubrics.patch import is_empty_patch, patch_hash
from agentic_rubrics.prompts import Prompt, load_prompt
from agentic_rubrics.protocols import Completion
from agentic_rubrics.rubric.check_verdicts import check_verdicts
from agentic_rubrics.setting_effects import SPEED
from agentic_rubrics.surrogates import has_lone_surrogates
from agentic_rubrics.types import Axis, Rubric, RubricItem, Verdict

log = logging.getLogger(__name__)


class JudgeConfig(BaseModel):
    """How candidates are judged."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    kind: Literal["checks", "llm"] = "checks"
    """``checks``: deterministic checks only (items without a check stay ``missing: not_configured``);
    ``llm``: a model decides the items without a check."""
    model: LLMConfig | None = None
    """The judge model (required for ``llm``)."""
    items_per_call: int = Field(default=0, ge=0)
    """Items per model call: 0 = all of a candidate's items in one call, 1 = one item per call."""
    repeats: int = Field(default=1, ge=1, le=25)
    """Times each candidate is judged; the verdict is the majority, a tie is ``split_vote``."""
    concurrency: Annotated[int, SPEED] = Field(default=16, ge=1)
    """Candidates of one task judged at the same time (the model's own limit applies on top)."""
    answer_form: Literal["json", "reasoning"] = "json"
    """``json``: the paper's judge, asked for one JSON object and nothing else; ``reasoning``: the
    judge may reason before the object. Each form has its own prompt hash in the judge's name."""


def missing_verdicts(
    rubric: Rubric,
    *,
    instance_id: str,
    candidate_id: str,
    reason: str,
    repeat: int = 0,
    skip: set[str] | frozenset[str] = frozenset(),
    detail: str | None = None,
) -> list[Verdict]:
    """``missing`` verdicts with one reason (and detail) for every item not in ``skip``."""
    return [
        _verdict(instance_id, candidate_id, axis, item, None, reason, repeat, detail)
        for axis, item in rubric.items()
        if item.id not in skip
    ]


def _verdict(
    instance_id: str,
    candidate_id: str,
    axis: Axis,
    item: RubricItem,
    value: int | None,
    reason: str | None,
    repeat: int,
    detail: str | None = None,
) -> Verdict:
    return Verdict(
        instance_id=instance_id,
        candidate_id=candidate_id,
        item_id=item.id,
        axis=axis,
        weight=item.weight,
        origin="missing" if value is None else "judged",
        value=cast(Literal[0, 1] | None, value),
        reason=reason if value is None else None,
        repeat=repeat,
        detail=detail if value is None else None,
    )


def not_text(rubric: Rubric, instance_id: str, candidate_id: str, repeat: int) -> list[Verdict]:
    """Every item of a candidate whose patch is not valid text (undecodable bytes, lone surrogates):
    ``missing: check_error`` with the detail ``invalid_text``. Nothing is checked or sent."""
    return missing_verdicts(
        rubric,
        instance_id=instance_id,
        candidate_id=candidate_id,
        reason="check_error",
        repeat=repeat,
        detail="invalid_text",
    )


class ChecksJudge:
    """The offline judge: checks decide their items; every other item is ``missing: not_configured``."""

    name = "checks"

    async def judge(
        self,
        *,
        instance_id: str,
        issue: str,
        rubric: Rubric,
        candidate_id: str,
        patch: str,
        repeat: int = 0,
    ) -> list[Verdict]:
        """Exactly one verdict per item, in rubric order."""
        if has_lone_surrogates(patch):
            return not_text(rubric, instance_id, candidate_id, repeat)
        checked = check_verdicts(rubric, patch, instance_id=instance_id, candidate_id=candidate_id)
        rest = {
            v.item_id: v
            for v in missing_verdicts(
                rubric,
                instance_id=instance_id,
                candidate_id=candidate_id,
                reason="not_configured",
                skip=set(checked),
            )
        }
        return [checked.get(item.id) or rest[item.id] for _, item in rubric.items()]


# --------------------------------------------------------------------------- reading replies


class JSONAnswer(dict[str, Any]):
    """A JSON object as the reply spelled it; ``conflicts`` holds the keys it gave twice with different
    values (Python's json would silently keep the last one)."""

    conflicts: frozenset[str] = frozenset()


def _answer_object(pairs: list[tuple[str, Any]]) -> JSONAnswer:
    out = JSONAnswer()
    conflicts = set()
    for key, value in pairs:
        if key in out and (type(out[key]) is not type(value) or out[key] != value):
            conflicts.add(key)
        out[key] = value
    out.conflicts = frozenset(conflicts)
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_answer_object)


MAX_NESTING = 100
"""Brackets a reply may leave open at once; a deeper reply is not an answer (a verdict is one flat
object). The cap keeps reading linear: no text is scanned by more than this many decode attempts."""

_BRACKETS = re.compile(r"[\[\]{}]")


def _nesting(text: str) -> int:
    """The most brackets open at once, strings not told apart (an upper bound, found in one pass)."""
    depth = deepest = 0
    for match in _BRACKETS.finditer(text):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif depth:
            depth -= 1
    return deepest


def last_json_object(text: str) -> JSONAnswer | None:
    """The last top-level JSON object in a reply (bare or inside a fenced block), or ``None``.

    A reply nested deeper than :data:`MAX_NESTING` holds no answer.
    """
    if _nesting(text) > MAX_NESTING:
        return None
    found: JSONAnswer | None = None
    i = text.find("{")
    while i != -1:
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except (json.JSONDecodeError, RecursionError):
            i = text.find("{", i + 1)
            continue
        if isinstance(obj, JSONAnswer):
            found = obj
            i = text.find("{", end)
        else:
            i = text.find("{", i + 1)
    return found


def binary(value: Any) -> int | None:
    """0/1 from 0, 1, true or false; anything else (2, "yes", "1", null) is not a verdict."""
    if value is True or value is False:
        return int(value)
    if type(value) is int and value in (0, 1):
        return value
    return None


def read_reply(
    completion: Completion, item_ids: list[str]
) -> tuple[dict[str, int], dict[str, str], list[str]]:
    """Values for the requested ids, reasons for the ones without a value, and extra ids answered.

    Ids the reply does not mention at all are left out of both maps (the judge asks again).
    """

    def every(reason: str) -> tuple[dict[str, int], dict[str, str], list[str]]:
        return {}, dict.fromkeys(item_ids, reason), []

    if completion.finish_reason == "length":
        return every("truncated")
    if completion.refusal or completion.finish_reason == "content_filter":
        return every("refusal")
    text = completion.content or ""
    if not text.strip():
        return every("empty_reply")
    obj = last_json_object(text)
    if obj is None:
        return every("unparsable_reply")
    values: dict[str, int] = {}
    reasons: dict[str, str] = {}
    for item_id in item_ids:
        if item_id not in obj:
            continue
        value = binary(obj[item_id])
        if value is None or item_id in obj.conflicts:  # {"A": 0, "A": 1} says nothing about A
            reasons[item_id] = "invalid_value"
        else:
            values[item_id] = value
    extra = sorted(str(k) for k in obj if k not in item_ids)
    return values, reasons, extra


FAILURE_REASON = {
    "transient": "provider_error",
    "bad_params": "provider_error",
    "bad_request": "provider_error",
    "context_window": "context_window",
    "refusal": "refusal",
    "budget": "budget",
    "empty_reply": "empty_reply",
}


# --------------------------------------------------------------------------- the LLM judge


_CHECKED_KEPT = 256
"""Candidate patches whose check verdicts the model judge keeps for their other repeats."""


class LLMJudge:
    """Asks a model about every item without a check; checks decide the rest.

    ``extra_ids`` counts answers for ids nobody asked about (ignored, and logged).
    """

    def __init__(self, llm: LLM, config: JudgeConfig, *, seed: int = 0) -> None:
        self.llm = llm
        self.config = config
        self.seed = seed
        self.prompt: Prompt = load_prompt("judge")
        self.reasoning = config.answer_form == "reasoning"
        ref = self.prompt.variant_ref(reasoning=True) if self.reasoning else self.prompt.ref
        self.name = f"{llm.name} + {ref}"
        self.extra_ids = 0
        # the checks' verdicts per candidate patch, shared by its repeats (the rubric is kept to
        # make sure the entry is of this very rubric); at most _CHECKED_KEPT entries
        self._checked: dict[tuple[str, str, str], tuple[Rubric, dict[str, Verdict]]] = {}

    def _checks(
        self, rubric: Rubric, patch: str, instance_id: str, candidate_id: str
    ) -> dict[str, Verdict]:
        """The rubric's check verdicts on this patch, decided once for all its repeats: they cannot
        vary, and each decision may spend the rubric's whole check budget (RUBRIC_SECONDS)."""
        key = (instance_id, candidate_id, patch)
        kept = self._checked.get(key)
        if kept is not None and kept[0] is rubric:
            return kept[1]
        checked = check_verdicts(rubric, patch, instance_id=instance_id, candidate_id=candidate_id)
        if len(self._checked) >= _CHECKED_KEPT:
            self._checked.clear()
        self._checked[key] = (rubric, checked)
        return checked

    def _order(self, items: list[tuple[Axis, RubricItem]], patch: str, repeat: int) -> None:
        if repeat == 0:
            return  # the rubric's own order; repeats shuffle, so position effects show as flakiness
        rng = random.Random(f"{self.seed}:{patch_hash(patch)}:{repeat}")
        rng.shuffle(items)

    async def _ask(
        self, issue: str, items: list[tuple[Axis, RubricItem]], patch: str, repeat: int, task: str
    ) -> tuple[dict[str, int], dict[str, str]]:
        """One call about ``items``; returns values and missing reasons (unanswered ids in neither)."""
        ids = [item.id for _, item in items]
        messages = self.prompt.messages(
            issue=issue,
            items=[
                {"id": i.id, "axis": a, "weight": i.weight, "description": i.description}
                for a, i in items
            ],
            patch=patch,
            item_ids=ids,
            reasoning=self.reasoning,
        )
        try:
            completion = await self.llm.complete(messages, repeat=repeat, phase="judge", task=task)
        except BudgetExceeded:
            return {}, dict.fromkeys(ids, "budget")
        except CallFailed as failure:
            log.warning("judge call failed for %s (%s): %s", task, failure.kind, failure)
            return {}, dict.fromkeys(ids, FAILURE_REASON.get(failure.kind, "provider_error"))
        values, reasons, extra = read_reply(completion, ids)
        if extra:
            self.extra_ids += len(extra)
            log.info("judge answered %d id(s) nobody asked about for %s", len(extra), task)
        return values, reasons

    async def judge(
        self,
        *,
        instance_id: str,
        issue: str,
        rubric: Rubric,
        candidate_id: str,
        patch: str,
        repeat: int = 0,
    ) -> list[Verdict]:
        """Exactly one verdict per item, in rubric order."""
        if has_lone_surrogates(patch):
            return not_text(rubric, instance_id, candidate_id, repeat)
        checked = self._checks(rubric, patch, instance_id, candidate_id)
        todo = [(a, i) for a, i in rubric.items() if i.id not in checked]
        values: dict[str, int] = {}
        reasons: dict[str, str] = {}
        if todo and is_empty_patch(patch):
            reasons = dict.fromkeys((i.id for _, i in todo), "empty_patch")  # never sent
        elif todo:
            self._order(todo, patch, repeat)
            size = self.config.items_per_call or len(todo)
            batches = [todo[start : start + size] for start in range(0, len(todo), size)]
            for got, why in await asyncio.gather(
                *(self._ask(issue, b, patch, repeat, instance_id) for b in batches)
            ):
                values.update(got)
                reasons.update(why)
            # ids the model skipped are asked again, once, alone
            skipped = [(a, i) for a, i in todo if i.id not in values and i.id not in reasons]
            for got, why in await asyncio.gather(
                *(self._ask(issue, [x], patch, repeat, instance_id) for x in skipped)
            ):
                values.update(got)
                reasons.update(why)
            for _, item in skipped:
                if item.id not in values and item.id not in reasons:
                    reasons[item.id] = "skipped_by_judge"
        out = []
        for axis, item in rubric.items():
            if item.id in checked:
                out.append(checked[item.id].model_copy(update={"repeat": repeat}))
            else:
                out.append(
                    _verdict(
                        instance_id,
                        candidate_id,
                        axis,
                        item,
                        values.get(item.id),
                        reasons.get(item.id),
                        repeat,
                    )
                )
        return out
