"""Per-candidate content features of real SWE-bench pools, and a cache so reruns are cheap.

What a patch does to the code (post-image analysis on the base tree, where the repository is at hand)
and how it agrees with the other candidates of its pool at the level of functions. Everything here reads
the patches (and the tree) only; labels and sources never enter a feature.

- ``post_rows``: one row per candidate of an instance whose tree the cache can export: how it applied,
  whether it introduces a syntax error / undefined name / redefinition, whether it removes a name still
  used, and the functions it changes (``path::name`` of the innermost definition, test files left out).
  Rows are cached in a JSONL file keyed by instance and patch hash.
- ``diff_functions``: the same function set read from the diff alone (the hunks' enclosing
  definitions), for instances without a repository.
- ``pool_features``: the features of one pool (a full pool or a single-generator slice), recomputed on
  that pool: line, file and function agreement with the others (and relative to the pool's best), the
  post-image findings, the rubric S.
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
from agentic_rubrics.exceptions import PatchParseError, RepoError
from agentic_rubrics.patch import enclosing_chains, is_empty_patch, is_test_path, parse_patch
from agentic_rubrics.rank.rerank import patch_features, self_consistency_ranking
from agentic_rubrics.rubric.postimage import analyze_patch

ERROR_KINDS = ("syntax_error", "undefined_name", "redefinition")

CONTENT_FEATURES = (
    "s",
    "s_rel_max",
    "agreement",
    "agreement_rel_max",
    "agreement_rel_mean",
    "file_agreement",
    "file_agreement_rel_max",
    "func_agreement",
    "func_agreement_rel_max",
    "not_applied",
    "new_error",
    "removes_used",
)
"""The features of ``offline_content``: the patch's effect on the code and its agreement with the others.
The patch-shape features of ``offline`` (size, file counts, touching tests) are left out: they mostly
tell which agent wrote the patch (see the source-predictability table)."""

CONTENT_GROUPS = {
    "rubric S": ("s", "s_rel_max"),
    "line agreement": ("agreement", "agreement_rel_max", "agreement_rel_mean"),
    "file agreement": ("file_agreement", "file_agreement_rel_max"),
    "function agreement": ("func_agreement", "func_agreement_rel_max"),
    "post-image findings": ("not_applied", "new_error", "removes_used"),
}


def patch_key(instance_id: str, patch: str) -> str:
    digest = hashlib.sha256(patch.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return f"{instance_id}:{digest}"


def _row(patch: str, tree: Path) -> dict[str, Any]:
    res = analyze_patch(tree, patch)
    cats = res.introduced_by_category()
    funcs = sorted(
        {
            f"{f.path}::{s.qualname.rsplit('.', 1)[-1]}"
            for f in res.files
            if not is_test_path(f.path)
            for s in f.symbols
        }
    )
    return {
        "method": res.apply.method,
        "applied": res.applied,
        "new_error": any(c in cats for c in ERROR_KINDS),
        "removes_used": bool(res.removed_still_used),
        "functions": funcs,
    }


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
            done[key] = {"key": key, **row}
            out.write(json.dumps(done[key]) + "\n")
            out.flush()
    timings = {"provision_s": round(provision_s, 1), "analysis_s": round(time.monotonic() - started, 1),
               "analysed_now": len(jobs)}  # fmt: skip
    return done, missing, timings


def diff_functions(patch: str) -> list[str] | None:
    """``path::name`` of the innermost definition around each changed line, from the diff alone."""
    if is_empty_patch(patch):
        return None
    try:
        parsed = parse_patch(patch)
    except PatchParseError:
        return None
    out: set[str] = set()
    for f in parsed.files:
        if is_test_path(f.path) or not f.path.endswith(".py"):
            continue
        for chain in enclosing_chains(f):
            out.add(f"{f.path}::{chain[-1][0] if chain else '<module>'}")
    return sorted(out)


def _mean_jaccard(sets: Mapping[str, set[str]], cid: str) -> float:
    others = [o for o in sets if o != cid]
    if not others:
        return 0.0
    vals = [
        len(sets[cid] & sets[o]) / len(sets[cid] | sets[o]) if sets[cid] | sets[o] else 0.0
        for o in others
    ]
    return sum(vals) / len(vals)


def pool_features(
    patches: Mapping[str, str],
    scores: Mapping[str, float | None],
    post: Mapping[str, dict[str, Any] | None],
) -> dict[str, dict[str, float]]:
    """Content and shape features of one pool's usable candidates (empty or unparsable: absent).

    ``post``: each candidate's post-image row, ``None`` without a repository (then the function set
    comes from the diff and the findings count as none).
    """
    agreement = self_consistency_ranking(patches)
    shape = patch_features(patches, agreement)
    funcs: dict[str, set[str]] = {}
    for cid, patch in patches.items():
        row = post.get(cid)
        if row is not None and row["applied"]:
            funcs[cid] = set(row["functions"])
        else:
            found = diff_functions(patch)
            funcs[cid] = set(found or [])
    rows: dict[str, dict[str, float]] = {}
    for cid, f in shape.items():
        if f is None:
            continue
        row = post.get(cid)
        rows[cid] = {
            **f,
            "s": scores.get(cid) or 0.0,
            "func_agreement": _mean_jaccard(funcs, cid),
            "not_applied": float(row is not None and not row["applied"]),
            "new_error": float(row is not None and row["new_error"]),
            "removes_used": float(row is not None and row["removes_used"]),
        }
    for key, how in (
        ("s", "max"),
        ("agreement", "max"),
        ("agreement", "mean"),
        ("file_agreement", "max"),
        ("func_agreement", "max"),
        ("log_changed_lines", "median"),
    ):
        values = sorted(r[key] for r in rows.values())
        if not values:
            continue
        ref = {"max": values[-1], "mean": sum(values) / len(values),
               "median": values[len(values) // 2]}[how]  # fmt: skip
        for r in rows.values():
            r[f"{key}_rel_{how}"] = r[key] - ref
    return rows
