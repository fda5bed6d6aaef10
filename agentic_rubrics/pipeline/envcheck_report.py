"""``env-check``'s output: the JSON report (counts by reason, the approximate trees, every row) and the
Markdown table the command prints."""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import Any

from agentic_rubrics.pipeline.envcheck import REASONS, SCHEMA, CheckRow, CheckSite


def report(rows: list[CheckRow], site: CheckSite) -> dict[str, Any]:
    """The JSON written: the site, the counts by reason, every row."""
    counts = Counter(r.reason for r in rows)
    approximate = Counter(r.reason for r in rows if r.approximate_tree)
    return {
        "schema": SCHEMA,
        "site": site.describe(),
        "instances": len(rows),
        "runnable": counts.get("runnable", 0),
        "counts": dict(sorted(counts.items())),
        "reasons": {k: REASONS[k] for k in sorted(counts)},
        "approximate_tree": {
            "instances": sum(approximate.values()),
            "runnable": approximate.get("runnable", 0),
            "counts": dict(sorted(approximate.items())),
        },
        "rows": [asdict(r) for r in rows],
    }


def table(rows: list[CheckRow]) -> str:
    """The rows as a Markdown table."""
    lines = [
        "| instance | runner | tree | runnable | reason | detail |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for r in rows:
        detail = r.detail.replace("|", "\\|").replace("\n", " ")[:100]
        ok = "yes" if r.runnable else "no"
        tree = "base commit"
        if r.approximate_tree:
            tree = f"approximate: {r.tree_source.get('source', {}).get('sdist', '?')}"
        lines.append(
            f"| {r.instance_id} | {r.runner or '-'} | {tree} | {ok} | {r.reason} | {detail} |"
        )
    return "\n".join(lines)
