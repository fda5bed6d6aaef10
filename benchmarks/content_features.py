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
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import RepoError
from agentic_rubrics.rank.content import (
    CONTENT_FEATURES,
    CONTENT_GROUPS,
    content_features,
    content_rows,
    post_row,
)
from agentic_rubrics.rubric.postimage import analyze_patch

__all__ = [
    "CONTENT_FEATURES",
    "CONTENT_GROUPS",
    "patch_key",
    "pool_features",
    "post_rows",
    "task_trees",
]


def patch_key(instance_id: str, patch: str) -> str:
    digest = hashlib.sha256(patch.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return f"{instance_id}:{digest}"


TreeOf = Callable[[Any], tuple[Path, str | None]]
"""A task's tree, and ``None`` for its base commit or the tag of the approximate tree standing in
for it (raises :class:`RepoError`: none to be had)."""


def task_trees(
    data: Path, repo_url: str, repo_cache: Path | None, approximate: str = "none"
) -> TreeOf:
    """Each task's tree: its repository at its base commit, else, with ``approximate`` one of
    :data:`agentic_rubrics.datasets.sdist_trees.RULES`, the release sdist that rule chooses for a
    repository too big to mirror (Django), tagged by a hash of its mark (release, sha256, patches
    taken out). A run reads such a tree only where env-check found the instance runnable on it
    (``repos.approximate_trees``); the study reads every one the rule gives."""
    from agentic_rubrics.datasets.sdist_trees import approximate_source, instance_trees
    from agentic_rubrics.datasets.swebench_tests import load_tested_instances

    trees = instance_trees(repo_url, repo_cache, approximate)
    tested = (
        {i.instance_id: i for i in load_tested_instances(data)} if approximate != "none" else {}
    )

    def tree(task: Any) -> tuple[Path, str | None]:
        path = Path(trees(tested.get(task.instance_id, task)))
        mark = approximate_source(path)
        if mark is None:
            return path, None
        return path, hashlib.sha256(json.dumps(mark, sort_keys=True).encode()).hexdigest()[:12]

    return tree


def _row(patch: str, tree: Path) -> dict[str, Any] | None:
    """The patch's post-image row (``None``: not attempted, e.g. a timeout: retried next time). On
    an approximate tree, as in a run, a patch that does not apply is read as not applying."""
    return post_row(analyze_patch(tree, patch))


def post_rows(
    pool_tasks: list[Any], trees: TreeOf, rows_file: Path, workers: int = 2
) -> tuple[dict[str, dict[str, Any]], dict[str, str], set[str], dict[str, float]]:
    """Post-image rows by ``patch_key`` for every instance whose tree is at hand; the instances
    without one, by reason; those on an approximate tree; and timings. Rows already in ``rows_file``
    are reused (a row on an approximate tree is stored under its key and the tree's tag: another rule
    or release is analysed anew)."""
    done: dict[str, dict[str, Any]] = {}
    text = rows_file.read_text() if rows_file.exists() else ""
    for line in text.splitlines():
        try:
            r = json.loads(line) if line.strip() else {}
        except json.JSONDecodeError:  # the end of a run killed mid-line: analysed again
            continue
        if "delta" in r:  # a row from before behaviour_consensus is analysed again
            done[r["key"]] = r
    missing: dict[str, str] = {}
    found: dict[str, tuple[Path, str | None]] = {}
    started = time.monotonic()
    for t in pool_tasks:
        try:
            found[t.instance_id] = trees(t)
        except RepoError as exc:
            missing[t.instance_id] = exc.reason
    provision_s = time.monotonic() - started
    keys = {
        patch_key(t.instance_id, c.patch): (t.instance_id, c.patch)
        for t in pool_tasks
        if t.instance_id in found
        for c in t.candidates
    }

    def stored(key: str) -> str:
        tag = found[keys[key][0]][1]
        return key if tag is None else f"{key}@{tag}"

    jobs = [k for k in keys if stored(k) not in done]
    started = time.monotonic()
    rows_file.parent.mkdir(parents=True, exist_ok=True)
    with rows_file.open("a") as out, ThreadPoolExecutor(workers) as ex:
        if text and not text.endswith("\n"):
            out.write("\n")  # a killed run's partial line stays apart from the next row

        def analyse(key: str) -> dict[str, Any] | None:
            return _row(keys[key][1], found[keys[key][0]][0])

        for key, row in zip(jobs, ex.map(analyse, jobs), strict=True):
            if row is None:  # not attempted (e.g. a timeout): the diff stands in, retried next time
                continue
            done[stored(key)] = {"key": stored(key), **row}
            out.write(json.dumps(done[stored(key)]) + "\n")
            out.flush()
    approximate = {iid for iid, (_, tag) in found.items() if tag is not None}
    rows = {k: done[stored(k)] for k in keys if stored(k) in done}
    timings = {"provision_s": round(provision_s, 1), "analysis_s": round(time.monotonic() - started, 1),
               "analysed_now": len(jobs)}  # fmt: skip
    return rows, missing, approximate, timings


def pool_features(
    patches: Mapping[str, str],
    scores: Mapping[str, float | None],
    post: Mapping[str, dict[str, Any] | None],
) -> dict[str, dict[str, float]]:
    """Content and shape features of one pool's usable candidates (empty or unparsable: absent).

    ``post``: each candidate's post-image row, ``None`` without a repository (then the function set
    comes from the diff and the findings count as none)."""
    return content_rows(content_features(patches, post), scores)
