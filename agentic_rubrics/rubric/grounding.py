"""How far a rubric is grounded in its repository: items that name its files, and the leads that did not.

A rubric item is *grounded* when its check names an exact file path (``touches``, ``only_touches``, or
the ``in`` filter of any check) that exists in the repository the explorer saw. Globs, folders and bare
file names are not names of one file (``conftest.py`` matches that name in every folder). The static explorer also records its leads in the rubric's metadata (``grounding``: counts
per lead kind, and of those that found nothing); they are taken from that explorer only, and only in the
shape it writes, since any other explorer's metadata is a model's text. Records hold counts, never
paths or the issue's words.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from agentic_rubrics.runfolder.report import GroundingSummary
from agentic_rubrics.runfolder.rows import RubricStatus, RubricSummary
from agentic_rubrics.types import Rubric

LEAD_KINDS = ("frame", "path", "module", "symbol", "constant", "message", "option")
"""The static explorer's kinds of leads (see :mod:`agentic_rubrics.explore.leads`)."""
_GLOB = re.compile(r"[*?\[]")
_MAX_COUNT = 1_000_000


def named_paths(rubric: Rubric) -> dict[str, list[str]]:
    """Exact file paths each item's check names (items naming none are left out)."""
    out: dict[str, list[str]] = {}
    for _, item in rubric.items():
        check = item.check
        if check is None:
            continue
        values: list[Any] = []
        for value in (check.arg if check.name in ("touches", "only_touches") else None, check.path):
            values += value if isinstance(value, list) else [value]
        paths = [
            v
            for v in values
            if isinstance(v, str)
            and "/" in v.strip("/")
            and not _GLOB.search(v)
            and not v.endswith("/")
        ]
        if paths:
            out[item.id] = list(dict.fromkeys(paths))
    return out


def _exists(root: Path, path: str) -> bool:
    """A file of the tree, never anything outside it (``..``, absolute paths, links out)."""
    try:
        target = (root / path.lstrip("/")).resolve()
        return target.is_relative_to(root.resolve()) and target.is_file()
    except (OSError, ValueError, RuntimeError):
        return False


def _counts(value: Any, kinds: Iterable[str]) -> dict[str, int] | None:
    known = set(kinds)
    if not isinstance(value, dict) or not all(
        k in known and isinstance(n, int) and not isinstance(n, bool) and 0 <= n < _MAX_COUNT
        for k, n in value.items()
    ):
        return None
    return {k: value[k] for k in sorted(value)}


def grounding_record(rubric: Rubric, root: Path | None, *, static_leads: bool) -> dict[str, Any]:
    """What a rubric's status records: grounded items (with a repository) and the static leads."""
    record: dict[str, Any] = {}
    if root is not None:
        named = named_paths(rubric)
        grounded = [i for i, paths in named.items() if any(_exists(root, p) for p in paths)]
        every = {p for paths in named.values() for p in paths}
        record["grounded_items"] = len(grounded)
        record["named_paths"] = len(every)
        record["named_paths_missing"] = sum(1 for p in every if not _exists(root, p))
    meta = (rubric.metadata.model_extra or {}).get("grounding") if static_leads else None
    if isinstance(meta, dict):
        leads = _counts(meta.get("leads"), LEAD_KINDS)
        unmatched = _counts(meta.get("unmatched"), LEAD_KINDS)
        if leads is not None and unmatched is not None:
            record["leads"] = leads
            record["unmatched"] = unmatched
    return record


def grounding_report(rubric_rows: Iterable[RubricSummary]) -> GroundingSummary:
    """report.json's ``rubrics.grounding``: from each task's progress row (``rubric`` part)."""
    explored = with_grounded = items = with_leads = with_unmatched = 0
    leads: dict[str, int] = {}
    unmatched: dict[str, int] = {}
    for row in rubric_rows:
        g = row.grounding
        if row.status != "ok" or g is None:
            continue
        if g.grounded_items is not None:
            explored += 1
            items += g.grounded_items
            with_grounded += g.grounded_items > 0
        if g.leads is not None:
            with_leads += 1
            with_unmatched += sum((g.unmatched or {}).values()) > 0
            for kind, n in g.leads.items():
                leads[kind] = leads.get(kind, 0) + n
            for kind, n in (g.unmatched or {}).items():
                unmatched[kind] = unmatched.get(kind, 0) + n
    return GroundingSummary(
        rubrics_in_repository=explored,
        rubrics_with_grounded_items=with_grounded,
        grounded_items=items,
        rubrics_with_leads=with_leads,
        rubrics_with_unmatched_leads=with_unmatched,
        leads=dict(sorted(leads.items())),
        leads_unmatched=dict(sorted(unmatched.items())),
    )


def grounding_markdown(g: GroundingSummary) -> str:
    """One line of report.md."""
    if not g.rubrics_in_repository and not g.rubrics_with_leads:
        return "- Grounding: no rubric was written in a repository."
    total = sum(g.leads.values())
    missed = sum(g.leads_unmatched.values())
    kinds = ", ".join(f"{k} {g.leads_unmatched.get(k, 0)}/{n}" for k, n in sorted(g.leads.items()))
    line = (
        f"- Grounding: {g.rubrics_with_grounded_items} of {g.rubrics_in_repository} rubrics "
        f"written in a repository have items naming its files ({g.grounded_items} items)."
    )
    if g.rubrics_with_leads:
        line += (
            f" Leads that found nothing: {missed} of {total} ({kinds or 'none'}), in "
            f"{g.rubrics_with_unmatched_leads} of {g.rubrics_with_leads} rubrics."
        )
    return line


def repository_source(status: RubricStatus) -> str:
    """Where the explorer's tree came from: ``fetched``, ``cache``, ``repo_path`` or ``none``."""
    repo = status.repository
    if not isinstance(repo, dict):
        return "none"
    if repo.get("source") == "repo_path":
        return "repo_path"
    return "cache" if repo.get("cached") else "fetched"
