"""Per-candidate content features of real SWE-bench pools, and a cache so reruns are cheap.

What a patch does to the code (post-image analysis on the base tree, where the repository is at hand)
and how it agrees with the other candidates of its pool at the level of functions. Everything here reads
the patches (and the tree) only; labels and sources never enter a feature.

- ``post_rows``: one row per candidate of an instance whose tree the cache can export: how it applied,
  whether it introduces a syntax error / undefined name / redefinition, whether it removes a name still
  used, and the functions it changes (``path::name`` of the innermost definition, test files left out).
  Rows are cached in a JSONL file keyed by instance and patch hash.
- ``pool_features``: the features of one pool (a full pool or a single-generator slice), recomputed on
  that pool: line, file and function agreement with the others (and relative to the pool's best), the
  post-image findings, the rubric S. The definitions are the library's (``agentic_rubrics.rank.content``,
  what the ``offline_content`` selector computes at judge time); only the caching lives here.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.repos import RepoCache
from agentic_rubrics.exceptions import RepoError
from agentic_rubrics.rank.content import (
    CONTENT_FEATURES,
    CONTENT_GROUPS,
    content_features,
    content_rows,
    post_row,
)
from agentic_rubrics.rubric.postimage import analyze_patch

__all__ = ["CONTENT_FEATURES", "CONTENT_GROUPS", "patch_key", "pool_features", "post_rows"]


def patch_key(instance_id: str, patch: str) -> str:
    digest = hashlib.sha256(patch.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return f"{instance_id}:{digest}"


def _row(patch: str, tree: Path) -> dict[str, Any] | None:
    return post_row(analyze_patch(tree, patch))


def post_rows(
    pool_tasks: list[Any], cache: RepoCache, rows_file: Path, workers: int = 2
) -> tuple[dict[str, dict[str, Any]], dict[str, str], dict[str, float]]:
    """Post-image rows by ``patch_key`` for every instance whose tree is at hand; the instances
    without one, by reason; and timings. Rows already in ``rows_file`` are reused."""
    done: dict[str, dict[str, Any]] = {}
    if rows_file.exists():
        for line in rows_file.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                if "delta" in r:  # a row from before behaviour_consensus is analysed again
                    done[r["key"]] = r
    missing: dict[str, str] = {}
    trees: dict[str, Path] = {}
    started = time.monotonic()
    for t in pool_tasks:
        try:
            trees[t.instance_id] = cache.checkout(t.repo, t.base_commit).path
        except RepoError as exc:
            missing[t.instance_id] = exc.reason
    provision_s = time.monotonic() - started
    jobs = [
        (patch_key(t.instance_id, c.patch), c.patch, trees[t.instance_id])
        for t in pool_tasks
        if t.instance_id in trees
        for c in t.candidates
        if patch_key(t.instance_id, c.patch) not in done
    ]
    jobs = list({k: (k, p, tr) for k, p, tr in jobs}.values())
    started = time.monotonic()
    rows_file.parent.mkdir(parents=True, exist_ok=True)
    with rows_file.open("a") as out, ThreadPoolExecutor(workers) as ex:
        for key, row in zip(
            (k for k, _, _ in jobs), ex.map(lambda j: _row(j[1], j[2]), jobs), strict=True
        ):
            if row is None:  # not attempted (e.g. a timeout): the diff stands in, retried next time
                continue
            done[key] = {"key": key, **row}
            out.write(json.dumps(done[key]) + "\n")
            out.flush()
    timings = {"provision_s": round(provision_s, 1), "analysis_s": round(time.monotonic() - started, 1),
               "analysed_now": len(jobs)}  # fmt: skip
    return done, missing, timings


def pool_features(
    patches: Mapping[str, str],
    scores: Mapping[str, float | None],
    post: Mapping[str, dict[str, Any] | None],
) -> dict[str, dict[str, float]]:
    """Content and shape features of one pool's usable candidates (empty or unparsable: absent).

    ``post``: each candidate's post-image row, ``None`` without a repository (then the function set
    comes from the diff and the findings count as none)."""
    return content_rows(content_features(patches, post), scores)
