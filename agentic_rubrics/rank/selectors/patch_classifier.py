"""The patch-classifier selector: a model's P(YES) that a patch resolves the issue, from the issue alone."""

from __future__ import annotations

import asyncio
from typing import Any

from agentic_rubrics.patch import patch_hash
from agentic_rubrics.rank.classifier import PatchClassifier
from agentic_rubrics.rank.selectors import BaseSelector, FeatureInput, Ranking, RankingInput, stored


class PatchClassifierSelector(BaseSelector):
    name = "patch_classifier"
    description = (
        "a model's P(YES) that the patch resolves the issue, from the issue alone (needs a model)"
    )
    needs_model = True
    prompts = ("patch_classifier",)

    def __init__(self) -> None:
        self._classifiers: dict[int, PatchClassifier] = {}  # one per model: the prompt loads once

    async def features(self, given: FeatureInput) -> dict[str, Any]:
        """P(YES) per candidate; identical patches are asked once."""
        assert given.model is not None  # compute_features calls it only with a model
        classifier = self._classifiers.get(id(given.model))
        if classifier is None or classifier.llm is not given.model:
            classifier = self._classifiers[id(given.model)] = PatchClassifier(given.model)
        patches = given.patches
        unique = {patch_hash(p): p for p in patches.values()}
        keys = list(unique)
        task = given.task
        probs = await asyncio.gather(
            *(
                classifier.score(task.problem_statement, unique[k], task=task.instance_id)
                for k in keys
            )
        )
        by_key = dict(zip(keys, probs, strict=True))
        return {"patch_classifier": {cid: by_key[patch_hash(p)] for cid, p in patches.items()}}

    def ranking(self, task: RankingInput) -> Ranking:
        values = stored(task, "patch_classifier", self.name)
        return {cid: values.get(cid) for cid in task.scores}
