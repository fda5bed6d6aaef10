"""Rerank real SWE-bench candidates and measure every method on the same instances.

    python benchmarks/swebench_rerank.py --data ../shared/data/swebench/lite_candidates.jsonl.gz \\
        --out benchmarks/results/lite

Defaults: full-run candidates only (their runs published failing patches too), instances with at least
two candidates, no deduplication, no cap per source. Methods (keys of results.json):

- ``random``: a uniform pick (Best@K = Random@K).
- ``self_consistency``: mean similarity of a candidate's changed lines to each other candidate's,
  ``2 LCS(A, B) / (|A| + |B|)`` over the first 10,000 changed lines of each (rapidfuzz's normalized Indel
  similarity; ``agentic_rubrics.rank.rerank.line_similarity``). Earlier figures used difflib's ratio.
- ``static_rubric``: the rule-based rubric's S: the issue-only static rubric (no repository).
- with ``--repo-url TEMPLATE`` (e.g. ``file:///tmp/mirrors/{owner}__{name}.git``): each instance's
  repository is fetched at its base commit into the cache (``--repo-cache``), the static rubric is written
  in it, and ``grounded_vs_issue_only`` compares it with the issue-only one on the instances whose
  repository was available (the others counted by reason), with the gold-file and gold-function hit rates
  of the rubrics' items and the provisioning times (see ``grounded_compare.py``).
- ``offline``: the offline ranking, with weights fitted by logistic regression **leaving one repository
  out** (each repository's instances are scored by weights fitted on the other repositories only).
- ``offline_shipped``: the weights the library ships (fitted on all of this file: in-sample, shown only
  to check that they match the cross-validated ones).
- with ``--content`` (needs ``--repo-url``): ``content`` in results.json (``content_rerank.py``):
  ``default`` (the library's no-model default as shipped: its selector and shipped weights,
  ``default_ranking.py``), ``best_system_prior``, ``offline_content`` (content features only, leave-one-repository-out), the
  source-predictability table, single-generator slices, every method on the same instances with 95%
  intervals, instances with a repository apart from those without. Post-image rows are cached in
  ``WORK/content_rows.jsonl``; ``--resume`` reuses the run folders of an earlier run.
  ``--write-weights FILE``: the weights the library ships (``content_fit.py``).
- with ``--model``: ``llm_rubric`` (the model writes the rubric from the issue and judges),
  ``agentic_rubric`` (needs ``--repo-root``: the model explores ``DIR/<instance_id>``), and
  ``patch_classifier``.

Scoring reads the problem statement and the candidate patches only; gold patches serve the sanity check
(S of the gold patch and of the empty patch), labels only the metrics. The ablation shows what each
group of offline signals adds (cross-validated the same way).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from content_fit import fit_weights
from rerank_metrics import method_metrics, print_summary, sanity

from agentic_rubrics.datasets.sdist_trees import RULES
from agentic_rubrics.datasets.swebench import (
    PoolOptions,
    load_candidates_file,
    read_records,
    write_tasks,
)
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.rank.offline import OFFLINE_FEATURES, offline_feature_rows, offline_ranking
from agentic_rubrics.report.build import load_results
from agentic_rubrics.report.results import TaskResult
from agentic_rubrics.runfolder.folder import RunFolder

GROUPS = {
    "rubric S": ("s", "s_rel_max"),
    "line agreement": ("agreement", "agreement_rel_max", "agreement_rel_mean"),
    "file agreement": ("file_agreement", "file_agreement_rel_max"),
    "patch shape": (
        "log_changed_lines",
        "log_changed_lines_rel_median",
        "files",
        "new_files",
        "touches_tests",
    ),
}


# --------------------------------------------------------------------------- fitting


def feature_rows(t: TaskResult) -> dict[str, dict[str, float]]:
    features = t.progress.baselines["offline_features"]
    return offline_feature_rows(features, {cid: s.score for cid, s in t.scores.items()})


def loro_rankings(
    tasks: list[TaskResult], repos: dict[str, str], features: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """Offline rankings where each repository's tasks are scored by weights fitted on the others."""
    out: dict[str, dict[str, float | None]] = {}
    rows = {t.instance_id: feature_rows(t) for t in tasks}
    for repo in sorted(set(repos.values())):
        train_rows, train_y = [], []
        for t in tasks:
            if repos[t.instance_id] != repo:
                for cid, r in rows[t.instance_id].items():
                    train_rows.append(r)
                    train_y.append(int(bool(t.labels[cid])))
        weights, bias = fit_weights(train_rows, train_y, features)
        for t in tasks:
            if repos[t.instance_id] == repo:
                out[t.instance_id] = offline_ranking(
                    t.progress.baselines["offline_features"],
                    {cid: s.score for cid, s in t.scores.items()},
                    weights,
                    bias,
                )
    return out


# --------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--data", type=Path, required=True, help="combined candidates file (.jsonl or .jsonl.gz)"
    )
    parser.add_argument("--out", type=Path, help="write results.json here")
    parser.add_argument(
        "--work",
        type=Path,
        help="run folders and the tasks file (default: runs/swebench_rerank/<data name>; they hold"
        " the candidates' patches, so keep them out of the repository)",
    )
    parser.add_argument("--model", help="litellm model for the LLM methods")
    parser.add_argument("--api-base", help="OpenAI-compatible server for --model")
    parser.add_argument(
        "--repo-root", type=Path, help="DIR/<instance_id> holds each repository at its base commit"
    )
    parser.add_argument(
        "--all-candidates", action="store_true", help="also resolved-only sources (biased)"
    )
    parser.add_argument("--min-candidates", type=int, default=2)
    parser.add_argument("--dedup", action="store_true")
    parser.add_argument("--cap-per-source", type=int)
    parser.add_argument("--max-instances", type=int, help="only the first N instances (quick runs)")
    parser.add_argument(
        "--exclude-from",
        type=Path,
        action="append",
        default=[],
        help="leave out instances that also appear in this file (a held-out test of the shipped weights)",
    )
    parser.add_argument(
        "--resamples", type=int, default=1000, help="bootstrap resamples (0: no intervals)"
    )
    parser.add_argument(
        "--repo-url",
        default="none",
        help="fetch each instance's repository from this URL template ({repo}, {owner}, {name}) and"
        " compare the static rubric grounded in it with the issue-only one; none (default): issue-only",
    )
    parser.add_argument("--repo-cache", type=Path, help="the repository cache folder")
    parser.add_argument(
        "--content",
        action="store_true",
        help="the content study (content_rerank.py); needs --repo-url",
    )
    parser.add_argument(
        "--approximate-trees",
        default="none",
        choices=("none", *RULES),
        help="with --content: where a repository too big to mirror (Django) cannot be had, the"
        " post-image rows are read on the release sdist this rule chooses (agentic_rubrics.datasets"
        ".sdist_trees; kept beside --repo-cache); the rubric stays the one written without a tree",
    )
    parser.add_argument(
        "--write-weights",
        type=Path,
        help="with --content: write the offline_content weights fitted on every single-generator pool"
        " (agentic_rubrics/content_weights.json) with their provenance",
    )
    parser.add_argument(
        "--resume",
        action="store_true",
        help="reuse the run folders of an earlier run (same settings)",
    )
    args = parser.parse_args(argv)

    started = time.monotonic()
    options = PoolOptions(
        full_run_only=not args.all_candidates,
        min_candidates=args.min_candidates,
        dedup=args.dedup,
        cap_per_source=args.cap_per_source,
    )
    pool = load_candidates_file(args.data, options)
    excluded: set[str] = set()
    for other in args.exclude_from:
        excluded |= {r["instance_id"] for _, r in read_records(other)}
    pool.tasks = [t for t in pool.tasks if t.instance_id not in excluded]
    if args.max_instances:
        pool.tasks = pool.tasks[: args.max_instances]
    work = args.work or Path("runs") / "swebench_rerank" / args.data.name.split(".")[0]
    tasks_file = write_tasks(pool, work / "tasks.jsonl")
    repos = {t.instance_id: t.repo for t in pool.tasks}
    static_dir = work / "static"
    selectors = ["offline", "rubric", "self_consistency", "random"]
    # the issue-only static rubric on every instance (no repository), as the baselines read it
    config = load_config(
        None,
        {
            "bootstrap_resamples": 0,
            "plots": False,
            "selectors": selectors,
            "repos": {"url_template": "none"},
        },
    )
    # explore and judge only: the metrics below read the folder once (`agentic-rubrics report` on it
    # writes the product's report)
    run(tasks_file, static_dir, config, restart=not args.resume, stages=("explore", "judge"))
    policy = config.policy
    tasks = [
        t
        for t in load_results(
            RunFolder(static_dir), policy=policy, selectors=config.selectors, seed=0
        )
        if t.fully_labelled
    ]

    methods: dict[str, Any] = {}
    rank = lambda name: lambda t: t.rankings[name]  # noqa: E731
    methods["random"] = method_metrics(tasks, rank("random"), args.resamples)
    methods["self_consistency"] = method_metrics(tasks, rank("self_consistency"), args.resamples)
    methods["static_rubric"] = method_metrics(
        tasks,
        rank("rubric"),
        args.resamples,
        auc_values=lambda t: {c: s.score for c, s in t.scores.items()},
    )
    cv = loro_rankings(tasks, repos, OFFLINE_FEATURES)
    methods["offline"] = method_metrics(tasks, lambda t: cv[t.instance_id], args.resamples)
    methods["offline_shipped"] = method_metrics(tasks, rank("offline"), 0)

    ablation: dict[str, Any] = {}
    for group, names in GROUPS.items():
        kept = [f for f in OFFLINE_FEATURES if f not in names]
        without = loro_rankings(tasks, repos, kept)
        only = loro_rankings(tasks, repos, list(names))
        m_without = method_metrics(tasks, lambda t, r=without: r[t.instance_id], 0)
        m_only = method_metrics(tasks, lambda t, r=only: r[t.instance_id], 0)
        ablation[group] = {
            "without": {
                "best_at_16": m_without["best_at_k"]["16"],
                "roc_auc": m_without["roc_auc"],
            },
            "alone": {"best_at_16": m_only["best_at_k"]["16"], "roc_auc": m_only["roc_auc"]},
        }
    all_rows, all_y = [], []
    for t in tasks:
        for cid, r in feature_rows(t).items():
            all_rows.append(r)
            all_y.append(int(bool(t.labels[cid])))
    weights, bias = fit_weights(all_rows, all_y, OFFLINE_FEATURES)

    grounded, grounded_tasks = None, []
    if args.repo_url.strip().lower() not in ("", "none"):
        grounded, grounded_tasks = grounded_run(args, tasks_file, work, selectors, tasks, pool.gold)
    content = None
    if args.content and grounded is not None:
        from content_study import content_results

        content = content_results(args, pool, tasks, grounded_tasks, cv, work)
    if args.model:
        methods.update(llm_methods(args, tasks_file, work, tasks))

    results = {
        "command": "python benchmarks/swebench_rerank.py "
        + " ".join(argv if argv is not None else sys.argv[1:]),
        "data": args.data.name,
        "instances": len(tasks),
        "candidates": sum(len(t.labels) for t in tasks),
        "options": vars(options),
        "dropped": pool.dropped,
        "excluded_instances": len(excluded),
        "methods": methods,
        "grounded_vs_issue_only": grounded,
        "content": content,
        "ablation_offline": ablation,
        "sanity": sanity(tasks, pool.gold, policy),
        "weights_fitted_on_all": {"weights": weights, "bias": bias},
        "seconds": round(time.monotonic() - started, 1),
    }
    print_summary(results)
    if args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        (args.out / "results.json").write_text(json.dumps(results, indent=2, sort_keys=True) + "\n")
    return 0


def grounded_run(
    args: argparse.Namespace,
    tasks_file: Path,
    work: Path,
    selectors: list[str],
    issue_only: list[TaskResult],
    gold: dict[str, str],
) -> tuple[dict[str, Any], list[TaskResult]]:
    """The static rubric written in each instance's repository, fetched through the cache."""
    from grounded_compare import compare

    repos = {
        "url_template": args.repo_url,
        "cache_dir": str(args.repo_cache) if args.repo_cache else None,
    }
    config = load_config(
        None, {"bootstrap_resamples": 0, "plots": False, "selectors": selectors, "repos": repos}
    )
    folder = work / "static_grounded"
    run(tasks_file, folder, config, restart=not args.resume)
    results = load_results(
        RunFolder(folder), policy=config.policy, selectors=config.selectors, seed=0
    )
    grounded = [t for t in results if t.labelled]
    return compare(folder, grounded, issue_only, gold, method_metrics, args.resamples), grounded


def llm_methods(
    args: argparse.Namespace, tasks_file: Path, work: Path, static_tasks: list[TaskResult]
) -> dict[str, Any]:
    """The model-backed methods, through the pipeline like a user would run them."""
    out: dict[str, Any] = {}
    model = {"model": args.model, "api_base": args.api_base}
    fetched = {
        "url_template": args.repo_url,
        "cache_dir": str(args.repo_cache) if args.repo_cache else None,
    }
    runs: dict[str, dict[str, Any]] = {
        "llm_rubric": {
            "explorer": {"kind": "issue-only", "model": model},
            "repos": {"url_template": "none"},
        }
    }
    if args.repo_url.strip().lower() not in ("", "none") and not args.repo_root:
        runs["agentic_rubric"] = {"explorer": {"kind": "agent", "model": model}, "repos": fetched}
    elif args.repo_root:
        with_repos = work / "tasks_with_repos.jsonl"
        rows = [json.loads(line) for line in tasks_file.read_text().splitlines() if line.strip()]
        for r in rows:
            r["repo_path"] = str(args.repo_root / r["instance_id"])
        with_repos.write_text("".join(json.dumps(r) + "\n" for r in rows))
        runs["agentic_rubric"] = {
            "explorer": {"kind": "agent", "model": model},
            "_tasks": str(with_repos),
        }
    for name, settings in runs.items():
        tasks_path = Path(settings.pop("_tasks", str(tasks_file)))
        config = load_config(None, {**settings, "judge": {"kind": "llm", "model": model},
                                    "bootstrap_resamples": 0})  # fmt: skip
        folder = work / name
        run(tasks_path, folder, config)
        results = [
            t
            for t in load_results(
                RunFolder(folder), policy=config.policy, selectors=config.selectors, seed=0
            )
            if t.fully_labelled
        ]
        out[name] = method_metrics(results, lambda t: t.rankings["rubric"], args.resamples,
                                   auc_values=lambda t: {c: s.score for c, s in t.scores.items()})  # fmt: skip
        if name == "llm_rubric":
            out["patch_classifier"] = method_metrics(
                results, lambda t: t.rankings["patch_classifier"], args.resamples
            )
    return out


if __name__ == "__main__":
    raise SystemExit(main())
