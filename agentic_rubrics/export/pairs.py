"""Single-turn examples from labelled or judged runs, in the prompts the library sends.

- ``classifier``: (issue, candidate patch) -> ``YES 1`` or ``NO 0`` from the candidate's label, in the
  patch classifier's prompt (``prompts/patch_classifier.yaml``: YES or NO, then a probability; the
  label's is certain). Unlabelled, empty and non-text patches are left out (the classifier never sends
  the last two) and counted.
- ``judge``: (issue, one rubric item, patch) -> the judge's verdict as its JSON object, in the judge's
  prompt with a batch of one item (``prompts/judge.yaml``, the answer form without reasoning). Judged
  verdicts only: items decided by a check, missing verdicts, repeats that disagree and items no longer
  in the rubric are left out and counted.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.export.sources import RunSource
from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.prompts import load_prompt
from agentic_rubrics.surrogates import has_lone_surrogates
from agentic_rubrics.types import Verdict


@dataclass
class Pair:
    """One example: its messages, the task it comes from, and what the card and the split need."""

    instance_id: str
    repo: str
    messages: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)


def _usable(patch: str | None) -> str | None:
    """Why a patch cannot be an example (``None``: it can)."""
    if patch is None:
        return "patch_not_kept"
    if is_empty_patch(patch):
        return "empty_patch"
    return "not_text" if has_lone_surrogates(patch) else None


def classifier_pairs(run: RunSource, tasks_file: Path | None, drops: Counter[str]) -> list[Pair]:
    """The run's labelled candidates as classifier examples (``drops`` counts what was left out)."""
    prompt = load_prompt("patch_classifier")
    issues = run.issues(tasks_file)
    patches = run.patches()
    out = []
    for iid, row in sorted(run.progress.items()):
        labels = run.labels.for_task(iid, [c.id for c in row.candidates])
        for cand in row.candidates:
            label = labels.get(cand.id)
            why = "unlabelled" if label is None else _usable(patches.get((iid, cand.id)))
            if iid not in issues:
                why = "issue_not_found"
            if why is not None:
                drops[why] += 1
                continue
            messages = prompt.messages(issue=issues[iid], patch=patches[(iid, cand.id)])
            answer = "YES 1" if label else "NO 0"
            messages.append({"role": "assistant", "content": answer})
            meta = {"candidate_id": cand.id, "resolved": bool(label)}
            out.append(Pair(iid, run.repo(iid), messages, meta))
    return out


def _verdict_of(repeats: list[Verdict]) -> tuple[int | None, str]:
    """The judged value of an item's repeats, or why there is none."""
    if any(v.origin == "checked" for v in repeats):
        return None, "checked"
    values = {v.value for v in repeats if v.origin == "judged"}
    if not values:
        return None, "missing"
    if len(values) > 1 or any(v.origin == "missing" for v in repeats):
        return None, "repeats_disagree"
    return values.pop(), ""


def judge_pairs(run: RunSource, tasks_file: Path | None, drops: Counter[str]) -> list[Pair]:
    """The run's judged verdicts as judge examples, one item per example."""
    prompt = load_prompt("judge")
    issues = run.issues(tasks_file)
    patches = run.patches()
    out = []
    for iid, verdicts in sorted(run.verdicts().items()):
        rubric = run.rubric(iid)
        items = {item.id: (axis, item) for axis, item in rubric.items()} if rubric else {}
        grouped: dict[tuple[str, str], list[Verdict]] = defaultdict(list)
        for v in verdicts:
            grouped[(v.candidate_id, v.item_id)].append(v)
        for (cid, item_id), repeats in sorted(grouped.items()):
            value, why = _verdict_of(repeats)
            patch = patches.get((iid, cid))
            if not why and item_id not in items:
                why = "item_not_in_rubric"
            if not why:
                why = "issue_not_found" if iid not in issues else (_usable(patch) or "")
            if why:
                drops[why] += 1
                continue
            axis, item = items[item_id]
            listed = {"id": item.id, "axis": axis, "weight": item.weight}
            messages = prompt.messages(
                issue=issues[iid],
                items=[{**listed, "description": item.description}],
                patch=patch,
                item_ids=[item.id],
                reasoning=False,
            )
            messages.append({"role": "assistant", "content": json.dumps({item.id: value})})
            meta = {"candidate_id": cid, "item_id": item.id, "verdict": value}
            out.append(Pair(iid, run.repo(iid), messages, meta))
    return out
