"""The bundled example tasks: small real Python repositories with issues and candidate patches.

Each task lives in ``example_data/<instance_id>/``:

- ``task.yaml``: ``instance_id``, ``repo``, ``problem_statement`` (the issue as a user wrote it);
- ``repo/``: the repository at its base revision, a plain file tree; ``base_commit`` is its content hash;
- ``candidates/<id>.diff``: the candidate patches; ``candidates/manifest.yaml`` says what kind each one
  is (evaluation metadata, like a SWE-bench run name: nothing that explores or judges reads it);
- ``gold.diff``: a reference fix (evaluation only);
- ``hidden_tests/``: the tests that decide the labels, a sibling of ``repo/`` that no sandbox mounts;
- ``labels.json``: the labels, written only by ``benchmarks/label_examples.py`` from running the
  hidden tests against each patched copy.

Beside the task folders, ``label_manifest.json`` records, per task, the content hashes of everything its
labels were derived from (repository, each candidate, the gold patch, the hidden tests, the labelling
code: the script and this module, which reads the tasks; the Python and pytest versions the tests ran
on) and of ``labels.json`` itself. The labelling script writes it after running the hidden tests, and
only when the inputs hashed before the run are the ones hashed after it; the test suite recomputes the
hashes and re-derives the labels only of a task whose hashes differ.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from agentic_rubrics.exceptions import DataError
from agentic_rubrics.types import Candidate, Task

EXAMPLES_DIR = Path(__file__).resolve().parent.parent / "example_data"
LABEL_MANIFEST = "label_manifest.json"

IGNORED_NAMES = ("__pycache__", ".pytest_cache", ".git", ".mypy_cache", ".ruff_cache", "*.pyc")
"""What a task's trees never count: left out of their hashes, and of every copy the labelling runs
tests in (``shutil.ignore_patterns(*IGNORED_NAMES)``), so the two always mean the same files."""


def ignored(rel: Path) -> bool:
    """Whether a path inside a task's tree is one of :data:`IGNORED_NAMES` or lies below one."""
    return any(
        fnmatch.fnmatchcase(part, pattern) for part in rel.parts for pattern in IGNORED_NAMES
    )


def tree_hash(root: Path) -> str:
    """Content hash of a file tree: sha256 over sorted relative paths and file bytes.

    It plays the role of a commit id for a repository stored as plain files.
    """
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if ignored(rel) or path.is_dir():
            continue
        digest.update(rel.as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return "tree-" + digest.hexdigest()[:40]


def file_hash(path: Path) -> str:
    """sha256 of a file's bytes (``"absent"`` for a missing file, so that adding one is a change)."""
    if not path.is_file():
        return "absent"
    return "sha256-" + hashlib.sha256(path.read_bytes()).hexdigest()


def label_inputs(folder: Path) -> dict[str, Any]:
    """Content hashes of what a task's labels come from, and of the labels file itself.

    The repository, every candidate patch, the gold patch and the hidden tests decide the labels;
    ``labels`` is the hash of ``labels.json`` as written. Any difference from the manifest means the
    labels must be derived again by running the hidden tests.
    """
    return {
        "repo": tree_hash(folder / "repo"),
        "hidden_tests": tree_hash(folder / "hidden_tests"),
        "gold": file_hash(folder / "gold.diff"),
        "candidates": {
            p.stem: file_hash(p) for p in sorted((folder / "candidates").glob("*.diff"))
        },
        "labels": file_hash(folder / "labels.json"),
    }


@dataclass(frozen=True)
class ExampleTask:
    """One bundled task with its evaluation-only material beside it."""

    folder: Path
    task: Task
    kinds: dict[str, str]
    gold_patch: str

    @property
    def repo_dir(self) -> Path:
        """The repository at its base revision."""
        return self.folder / "repo"

    @property
    def hidden_tests_dir(self) -> Path:
        """The hidden tests (never mounted in a sandbox)."""
        return self.folder / "hidden_tests"


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise DataError(f"{path}: {exc}") from exc


def load_example(folder: Path, *, with_labels: bool = True) -> ExampleTask:
    """Load one example task folder into a ``Task`` (labels from ``labels.json`` when present).

    Raises:
        DataError: a file is missing or malformed, or the labels were made for another revision.
    """
    meta = _read_yaml(folder / "task.yaml")
    if not isinstance(meta, dict) or not {"instance_id", "problem_statement"} <= set(meta):
        raise DataError(f"{folder / 'task.yaml'}: needs instance_id and problem_statement")
    manifest = _read_yaml(folder / "candidates" / "manifest.yaml") or {}
    base_commit = tree_hash(folder / "repo")
    labels: dict[str, bool] = {}
    labels_file = folder / "labels.json"
    if with_labels and labels_file.exists():
        recorded = json.loads(labels_file.read_text(encoding="utf-8"))
        if recorded.get("base_commit") != base_commit:
            raise DataError(
                f"{labels_file}: labelled for {recorded.get('base_commit')}, but repo/ is now"
                f" {base_commit}; run benchmarks/label_examples.py"
            )
        labels = {k: bool(v["resolved"]) for k, v in recorded["candidates"].items()}
    candidates = []
    for diff in sorted((folder / "candidates").glob("*.diff")):
        cid = diff.stem
        candidates.append(
            Candidate(
                id=cid,
                source=f"example:{manifest.get(cid, {}).get('kind', 'unknown')}",
                patch=diff.read_text(encoding="utf-8"),
                resolved=labels.get(cid),
            )
        )
    task = Task(
        instance_id=str(meta["instance_id"]),
        repo=str(meta.get("repo", f"examples/{meta['instance_id']}")),
        base_commit=base_commit,
        problem_statement=str(meta["problem_statement"]),
        candidates=candidates,
        repo_path=str(folder / "repo"),
    )
    kinds = {cid: str(v.get("kind", "unknown")) for cid, v in manifest.items()}
    gold = folder / "gold.diff"
    return ExampleTask(
        folder, task, kinds, gold.read_text(encoding="utf-8") if gold.exists() else ""
    )


def example_folders(root: Path = EXAMPLES_DIR) -> list[Path]:
    """The bundled task folders, sorted by name."""
    return sorted(p for p in root.iterdir() if (p / "task.yaml").exists())


def load_examples(
    root: Path | str = EXAMPLES_DIR, *, with_labels: bool = True
) -> list[ExampleTask]:
    """Every bundled example task."""
    return [load_example(f, with_labels=with_labels) for f in example_folders(Path(root))]


def write_tasks_jsonl(dest: Path | str, root: Path | str = EXAMPLES_DIR) -> Path:
    """Write the bundled tasks as a tasks JSONL file (the pipeline's input format) and return it."""
    from agentic_rubrics.runfolder.files import atomic_write_text

    dest = Path(dest)
    rows = [ex.task.model_dump(mode="json") for ex in load_examples(root)]
    atomic_write_text(dest, "".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return dest
