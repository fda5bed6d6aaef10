"""The tests verifier end to end on real SWE-bench instances, with the harness's own tests.

For each chosen Lite instance (runnable per ``env-check`` in a spec-built venv), the artifact is the
instance's FAIL_TO_PASS test file(s) in their post-test-patch form (``DIR/<instance_id>/``, what
``--tests DIR`` reads; the repository's nearest ``conftest.py`` below the repository's root beside them), and
``agentic-rubrics run --tasks FILE --verifiers tests --tests DIR --test-env-spec FILE`` grades every candidate. A
test file copied into ``agentic_rubrics_tests/`` loses its package: its relative imports (``from .
import x``, xarray's) are rewritten to the package's absolute name (``from xarray.tests import x``),
nothing else is changed. Per instance: candidates graded, agreement of ``pass_rate == 1`` with the
harness's ``resolved`` label, missing by reason, CPU-seconds per candidate.

    .venv/bin/python benchmarks/tests_verifier_swebench.py \\
        --data ../shared/data/swebench/lite_candidates.jsonl.gz \\
        --repo-url 'file:///tmp/mirrors/{owner}__{name}.git' --env-cache /tmp/envs \\
        --out benchmarks/results/tests_verifier_swebench.json
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.repos import RepoCache
from agentic_rubrics.datasets.swebench import read_records
from agentic_rubrics.sandbox.testlogs import directives

ROOT = Path(__file__).resolve().parents[1]


def _shown(arg: str) -> str:
    """A path inside this checkout as the results file records it: relative to the checkout."""
    path = Path(arg)
    if path.is_absolute() and path.resolve().is_relative_to(ROOT):
        return str(path.resolve().relative_to(ROOT))
    return arg


DEFAULT = (
    "mwaskom__seaborn-3190,pydata__xarray-5131,pydata__xarray-4248,"
    "pydata__xarray-3364,pydata__xarray-4493,pydata__xarray-4094,mwaskom__seaborn-2848"
)
RELATIVE = re.compile(r"^(\s*from\s+)(\.+)([\w.]*)(\s+import\s)", re.MULTILINE)


def absolute_imports(text: str, package: str) -> str:
    """``from . import x`` / ``from .mod import x`` -> ``from <package>[.mod] import x``."""

    def fix(m: re.Match[str]) -> str:
        parts = package.split(".")
        up = len(m.group(2)) - 1
        base = ".".join(parts[: len(parts) - up] if up else parts)
        name = f"{base}.{m.group(3)}" if m.group(3) else base
        return f"{m.group(1)}{name}{m.group(4)}"

    return RELATIVE.sub(fix, text)


def test_files(record: dict[str, Any], tree: Path) -> dict[str, str]:
    """The FAIL_TO_PASS files after the test patch (plus their folder's conftest.py)."""
    names = sorted({t.split("::")[0] for t in record["fail_to_pass"]})
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for path in directives(record["test_patch"]):
            if (tree / path).is_file():
                (work / path).parent.mkdir(parents=True, exist_ok=True)
                (work / path).write_bytes((tree / path).read_bytes())
        done = subprocess.run(
            ["patch", "-p1", "-s", "-d", str(work)],
            input=record["test_patch"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"{record['instance_id']}: test patch: {done.stdout}{done.stderr}")
        out = {}
        for name in names:
            package = str(Path(name).parent).replace("/", ".")
            out[Path(name).name] = absolute_imports((work / name).read_text(), package)
            # the nearest conftest.py below the root (the root's applies to agentic_rubrics_tests/)
            for folder in [Path(name).parent, *Path(name).parent.parents][:-1]:
                conftest = tree / folder / "conftest.py"
                if conftest.is_file() and "conftest.py" not in out:
                    where = str(folder).replace("/", ".")
                    out["conftest.py"] = absolute_imports(conftest.read_text(), where)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, required=True)
    ap.add_argument("--instances", default=DEFAULT)
    ap.add_argument("--repo-url", required=True)
    ap.add_argument("--repo-cache", type=Path, default=None)
    ap.add_argument("--env-spec", type=Path, default=ROOT / "benchmarks/envs/swebench_py311.json")
    ap.add_argument("--env-cache", type=Path, default=Path("/tmp/envs"))
    ap.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds for one run of the tests (tests.timeout_s, through --config; default 120)",
    )
    ap.add_argument("--work", type=Path, default=None)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    wanted = [i for i in args.instances.split(",") if i]
    records = {
        r["instance_id"]: r for _, r in read_records(args.data) if r["instance_id"] in wanted
    }
    missing = [i for i in wanted if i not in records]
    if missing:
        raise SystemExit(f"{args.data}: no record for {', '.join(missing)}")
    work = args.work or Path(tempfile.mkdtemp(prefix="tests-verifier-swebench-"))
    repos = RepoCache(args.repo_cache, args.repo_url)
    rows = []
    for iid in wanted:
        r = records[iid]
        tree = repos.checkout(r["repo"], r["base_commit"]).path
        given = work / "tests" / iid
        given.mkdir(parents=True, exist_ok=True)
        for name, text in test_files(r, tree).items():
            (given / name).write_text(text)
        cands = [
            {"id": f"c{i + 1:02d}", "source": c.get("source"), "patch": c["patch"]}
            for i, c in enumerate(r["candidates"])
        ]
        row = {k: r[k] for k in ("instance_id", "repo", "base_commit", "version")}
        rows.append({**row, "problem_statement": r["problem_statement"], "candidates": cands})
    tasks = work / "tasks.jsonl"
    tasks.write_text("".join(json.dumps(x) + "\n" for x in rows))
    cmd = [
        str(Path(sys.executable).parent / "agentic-rubrics"),
        "run",
        "--tasks",
        str(tasks),
        "--out",
        str(work / "run"),
        "--verifiers",
        "tests",
        "--tests",
        str(work / "tests"),
        "--test-env-spec",
        str(args.env_spec),
        "--test-env-cache",
        str(args.env_cache),
        "--test-reruns",
        "0",
        "--repo-url",
        args.repo_url,
        *(["--repo-cache", str(args.repo_cache)] if args.repo_cache else []),
    ]
    if args.timeout is not None:
        settings = work / "settings.yaml"
        settings.write_text(f"tests:\n  timeout_s: {args.timeout}\n")
        cmd += ["--config", str(settings)]
    started = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    seconds = time.monotonic() - started
    if not (work / "run" / "progress.jsonl").is_file():
        raise SystemExit(
            f"the run wrote no progress (exit {done.returncode}): {done.stderr[-3000:]}"
        )
    progress = [json.loads(x) for x in (work / "run" / "progress.jsonl").read_text().splitlines()]
    out: dict[str, Any] = {
        "command": [_shown(x) for x in cmd[1:]],
        "exit_code": done.returncode,
        "instances": {},
    }
    totals = {"candidates": 0, "graded": 0, "agree": 0, "cpu_seconds": 0.0}
    for p in progress:
        iid = p["instance_id"]
        labels = {f"c{i + 1:02d}": c["resolved"] for i, c in enumerate(records[iid]["candidates"])}
        rec = p["baselines"]["tests"]
        graded = {c: v for c, v in rec["pass_rate"].items() if v is not None}
        agree = sum((v == 1.0) == bool(labels[c]) for c, v in graded.items())
        why: dict[str, int] = {}
        for c, reason in rec["reasons"].items():
            if rec["pass_rate"][c] is None:
                why[reason] = why.get(reason, 0) + 1
        cost = p.get("cost", {})
        cpu = cost.get("tests_grading", {}).get("cpu_seconds", 0.0)
        out["instances"][iid] = {
            "candidates": len(labels),
            "resolved": sum(bool(v) for v in labels.values()),
            "graded": len(graded),
            "agree": agree,
            "predicted_resolved": sum(v == 1.0 for v in graded.values()),
            "missing": why,
            "status": rec["status"],
            "counted_tests": rec.get("counted"),
            "cpu_s_per_candidate": round(cpu / max(1, len(labels)), 3),
            "validation_cpu_s": cost.get("tests_validation", {}).get("cpu_seconds"),
        }
        totals["candidates"] += len(labels)
        totals["graded"] += len(graded)
        totals["agree"] += agree
        totals["cpu_seconds"] += cpu
    out["totals"] = {**totals, "wall_seconds": round(seconds, 1)}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=2, sort_keys=True) + "\n")
    print(json.dumps(out["totals"]), file=sys.stderr)
    if done.returncode != 0:
        print(done.stderr[-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
