"""Label the bundled example candidates by running the hidden tests: the only source of their labels.

For each task and each candidate patch (plus the gold patch and the unpatched base, as sanity checks):
copy ``repo/`` to a scratch folder, ``git apply`` the patch, copy ``hidden_tests/`` beside the code, and
run pytest on them. Exit status 0 means resolved. The labels go to ``<task>/labels.json`` together with
the repository's content hash, so labels made for another revision are refused when loaded.

    python benchmarks/label_examples.py            # (re)write every labels.json
    python benchmarks/label_examples.py --check    # re-derive and compare; exit 1 on any difference
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from agentic_rubrics.bundled import EXAMPLES_DIR, ExampleTask, example_folders, load_example
from agentic_rubrics.data import atomic_write_json

TIMEOUT_S = 120


def run_hidden_tests(example: ExampleTask, patch: str) -> dict[str, object]:
    """Apply ``patch`` to a scratch copy of the repository and run the hidden tests there."""
    with tempfile.TemporaryDirectory(prefix="label-") as tmp:
        work = Path(tmp) / "work"
        shutil.copytree(example.repo_dir, work, ignore=shutil.ignore_patterns("__pycache__"))
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "GIT_CONFIG_NOSYSTEM": "1"}
        # a repository of its own, so git apply resolves paths against the copy and nothing else
        subprocess.run(["git", "init", "-q"], cwd=work, check=True, env=env)
        if patch.strip():
            applied = subprocess.run(
                ["git", "apply", "--whitespace=nowarn", "-"],
                cwd=work,
                input=patch.encode(),
                capture_output=True,
                env=env,
            )
            if applied.returncode != 0:
                return {"resolved": False, "reason": "apply_failed"}
        shutil.copytree(example.hidden_tests_dir, work / "hidden_tests")
        cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider", "hidden_tests"]
        try:
            done = subprocess.run(cmd, cwd=work, capture_output=True, env=env, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"resolved": False, "reason": "timeout"}
        if done.returncode == 0:
            return {"resolved": True, "reason": "tests_passed"}
        reason = "tests_failed" if done.returncode == 1 else f"pytest_exit_{done.returncode}"
        return {"resolved": False, "reason": reason}


def label_task(folder: Path, jobs: int) -> dict[str, object]:
    """Labels for one task folder, as written to labels.json."""
    example = load_example(folder, with_labels=False)
    patches = {c.id: c.patch for c in example.task.candidates}
    patches["__gold__"] = example.gold_patch
    patches["__base__"] = ""
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        results = dict(
            zip(
                patches,
                pool.map(lambda p: run_hidden_tests(example, p), patches.values()),
                strict=True,
            )
        )
    return {
        "base_commit": example.task.base_commit,
        "candidates": {cid: results[cid] for cid in sorted(patches) if not cid.startswith("__")},
        "gold": results["__gold__"],
        "base": results["__base__"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=EXAMPLES_DIR, help="folder of task folders")
    parser.add_argument("--task", action="append", help="only these task folders (by name)")
    parser.add_argument(
        "--check", action="store_true", help="compare with labels.json, write nothing"
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    folders = [f for f in example_folders(args.root) if not args.task or f.name in args.task]
    if not folders:
        print(f"no task folders under {args.root}", file=sys.stderr)
        return 2
    status = 0
    for folder in folders:
        labels = label_task(folder, args.jobs)
        cands = labels["candidates"]
        assert isinstance(cands, dict)
        resolved = sum(1 for v in cands.values() if v["resolved"])
        sanity = (
            labels["gold"] == {"resolved": True, "reason": "tests_passed"}
            and not labels["base"]["resolved"]
        )  # type: ignore[index]
        line = f"{folder.name}: {resolved}/{len(cands)} resolved; gold {labels['gold']['reason']}, base {labels['base']['reason']}"  # type: ignore[index]
        print(line)
        if not sanity:
            print(
                f"  {folder.name}: the gold patch must pass and the base must fail", file=sys.stderr
            )
            status = 1
        target = folder / "labels.json"
        if args.check:
            recorded = json.loads(target.read_text()) if target.exists() else None
            if recorded != labels:
                print(f"  {target}: differs from the re-derived labels", file=sys.stderr)
                status = 1
        else:
            atomic_write_json(target, labels)
    return status


if __name__ == "__main__":
    raise SystemExit(main())
