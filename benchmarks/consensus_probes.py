"""behaviour_consensus with examples run on every candidate's tree (issue 40's second signal).

For each development pool (full-run candidates, at least two) whose repository is at hand and whose
environment a spec builds (``benchmarks/envs/swebench_py311.json``: bubblewrap, Python 3.11), and which
has examples — the issue's (:func:`agentic_rubrics.rank.probe_inputs.issue_snippets`) or the changed
definitions' docstring examples in the base tree (:func:`~agentic_rubrics.rank.probe_inputs.tree_snippets`)
—: the probe runs on the base tree and on each candidate's tree
(:func:`~agentic_rubrics.rank.probes.probe_pool`), rows cached in ``--rows`` (resumable; only hashes).
Then, on the same pools: ``behaviour_consensus`` without outputs (as shipped), with them, and
self-consistency — Best@16, paired differences with percentile bootstrap intervals, full pools and
single-generator slices (every family with at least 15 pools), and where the outputs tell candidates
apart.

```bash
.venv/bin/python benchmarks/consensus_probes.py --data ../shared/data/swebench/lite_candidates.jsonl.gz \\
    --work /tmp/work_lite --repo-url 'file:///tmp/mirrors/{owner}__{name}.git' \\
    --repo-cache /tmp/probe_cache --env-cache /tmp/probe_envs --rows /tmp/probes_lite.jsonl \\
    --out benchmarks/results/consensus_probes_lite.json
```
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from content_features import patch_key
from content_rerank import family
from coverage_runs import spec_for

from agentic_rubrics.datasets.repos import RepoCache
from agentic_rubrics.datasets.swebench import PoolOptions, load_candidates_file
from agentic_rubrics.exceptions import RepoError, SandboxError
from agentic_rubrics.rank import metrics
from agentic_rubrics.rank.agreement import line_agreement
from agentic_rubrics.rank.consensus import consensus_record
from agentic_rubrics.rank.probe_inputs import issue_snippets, tree_snippets
from agentic_rubrics.rank.probes import probe_pool

SPECS = Path(__file__).resolve().parent / "envs" / "swebench_py311.json"


def _rows(path: Path) -> dict[str, dict[str, Any]]:
    if not path.exists():
        return {}
    return {r["instance_id"]: r for r in map(json.loads, path.read_text().splitlines()) if r}


def probe_task(task: Any, tree: Path, spec: Any, env_cache: Path) -> dict[str, Any]:
    """One pool's probe row: each distinct patch's outputs by ``patch_key``, the base's, reasons."""
    from agentic_rubrics.sandbox.built_files import add_built_files
    from agentic_rubrics.sandbox.testenv import build_env
    from agentic_rubrics.sandbox.testrun import PreparedTree

    started = time.monotonic()
    prepared = PreparedTree(tree)
    snippets = issue_snippets(task.problem_statement) + tree_snippets(
        prepared.path, [c.patch for c in task.candidates]
    )
    if not snippets:
        prepared.close()
        return {"instance_id": task.instance_id, "error": "no_examples"}
    try:
        interp = build_env(
            spec, prepared.path, cache_dir=env_cache, repo=task.repo, repo_version=task.version
        )
        add_built_files(interp.tree_files, prepared.path)
        distinct = {patch_key(task.instance_id, c.patch): c.patch for c in task.candidates}
        found = asyncio.run(
            probe_pool(prepared.path, distinct, snippets, python=interp.python,
                       read_only=interp.read_only)
        )  # fmt: skip
    finally:
        prepared.close()
    return {
        "instance_id": task.instance_id,
        "snippets": len(snippets),
        "from_issue": sum(1 for s in snippets if s.kind != "doctest"),
        "base": found.base,
        "outputs": found.outputs,
        "reasons": found.reasons,
        "cpu_s": round(found.cpu_s, 3),
        "seconds": round(time.monotonic() - started, 2),
        "runs": len(distinct) + 2,  # the base runs twice
    }


def run_probes(args: argparse.Namespace, tasks: list[Any]) -> dict[str, dict[str, Any]]:
    from agentic_rubrics.sandbox.testenv import EnvBuildError, load_specs

    specs = load_specs(args.specs)
    done = _rows(args.rows)
    cache = RepoCache(args.repo_cache, args.repo_url)
    todo = [
        t for t in tasks
        if t.instance_id not in done and spec_for(specs, t.repo, t.version) is not None
        and (not args.repos or t.repo in args.repos)
    ]  # fmt: skip
    print(f"probing {len(todo)} pools ({len(done)} cached)", flush=True)
    with args.rows.open("a") as out:
        for n, t in enumerate(todo, 1):
            try:
                tree = cache.checkout(t.repo, t.base_commit).path
                row = probe_task(t, tree, spec_for(specs, t.repo, t.version), args.env_cache)
            except (RepoError, EnvBuildError, SandboxError) as exc:
                row = {"instance_id": t.instance_id, "error": type(exc).__name__}
            done[t.instance_id] = row
            out.write(json.dumps(row) + "\n")
            out.flush()
            print(f"[{n}/{len(todo)}] {t.instance_id} {row.get('seconds', row.get('error'))}",
                  flush=True)  # fmt: skip
    return done


def _post_rows(work: Path) -> dict[str, dict[str, Any]]:
    path = work / "content_rows.jsonl"
    rows = {}
    for line in path.read_text().splitlines() if path.exists() else []:
        r = json.loads(line)
        if "delta" in r:
            rows[r["key"]] = r
    return rows


def _rank(
    task: Any, ids: list[str], post: dict[str, Any], probe: dict[str, Any] | None
) -> dict[str, dict]:
    patches = {c.id: c.patch for c in task.candidates if c.id in ids}
    agreement, _ = line_agreement(patches)
    rows = {c: post.get(patch_key(task.instance_id, p)) for c, p in patches.items()}
    probes = None
    if probe is not None and probe.get("base") is not None:
        outs = probe.get("outputs", {})
        why = probe.get("reasons") or {}
        probes = {
            "base": probe["base"],
            "outputs": {
                c: outs[patch_key(task.instance_id, p)]
                for c, p in patches.items()
                if patch_key(task.instance_id, p) in outs
            },
            "reasons": {
                c: why[patch_key(task.instance_id, p)]
                for c, p in patches.items()
                if patch_key(task.instance_id, p) in why
            },
        }
    plain = consensus_record(patches, rows, agreement)
    probed = consensus_record(patches, rows, agreement, probes)
    return {
        "self_consistency": dict(agreement),
        "behaviour_consensus": plain["rank"],
        "behaviour_consensus_probes": probed["rank"],
        "probes_changed_first": _changed_first(probed["rank"], probes),
        "_informative": probed.get("informative", 0),
    }


def _changed_first(rank: dict[str, float | None], probes: dict[str, Any] | None) -> dict:
    """Not shipped, looked at after the outputs were seen: the same ranks, but a candidate whose
    outputs are the base's on every example ranks below every one that changes one (when some does)."""
    base = (probes or {}).get("base")
    outs = (probes or {}).get("outputs") or {}
    if not base or any(h is None for h in base):
        return dict(rank)
    changed = {c for c, o in outs.items() if list(o) != list(base) and None not in o}
    if not changed:
        return dict(rank)
    top = max((v for v in rank.values() if v is not None), default=0.0) + 1
    return {c: None if v is None else v + (top if c in changed else 0) for c, v in rank.items()}


def _pools(tasks: list[Any]) -> list[tuple[str, Any, list[str]]]:
    """(slice name, task, candidate ids): each full pool, and each family's slice of it."""
    out = []
    for t in tasks:
        out.append(("all", t, [c.id for c in t.candidates]))
        fams: dict[str, list[str]] = {}
        for c in t.candidates:
            fams.setdefault(family(c.source), []).append(c.id)
        out += [(f"single_generator.{f}", t, ids) for f, ids in fams.items() if len(ids) >= 2]
    return out


def evaluate(tasks: list[Any], post: dict, probes: dict, resamples: int) -> dict[str, Any]:
    methods = (
        "self_consistency", "behaviour_consensus", "behaviour_consensus_probes", "probes_changed_first"
    )  # fmt: skip
    per: dict[str, list[dict[str, Any]]] = {}
    for name, t, ids in _pools(tasks):
        labels = {c.id: bool(c.resolved) for c in t.candidates if c.id in ids}
        r = _rank(t, ids, post, probes.get(t.instance_id))
        ys = [int(labels[c]) for c in ids]
        best = {m: metrics.best_at_k([r[m].get(c) for c in ids], ys, 16) or 0.0 for m in methods}
        row = {"instance_id": t.instance_id, "informative": r["_informative"], **best}
        per.setdefault(name, []).append(row)
        if r["_informative"]:
            per.setdefault(f"{name} (outputs tell apart)", []).append(row)
    out = {}
    for name, rows in sorted(per.items()):
        if name.startswith("single_generator.") and len(rows) < 15:
            continue
        out[name] = {"pools": len(rows), **{m: metrics.mean(r[m] for r in rows) for m in methods}}
        for a, b in (("behaviour_consensus_probes", "behaviour_consensus"),
                     ("behaviour_consensus_probes", "self_consistency"),
                     ("behaviour_consensus", "self_consistency"),
                     ("probes_changed_first", "behaviour_consensus")):  # fmt: skip
            diffs = [r[a] - r[b] for r in rows]
            ci = (
                metrics.bootstrap_ci(diffs, metrics.mean, n_resamples=resamples)
                if resamples
                else None
            )
            out[name][f"{a} - {b}"] = {
                "mean": metrics.mean(diffs),
                "ci": [round(ci[0], 4), round(ci[1], 4)] if ci else None,
                "better": sum(d > 0 for d in diffs),
                "worse": sum(d < 0 for d in diffs),
                "changed": [r["instance_id"] for r in rows if r[a] != r[b]],
            }
    return out


def diagnostics(tasks: list[Any], probes: dict[str, Any]) -> dict[str, Any]:
    """How often the probe ran, told candidates apart, and left a resolved candidate's outputs as
    the base's on every example."""
    ran = [p for p in probes.values() if p.get("base") is not None]
    usable = [p for p in ran if all(h is not None for h in p["base"])]
    by_id = {t.instance_id: t for t in tasks}
    same_as_base = {"resolved": 0, "unresolved": 0}
    for p in usable:
        t = by_id.get(p["instance_id"])
        for c in t.candidates if t else []:
            o = p["outputs"].get(patch_key(t.instance_id, c.patch))
            if o is not None and list(o) == list(p["base"]):
                same_as_base["resolved" if c.resolved else "unresolved"] += 1
    return {
        "probed_pools": len(probes),
        "errors": sum(1 for p in probes.values() if "error" in p),
        "base_ran": len(ran),
        "usable": len(usable),
        "reasons": sorted({r for p in probes.values() for r in (p.get("reasons") or {}).values()}),
        "cpu_s_per_run": (
            sum(p["cpu_s"] for p in ran) / max(1, sum(p["runs"] for p in ran)) if ran else None
        ),
        "outputs_equal_base": same_as_base,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument(
        "--work", type=Path, required=True, help="swebench_rerank.py --content's WORK"
    )
    parser.add_argument("--repo-url", required=True)
    parser.add_argument("--repo-cache", type=Path, required=True)
    parser.add_argument("--env-cache", type=Path, required=True)
    parser.add_argument("--specs", type=Path, default=SPECS)
    parser.add_argument("--rows", type=Path, required=True, help="the probe rows cache (JSONL)")
    parser.add_argument("--repos", nargs="*", default=[], help="only these repositories")
    parser.add_argument("--no-run", action="store_true", help="only evaluate the cached rows")
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    pool = load_candidates_file(args.data, PoolOptions(full_run_only=True, min_candidates=2))
    tasks = pool.tasks
    probes = _rows(args.rows) if args.no_run else run_probes(args, tasks)
    result = {
        "command": sys.argv[1:] if argv is None else argv,
        "data": args.data.name,
        "pools": len(tasks),
        "diagnostics": diagnostics(tasks, probes),
        "results": evaluate(tasks, _post_rows(args.work), probes, args.resamples),
    }
    text = json.dumps(result, indent=1, sort_keys=True)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        tmp = args.out.with_suffix(".tmp")
        tmp.write_text(text)
        tmp.replace(args.out)
    print(json.dumps({k: v for k, v in result.items() if k != "results"}, indent=1))
    for name, r in result["results"].items():
        d = r["behaviour_consensus_probes - behaviour_consensus"]
        print(f"{name:<50} {r['pools']:>4}  SC {100*r['self_consistency']:.1f}  BC"
              f" {100*r['behaviour_consensus']:.1f}  BC+out {100*r['behaviour_consensus_probes']:.1f}"
              f"  Δ {100*d['mean']:+.1f} {d['ci']} {d['better']}/{d['worse']}"
              f"  changed-first {100*r['probes_changed_first']:.1f}")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
