"""How much of real SWE-bench the running half reaches: env-check and the tests verifier on the shared
development files, and the same candidates' outcomes in bubblewrap and in docker.

    nice -n 10 .venv/bin/python benchmarks/execution_coverage.py \\
        --repo-url 'file:///tmp/mirrors/{owner}__{name}.git' --work /tmp/coverage \\
        --out benchmarks/results/execution_coverage.json [--docker] [--compare 10]

For each development file (Lite: 202 instances, Verified: 137; the pools ``swebench_rerank.py`` uses:
full-run candidates, at least two per instance):

1. **env-check** (:mod:`agentic_rubrics.pipeline.envcheck`) of every instance: FAIL_TO_PASS with the
   gold patch and with none, in bubblewrap over a spec-built venv (``--env-spec``); with ``--docker``,
   an instance not runnable there is tried again in a container of its own image (``build-env``'s
   layout, ``--docker-spec``: Python 3.9 from bullseye where the harness uses it) through swe-rex's
   Docker deployment. ``runnable``: on either site; ``by_reason``: the last site's reason of the rest
   (docker's where it was tried; each site's in the row's ``sites``).
2. **the tests verifier's agreement** with the harness labels, on each instance runnable in
   bubblewrap: the artifact is the instance's test files after its test patch (those the harness runs:
   FAIL_TO_PASS and PASS_TO_PASS live in them; relative imports made absolute, the nearest conftest
   beside them, as ``tests_verifier_swebench.py`` does), ``agentic-rubrics run --verifiers tests``
   over the instance's candidates; predicted resolved = pass rate 1; every disagreement listed.
3. with ``--compare N``: on N instances runnable on both sites, every distinct candidate run with the
   harness's command in bubblewrap and in docker; resolved (every FAIL_TO_PASS and PASS_TO_PASS test
   passed) and each named test's status compared per candidate, every difference listed.

Resumable: every finished instance's rows are kept in ``WORK`` (``checks.jsonl``, ``runs/<id>/``,
``compare.jsonl``) and reused; ``--redo REASON,...`` checks again the rows with those reasons. Every run
has a timeout (``--timeout``), the process lowers its own priority (``nice 10``), one run at a time.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import os
import sys
from collections import Counter
from dataclasses import asdict
from pathlib import Path
from typing import Any

from coverage_runs import agreement_of, compare_instance, spec_for

from agentic_rubrics.datasets.sdist_trees import RULES, SDIST_PACKAGES, instance_trees
from agentic_rubrics.datasets.swebench import PoolOptions, load_candidates_file
from agentic_rubrics.datasets.swebench_tests import load_tested_instances
from agentic_rubrics.exceptions import RepoError
from agentic_rubrics.pipeline.envcheck import CheckRow, CheckSite, check_instances
from agentic_rubrics.runfolder.files import atomic_write_json
from agentic_rubrics.sandbox.testenv import EnvSpec, load_specs
from agentic_rubrics.sandbox.testrun import ExecLimits

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data" / "swebench"
SCHEMA = "agentic-rubrics/execution-coverage/1"


def row_key(site: str, instance: Any, spec: EnvSpec | None, approximate: str | None = None) -> str:
    """What a cached row depends on: the site, the instance, the spec that matched it and, for a
    repository a release sdist stands in for, the approximate-tree rule."""
    record = [site, instance.instance_id, spec.model_dump(mode="json") if spec else None]
    record += [approximate] if approximate else []
    return hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest()[:20]


class Rows:
    """A JSONL file of finished rows by key, appended one row at a time (a resume reuses them)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.rows: dict[str, dict[str, Any]] = {}
        if path.is_file():
            for line in path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    row = json.loads(line)
                    self.rows[row["key"]] = row

    def add(self, row: dict[str, Any]) -> None:
        self.rows[row["key"]] = row
        with self.path.open("a", encoding="utf-8") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")


class Checker:
    """env-check of one instance on one site, cached in ``checks.jsonl``."""

    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.trees = instance_trees(args.repo_url, args.repo_cache, args.approximate_trees)
        self.specs = load_specs(args.env_spec)
        self.docker_specs = load_specs(args.docker_spec) if args.docker or args.compare else {}
        self.cache = Rows(args.work / "checks.jsonl")
        self.redo = {r for r in args.redo.split(",") if r}
        self.limits = ExecLimits(timeout_s=args.timeout, excerpt_chars=6000)

    def tree(self, instance: Any) -> Path:
        """The instance's base commit, else its approximate tree (``--approximate-trees``)."""
        return self.trees(instance)

    def approximate(self, instance: Any) -> str | None:
        """The approximate-tree rule a row of ``instance`` depends on (``None``: a repository
        no sdist stands in for)."""
        return self.args.approximate_trees if instance.repo in SDIST_PACKAGES else None

    def row(self, site: str, instance: Any) -> dict[str, Any] | None:
        specs = self.specs if site == "bwrap" else self.docker_specs
        spec = spec_for(specs, instance.repo, instance.version)
        if site == "docker" and spec is None:
            return None
        key = row_key(site, instance, spec, self.approximate(instance))
        cached = self.cache.rows.get(key)
        if cached is not None and cached["row"]["reason"] not in self.redo:
            return cached
        if self.args.cached_only:
            return None
        check = self._bwrap(instance) if site == "bwrap" else self._docker(instance, spec)
        row = {"key": key, "site": site, "row": asdict(check)}
        self.cache.add(row)
        print(
            f"{site} {instance.instance_id}: {check.reason} {check.detail[:100]}", file=sys.stderr
        )
        return row

    def _bwrap(self, instance: Any) -> CheckRow:
        site = CheckSite(specs=self.specs, env_cache=self.args.env_cache, limits=self.limits)
        return check_instances([instance], self.tree, site)[0]

    def _docker(self, instance: Any, spec: EnvSpec | None) -> CheckRow:
        from agentic_rubrics.sandbox.docker_cli import DockerError

        row = CheckRow(instance.instance_id, instance.repo, instance.version, "", False, "")
        try:
            config = self.image(instance, spec)
        except RepoError as exc:
            row.reason, row.detail = "no_repository", str(exc)[:300]
            return row
        except DockerError as exc:
            row.reason, row.detail = exc.reason, str(exc)[-300:]
            return row
        site = CheckSite(python="python", swerex=config, limits=self.limits)
        return check_instances([instance], lambda _: None, site)[0]

    def image(self, instance: Any, spec: EnvSpec | None) -> Any:
        """The instance's environment image (built here, cached by hash) as a swerex-docker config."""
        from agentic_rubrics.sandbox.docker_images import ensure_env_image
        from agentic_rubrics.sandbox.swerex import swebench_image_id
        from agentic_rubrics.sandbox.swerex_docker import LOCAL_IMAGE, SweRexDockerConfig

        assert spec is not None
        name = LOCAL_IMAGE.format(swebench_id=swebench_image_id(instance.instance_id))
        ensure_env_image(
            name,
            spec,
            self.tree(instance),
            repo=instance.repo,
            version=instance.version,
            commit=instance.base_commit,
        )
        return SweRexDockerConfig(image=name, conda_env=None, pull="never")


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """instances, runnable, approximate_tree, by_reason, per repository and per site."""
    runnable = [r for r in rows if r["runnable"]]
    by_repo: dict[str, Counter[str]] = {}
    for r in rows:
        by_repo.setdefault(r["repo"], Counter())["instances"] += 1
        by_repo[r["repo"]]["runnable"] += bool(r["runnable"])
    return {
        "instances": len(rows),
        "runnable": len(runnable),
        "approximate_tree": sum(bool(r.get("approximate_tree")) for r in runnable),
        "runnable_by_site": dict(Counter(r["runnable_on"] for r in runnable)),
        "by_reason": dict(Counter(r["reason"] for r in rows if not r["runnable"]).most_common()),
        "by_repository": {k: dict(v) for k, v in sorted(by_repo.items())},
    }


def instance_rows(checker: Checker, instances: list[Any]) -> list[dict[str, Any]]:
    out = []
    for instance in instances:
        sites = {"bwrap": checker.row("bwrap", instance)}
        if sites["bwrap"] is None:  # --cached-only, and not checked yet
            row = {"instance_id": instance.instance_id, "repo": instance.repo, "runnable": False}
            out.append(row | {"runnable_on": None, "reason": "not_checked", "sites": {}})
            continue
        if checker.args.docker and not sites["bwrap"]["row"]["runnable"]:
            sites["docker"] = checker.row("docker", instance)
        done = {k: v["row"] for k, v in sites.items() if v is not None}
        last = list(done.values())[-1]  # docker's when tried: what its own environment said
        on = [k for k, v in done.items() if v["runnable"]]
        out.append(
            {
                "instance_id": instance.instance_id,
                "repo": instance.repo,
                "version": instance.version,
                "runnable": bool(on),
                "runnable_on": on[0] if on else None,
                "reason": "runnable" if on else last["reason"],
                "detail": "" if on else last["detail"][:160],
                "approximate_tree": any(v.get("approximate_tree") for v in done.values()),
                "sites": {
                    k: {"reason": v["reason"], "detail": v["detail"][:160]} for k, v in done.items()
                },
            }
        )
    return out


def agreement(
    args: argparse.Namespace,
    checker: Checker,
    rows: list[dict[str, Any]],
    tasks: dict[str, Any],
    records: dict[str, Any],
) -> dict[str, Any]:
    totals = Counter()
    per_instance, disagreements, missing = {}, [], Counter()
    for row in rows:
        if row["runnable_on"] is None or args.no_agreement:
            continue
        iid = row["instance_id"]
        if (args.cached_only or iid in args.skip_agreement.split(",")) and not (
            args.work / "runs" / iid / "result.json"
        ).is_file():
            continue
        record = records[iid]
        done = (args.work / "runs" / iid / "result.json").is_file()
        if row["runnable_on"] == "docker" and not done:  # in the image env-check ran it in
            checker.image(record, spec_for(checker.docker_specs, record.repo, record.version))
        result = agreement_of(args, record, tasks[iid], checker.tree(record), row["runnable_on"])
        per_instance[iid] = {k: v for k, v in result.items() if k != "disagreements"}
        disagreements += result["disagreements"]
        missing.update(result["missing"])
        totals["instances"] += 1
        for k in ("candidates", "graded", "agree"):
            totals[k] += result[k]
        ok = result["graded"] and result["agree"] / result["graded"] >= 0.95
        totals["instances_agree_95"] += bool(ok)
    return {
        "agreement": dict(totals),
        "missing": dict(missing),
        "per_instance": per_instance,
        "disagreements": disagreements,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--lite", type=Path, default=DATA / "lite_candidates.jsonl.gz")
    ap.add_argument("--verified", type=Path, default=DATA / "verified_candidates.jsonl.gz")
    ap.add_argument("--files", default="lite,verified", help="which development files")
    ap.add_argument("--repo-url", required=True)
    ap.add_argument("--repo-cache", type=Path, default=None)
    ap.add_argument("--env-spec", type=Path, default=ROOT / "benchmarks/envs/swebench_py311.json")
    ap.add_argument(
        "--docker-spec", type=Path, default=ROOT / "benchmarks/envs/swebench_images.json"
    )
    ap.add_argument("--env-cache", type=Path, default=Path("/tmp/envs"))
    ap.add_argument(
        "--approximate-trees",
        default="nearest",
        choices=[*RULES, "none"],
        help="a release sdist's tree where the repository is not to be had (marked so)",
    )
    ap.add_argument("--docker", action="store_true", help="try docker where bubblewrap fails")
    ap.add_argument("--compare", type=int, default=0, help="instances compared bwrap vs docker")
    ap.add_argument("--compare-instances", default="", help="these instances for --compare")
    ap.add_argument("--first", default="", help="check these repositories' instances first")
    ap.add_argument("--skip-agreement", default="", help="instances whose agreement is not run")
    ap.add_argument("--no-agreement", action="store_true")
    ap.add_argument(
        "--cached-only", action="store_true", help="run nothing: the JSON from the rows in WORK"
    )
    ap.add_argument("--repos", default="", help="only these repositories (comma-separated)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    ap.add_argument("--redo", default="", help="check again the rows with these reasons")
    ap.add_argument("--work", type=Path, default=Path("/tmp/coverage"))
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    os.nice(10)
    args.work.mkdir(parents=True, exist_ok=True)
    checker = Checker(args)
    out: dict[str, Any] = {"schema": SCHEMA, "command": sys.argv[1:]}
    if args.out.is_file():  # a run on one file keeps the other's results
        out = {**json.loads(args.out.read_text()), "schema": SCHEMA, "command": sys.argv[1:]}
    both: dict[str, dict[str, Any]] = {}
    for name in [f for f in args.files.split(",") if f]:
        path = getattr(args, name)
        pool = load_candidates_file(path, PoolOptions())
        tasks = {t.instance_id: t for t in pool.tasks}
        records = {i.instance_id: i for i in load_tested_instances(path) if i.instance_id in tasks}
        chosen = [records[t] for t in tasks]
        if args.repos:
            chosen = [i for i in chosen if i.repo in args.repos.split(",")]
        first = args.first.split(",")  # checked first; the JSON keeps the pool's order
        order = sorted(chosen, key=lambda i: first.index(i.repo) if i.repo in first else len(first))
        instance_rows(checker, order)
        rows = instance_rows(checker, chosen)
        out[name] = {**summarize(rows), "rows": rows}
        out[name] |= agreement(args, checker, rows, tasks, records)
        atomic_write_json(args.out, out)
        both |= {
            r["instance_id"]: (r, records[r["instance_id"]], tasks[r["instance_id"]]) for r in rows
        }
    if args.compare:
        out["docker_vs_bwrap"] = compare(args, checker, both)
        atomic_write_json(args.out, out)
    print(
        json.dumps(
            {
                k: {x: v.get(x) for x in ("instances", "runnable", "agreement")}
                for k, v in out.items()
                if isinstance(v, dict) and "runnable" in v
            }
        ),
        file=sys.stderr,
    )


def compare(args: argparse.Namespace, checker: Checker, both: dict[str, Any]) -> dict[str, Any]:
    wanted = [i for i in args.compare_instances.split(",") if i]
    if not wanted:
        wanted = [i for i, (r, _, _) in both.items() if r["runnable_on"] == "bwrap"]
    cache = Rows(args.work / "compare.jsonl")
    results = []
    for iid in wanted[: args.compare]:
        _, record, task = both[iid]
        if args.cached_only and not any(r.get("instance_id") == iid for r in cache.rows.values()):
            continue
        docker_row = checker.row("docker", record)
        spec = spec_for(checker.docker_specs, record.repo, record.version)
        if docker_row is None or not docker_row["row"]["runnable"]:
            results.append({"instance_id": iid, "skipped": "not runnable in docker"})
            continue
        key = row_key("compare", record, spec)
        if key not in cache.rows:
            config = checker.image(record, spec)
            result = asyncio.run(compare_instance(args, checker, record, task, config))
            cache.add({"key": key, **result})
        results.append(cache.rows[key])
    compared = [r for r in results if "candidates" in r]
    return {
        "instances": len(compared),
        "candidates": sum(len(r["candidates"]) for r in compared),
        "same_resolved": sum(c["same_resolved"] for r in compared for c in r["candidates"]),
        "same_outcomes": sum(c["same_outcomes"] for r in compared for c in r["candidates"]),
        "differences": [
            {"instance_id": r["instance_id"], **c}
            for r in compared
            for c in r["candidates"]
            if not (c["same_resolved"] and c["same_outcomes"])
        ],
        "instances_rows": results,
    }


if __name__ == "__main__":
    main()
