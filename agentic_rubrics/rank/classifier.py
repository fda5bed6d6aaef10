"""The patch-classifier baseline: a model reads the issue and one patch and answers YES or NO.

P(YES) comes from the first token's log-probabilities where the provider returns usable ones, else from
the probability written after the answer, else 1 or 0 from the bare answer.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING, Any

from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.protocols import Completion
from agentic_rubrics.surrogates import has_lone_surrogates

if TYPE_CHECKING:
    from agentic_rubrics.protocols import Model

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
