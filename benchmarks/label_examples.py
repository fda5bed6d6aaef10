"""Label the bundled example candidates by running the hidden tests: the only source of their labels.

For each task and each candidate patch (plus the gold patch and the unpatched base, as sanity checks):
copy ``repo/`` to a scratch folder, ``git apply`` the patch, copy ``hidden_tests/`` beside the code, and
run pytest on them. Exit status 0 means resolved. The labels go to ``<task>/labels.json`` together with
the repository's content hash, so labels made for another revision are refused when loaded.

After a task's labels are written (and only when its gold patch passes and its base fails), the task's
entry in ``label_manifest.json`` records the content hashes of its inputs, of the labelling code (this
script and ``agentic_rubrics/datasets/bundled.py``, which reads the tasks), the Python and pytest
versions, and the labels just written. The inputs are hashed before the tests run and again after:
a file changed meanwhile (an editor's save, a checkout) fails the task instead of being vouched for.
The test suite recomputes those hashes on every run and re-derives the labels of a task only when they
differ; this script is the only writer of the manifest. Copies for the test runs leave out what the
hashes leave out (``bundled.IGNORED_NAMES``: caches, ``.git``, ``*.pyc``).

    python benchmarks/label_examples.py            # (re)write every labels.json and the manifest
    python benchmarks/label_examples.py --check    # re-derive and compare; exit 1 on any difference
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.metadata
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets import bundled
from agentic_rubrics.datasets.bundled import (
    EXAMPLES_DIR,
    IGNORED_NAMES,
    LABEL_MANIFEST,
    ExampleTask,
    example_folders,
    file_hash,
    label_inputs,
    load_example,
)
from agentic_rubrics.runfolder.files import atomic_write_json

TIMEOUT_S = 120
RUNNER = Path(__file__).resolve()
LABELLING_CODE = (RUNNER, Path(bundled.__file__).resolve())
"""The code labels come from: this script and the module that reads the tasks' files."""
_COPY_IGNORE = shutil.ignore_patterns(*IGNORED_NAMES)
# Each hidden-test run is a fresh pytest: without plugin auto-loading (the dev environment's plugins cost
# about a second per start), bytecode files or the cache provider it starts in a fraction of the time.
# The hidden tests use plain pytest only, so the labels are the same. The caller's PYTEST_* variables
# (PYTEST_ADDOPTS, PYTEST_PLUGINS, a test runner's own) are not passed on: every run starts alike.
FAST_PYTEST_ENV = {
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    "GIT_CONFIG_NOSYSTEM": "1",
}


def run_hidden_tests(example: ExampleTask, patch: str) -> dict[str, object]:
    """Apply ``patch`` to a scratch copy of the repository and run the hidden tests there."""
    with tempfile.TemporaryDirectory(prefix="label-") as tmp:
        work = Path(tmp) / "work"
        shutil.copytree(example.repo_dir, work, ignore=_COPY_IGNORE)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        env.update(FAST_PYTEST_ENV)
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
        shutil.copytree(example.hidden_tests_dir, work / "hidden_tests", ignore=_COPY_IGNORE)
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


def manifest_entry(folder: Path) -> dict[str, Any]:
    """The manifest entry of a task folder as it is on disk now: inputs, labels, the labelling code
    and the versions of what runs the hidden tests."""
    code = hashlib.sha256("".join(file_hash(p) for p in LABELLING_CODE).encode()).hexdigest()
    return {
        **label_inputs(folder),
        "runner": "sha256-" + code,
        "python": f"{sys.version_info.major}.{sys.version_info.minor}",
        "pytest": importlib.metadata.version("pytest"),
    }


def _changed_inputs(before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """Inputs (everything but the labels) whose hashes differ between two entries."""
    return sorted(
        k for k in before.keys() | after.keys() if k != "labels" and before.get(k) != after.get(k)
    )


def read_manifest(root: Path) -> dict[str, Any]:
    """The label manifest under ``root`` (empty when there is none yet)."""
    path = root / LABEL_MANIFEST
    if not path.exists():
        return {}
    data = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("tasks"), dict):
        raise SystemExit(f"{path}: expected an object with a 'tasks' object")
    return data["tasks"]


def _differences(recorded: Any, derived: dict[str, Any]) -> list[str]:
    """What differs between recorded and re-derived labels, one line per candidate or field."""
    if not isinstance(recorded, dict):
        return ["no labels recorded"]
    flat = lambda d: {  # noqa: E731
        **{f"candidate {k}": v for k, v in (d.get("candidates") or {}).items()},
        **{k: v for k, v in d.items() if k != "candidates"},
    }
    old, new = flat(recorded), flat(derived)
    return [
        f"{k}: recorded {old.get(k)}, re-derived {new.get(k)}"
        for k in sorted(old.keys() | new.keys())
        if old.get(k) != new.get(k)
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter
    )
    parser.add_argument("--root", type=Path, default=EXAMPLES_DIR, help="folder of task folders")
    parser.add_argument("--task", action="append", help="only these task folders (by name)")
    parser.add_argument(
        "--check", action="store_true", help="compare with labels.json, write nothing"
    )
    parser.add_argument(
        "--labels-only",
        action="store_true",
        help="with --check: compare the labels only, not the manifest (another Python or pytest)",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args(argv)
    folders = [f for f in example_folders(args.root) if not args.task or f.name in args.task]
    if not folders:
        print(f"no task folders under {args.root}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    manifest = read_manifest(args.root)
    status = 0
    for folder in folders:
        before = manifest_entry(folder)
        labels = label_task(folder, args.jobs)
        changed = _changed_inputs(before, manifest_entry(folder))
        if changed:
            print(
                f"  {folder.name}: {', '.join(changed)} changed while its tests ran; nothing"
                " written for it: run the labelling again",
                file=sys.stderr,
            )
            status = 1
            if not args.check:
                manifest.pop(folder.name, None)
            continue
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
                for line in _differences(recorded, labels):
                    print(f"    {line}", file=sys.stderr)
                status = 1
            if not args.labels_only and manifest.get(folder.name) != manifest_entry(folder):
                print(
                    f"  {folder.name}: {LABEL_MANIFEST} does not match its inputs;"
                    " rewrite it with python benchmarks/label_examples.py",
                    file=sys.stderr,
                )
                status = 1
            continue
        atomic_write_json(target, labels)
        # the manifest vouches only for labels just derived from a sane run
        if sanity:
            manifest[folder.name] = manifest_entry(folder)
        else:
            manifest.pop(folder.name, None)
    if not args.check:
        present = {f.name for f in example_folders(args.root)}
        tasks = {name: entry for name, entry in manifest.items() if name in present}
        atomic_write_json(args.root / LABEL_MANIFEST, {"schema": 1, "tasks": tasks})
    print(f"{len(folders)} tasks in {time.perf_counter() - started:.1f} s")
    return status


if __name__ == "__main__":
    raise SystemExit(main())
