"""The library's own selectors on a benchmark pool: what a user's run would rank, with shipped weights.

A pool of the content study (``content_rerank.Inst``, a full pool or a single-generator slice, its
features recomputed on that pool) is handed to a selector the way the report hands it a task: the
candidates' S and ranking tier (``scores``) and the judge-time features (``baselines``:
``self_consistency``, ``content_features``, ``offline_features``, ``behaviour_consensus``: the
consensus record from the pool's patches and post-image rows). ``default`` is the first of
``BASE_SELECTORS``: the selector that writes selections.jsonl of a run without a model.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any

from agentic_rubrics.patch import is_empty_patch
from agentic_rubrics.rank.agreement import line_agreement
from agentic_rubrics.rank.consensus import consensus_record
from agentic_rubrics.rank.rerank import BASE_SELECTORS, EVIDENCE_FILE, selection_evidence
from agentic_rubrics.rank.selectors import get_selector

DEFAULT = BASE_SELECTORS[0]
"""The no-model default selector of this version of the library."""


@dataclass
class PoolTask:
    """A pool as a selector's ``RankingInput``."""

    instance_id: str
    scores: dict[str, Any]
    baselines: dict[str, Any] = field(default_factory=dict)


def as_task(inst: Any) -> PoolTask:
    agreement, _ = line_agreement(inst.patches)
    scores = {
        c: SimpleNamespace(
            score=inst.s.get(c),
            rank_value=inst.rank.get(c),
            empty_patch=is_empty_patch(inst.patches[c]),
        )
        for c in inst.labels
    }
    baselines = {
        "self_consistency": agreement,
        "content_features": inst.features,
        "offline_features": inst.features,  # the content features hold every offline one
        "behaviour_consensus": consensus_record(inst.patches, inst.post, agreement),
    }
    return PoolTask(inst.instance_id, scores, baselines)


def library_ranking(name: str, inst: Any) -> dict[str, float | None]:
    """The named selector's ranking of the pool (shipped weights, as a run would rank it)."""
    selector = get_selector(name)
    return selector.ranking(as_task(inst))


def default_ranking(inst: Any) -> dict[str, float | None]:
    """The shipped no-model default's ranking of the pool."""
    return library_ranking(DEFAULT, inst)


def default_provenance() -> dict[str, Any]:
    """Where the shipped default comes from: the evidence file that chose it (its path in the
    package and sha256), when it was written (its ``written`` field, else the date of the last commit
    that changed it), the command and data it was chosen on, the procedure and why; and whether the
    default this version ships is the one the file names."""
    import hashlib
    import subprocess

    raw = EVIDENCE_FILE.read_bytes()
    evidence = selection_evidence()
    when, source = evidence.get("written"), "the file's written field"
    if not when:
        found = subprocess.run(
            ["git", "log", "-1", "--format=%cI", "--", EVIDENCE_FILE.name],
            cwd=EVIDENCE_FILE.parent, capture_output=True, text=True, check=False, timeout=30,
        )  # fmt: skip
        when, source = found.stdout.strip() or None, "the last commit that changed the file"
    return {
        "selector": DEFAULT,
        "evidence_file": "agentic_rubrics/rank/" + EVIDENCE_FILE.name,
        "evidence_sha256": hashlib.sha256(raw).hexdigest(),
        "chosen_on": when,
        "chosen_on_from": source,
        "evidence_default": evidence["default"],
        "agrees": evidence["default"] == DEFAULT,
        "command": evidence.get("command"),
        "data": evidence.get("data"),
        "procedure": evidence.get("procedure"),
        "why": evidence.get("why"),
    }
