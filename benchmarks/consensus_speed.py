"""CPU per candidate of behaviour_consensus against offline_content, with and without the task's tree.

    python benchmarks/consensus_speed.py --data ../shared/data/swebench/lite_candidates.jsonl.gz \\
        --repo-url 'file:///tmp/mirrors/{owner}__{name}.git' --repo-cache /tmp/cache \\
        --tree-instances 40 --out benchmarks/results/consensus_speed.json

What each selector computes at judge time, in CPU seconds of this process (``time.process_time``), per
candidate, on the file's pools (full-run candidates, instances with at least two):

- **without a tree** (the offline default: no repository), every pool of the file: offline_content's
  features (``content_features``: line, file and function agreement from the diff) against
  behaviour_consensus's (``consensus_record``: diff signatures, groups, supports), each with the line
  agreement both share (``line_agreement``);
- **with the tree**, on the first ``--tree-instances`` instances whose repository the cache can export:
  the post-image analysis every selector shares, run twice — once as shipped (it writes out each
  changed file's normal form for behaviour_consensus, :mod:`agentic_rubrics.rubric.postimage.delta`)
  and once with that step replaced by a no-op (what the analysis cost before) — then each selector's
  own features on the rows. offline_content's total is the analysis without the delta plus its
  features; behaviour_consensus's the analysis with it plus its features.

Runs in this process, one thread; run it under ``nice`` on a shared machine and read the ratio, not the
absolute times (the machine's speed drifts).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.repos import RepoCache
from agentic_rubrics.datasets.repos_config import RepoConfig
from agentic_rubrics.datasets.swebench import PoolOptions, load_candidates_file
from agentic_rubrics.exceptions import RepoError
from agentic_rubrics.rank.agreement import line_agreement
from agentic_rubrics.rank.consensus import consensus_record
from agentic_rubrics.rank.content import content_features, post_row
from agentic_rubrics.rubric.postimage import analyze_patch
from agentic_rubrics.rubric.postimage import behaviour as behaviour_module


def _cpu(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.process_time()
    out = fn()
    return time.process_time() - t0, out


def _selectors(pools: list[dict[str, str]], rows: list[dict[str, Any]]) -> dict[str, float]:
    """CPU seconds of each selector's own features over the pools (line agreement counted once)."""
    agree_s = content_s = consensus_s = 0.0
    for patches, post in zip(pools, rows, strict=True):
        s, (agreement, _) = _cpu(lambda p=patches: line_agreement(p))
        agree_s += s
        content_s += _cpu(lambda p=patches, r=post, a=agreement: content_features(p, r, a))[0]
        consensus_s += _cpu(lambda p=patches, r=post, a=agreement: consensus_record(p, r, a))[0]
    return {"line_agreement_s": agree_s, "offline_content_s": content_s,
            "behaviour_consensus_s": consensus_s}  # fmt: skip


def _analyses(tasks: list[Any], trees: dict[str, Path], delta: bool) -> tuple[float, list[dict]]:
    """CPU seconds of the post-image analyses of every candidate, with or without the delta."""
    shipped = behaviour_module.normal_delta
    if not delta:
        behaviour_module.normal_delta = lambda pre, post: ()  # type: ignore[assignment]
    try:
        total, rows = 0.0, []
        for t in tasks:
            found = {}
            tree = trees[t.instance_id]
            for c in t.candidates:
                s, result = _cpu(lambda c=c, tree=tree: analyze_patch(tree, c.patch))
                total += s
                found[c.id] = post_row(result)
            rows.append(found)
        return total, rows
    finally:
        behaviour_module.normal_delta = shipped


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--repo-url", required=True)
    parser.add_argument("--repo-cache", type=Path)
    parser.add_argument("--tree-instances", type=int, default=40)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    pool = load_candidates_file(args.data, PoolOptions(full_run_only=True, min_candidates=2))
    patches = [{c.id: c.patch for c in t.candidates} for t in pool.tasks]
    n_all = sum(len(p) for p in patches)
    plain = _selectors(patches, [{} for _ in patches])
    cache = RepoCache.from_config(RepoConfig(url_template=args.repo_url, cache_dir=args.repo_cache))
    trees: dict[str, Path] = {}
    for t in pool.tasks:
        if len(trees) >= args.tree_instances:
            break
        try:
            trees[t.instance_id] = cache.checkout(t.repo, t.base_commit).path
        except RepoError:
            continue
    tasks = [t for t in pool.tasks if t.instance_id in trees]
    n_tree = sum(len(t.candidates) for t in tasks)
    before_s, _ = _analyses(tasks, trees, delta=False)
    with_s, rows = _analyses(tasks, trees, delta=True)
    own = _selectors([{c.id: c.patch for c in t.candidates} for t in tasks], rows)
    ms = lambda s, n: round(1000 * s / n, 3)  # noqa: E731
    no_tree = {
        "instances": len(pool.tasks),
        "candidates": n_all,
        "ms_per_candidate": {k.removesuffix("_s"): ms(v, n_all) for k, v in plain.items()},
    }
    offline_content = before_s + own["line_agreement_s"] + own["offline_content_s"]
    consensus = with_s + own["line_agreement_s"] + own["behaviour_consensus_s"]
    with_tree = {
        "instances": len(tasks),
        "candidates": n_tree,
        "ms_per_candidate": {
            "analysis_without_delta": ms(before_s, n_tree),
            "analysis_with_delta": ms(with_s, n_tree),
            **{k.removesuffix("_s"): ms(v, n_tree) for k, v in own.items()},
            "offline_content_total": ms(offline_content, n_tree),
            "behaviour_consensus_total": ms(consensus, n_tree),
        },
        "ratio_behaviour_consensus_over_offline_content": round(consensus / offline_content, 3),
    }
    plain_ratio = (plain["line_agreement_s"] + plain["behaviour_consensus_s"]) / (
        plain["line_agreement_s"] + plain["offline_content_s"]
    )
    results = {
        "command": "python benchmarks/consensus_speed.py " + " ".join(argv or sys.argv[1:]),
        "data": args.data.name,
        "without_tree": {
            **no_tree,
            "ratio_behaviour_consensus_over_offline_content": round(plain_ratio, 3),
        },
        "with_tree": with_tree,
    }
    print(json.dumps(results, indent=2))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
