"""Real SWE-bench instances end to end, as a user runs them: import, then run with --repo-url.

The repositories come from ``../shared/data/repos`` (or ``$AGENTIC_RUBRICS_REPOS_DATA``): tars of shallow
bare repositories with the original commit hashes, unpacked here and served as ``file://`` URLs exactly
as GitHub would serve them. Nothing is prepared by hand: ``import-swebench`` writes tasks with ``repo``
and ``base_commit`` only, and ``run`` fetches, exports and explores. Skipped when the data is absent, and
in CI (``$CI``) unless ``AGENTIC_RUBRICS_REAL_REPO_TESTS=1``: the suite has a time limit there.
"""

from __future__ import annotations

import gzip
import json
import os
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.repos_store import remove_tree
from agentic_rubrics.testing import Reply, register_script, scripted_calls

from .test_sandbox_bwrap import require_bwrap

ROOT = Path(__file__).resolve().parents[1]
REPOS = Path(os.environ.get("AGENTIC_RUBRICS_REPOS_DATA") or ROOT.parent / "shared/data/repos")
SWEBENCH = Path(
    os.environ.get("AGENTIC_RUBRICS_SWEBENCH_DATA") or ROOT.parent / "shared/data/swebench"
)
LITE = SWEBENCH / "lite_candidates.jsonl.gz"
INSTANCES = {"pytest-dev__pytest-5227": "src/_pytest/logging.py", "pallets__flask-4045": None}

pytestmark = pytest.mark.skipif(
    not (REPOS / "pytest-dev__pytest.git.tar").is_file()
    or not (REPOS / "pallets__flask.git.tar").is_file()
    or not LITE.is_file()
    or (bool(os.environ.get("CI")) and os.environ.get("AGENTIC_RUBRICS_REAL_REPO_TESTS") != "1"),
    reason="real repositories and SWE-bench candidates (../shared/data) absent, or in CI",
)


@pytest.fixture(scope="module")
def served() -> Iterator[tuple[Path, str, Path]]:
    """(work folder, URL template, tasks file): mirrors unpacked, the two instances imported."""
    work = Path(tempfile.mkdtemp(prefix="agentic-rubrics-real-"))
    work.chmod(0o755)  # the sandbox's unprivileged user walks down to the cached trees
    mirrors = work / "mirrors"
    mirrors.mkdir()
    for name in ("pytest-dev__pytest", "pallets__flask"):
        with tarfile.open(REPOS / f"{name}.git.tar") as tar:
            tar.extractall(mirrors, filter="data")
    rows = []
    with gzip.open(LITE, "rt", encoding="utf-8") as fh:
        for line in fh:
            if any(f'"{i}"' in line[:200] for i in INSTANCES):
                rows.append(line)
    (work / "two.jsonl").write_text("".join(rows))
    done = CliRunner().invoke(
        app, ["import-swebench", "--candidates", str(work / "two.jsonl"), "--out",
              str(work / "tasks.jsonl")],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    yield work, f"file://{mirrors}/{{owner}}__{{name}}.git", work / "tasks.jsonl"
    remove_tree(work)


def run(work: Path, template: str, tasks: Path, out: str, *more: str) -> dict[str, Any]:
    done = CliRunner().invoke(
        app,
        ["run", "--tasks", str(tasks), "--out", str(work / out), "--repo-url", template,
         "--repo-cache", str(work / "cache"), "--quiet", *more],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    statuses = {}
    for i in INSTANCES:
        statuses[i] = json.loads((work / out / "rubrics" / i / "status.json").read_text())
    return statuses


def test_import_then_run_static_on_real_repositories(served: tuple[Path, str, Path]) -> None:
    work, template, tasks = served
    for line in tasks.read_text().splitlines():
        task = json.loads(line)
        assert task["repo_path"] is None and len(task["base_commit"]) == 40
    statuses = run(work, template, tasks, "static", "--explorer", "static")
    for instance, gold_file in INSTANCES.items():
        st = statuses[instance]
        assert st["status"] == "ok", st
        assert st["repository"]["source"] == "cache" and st["repository"]["fetch"] == "by_hash"
        assert st["grounding"]["grounded_items"] >= 1, st
        assert st["grounding"]["named_paths_missing"] == 0
        rubric = yaml.safe_load(
            (work / "static" / "rubrics" / instance / "rubrics.yaml").read_text()
        )
        if (
            gold_file
        ):  # the constant the issue quotes, at its definition (no location matched before)
            fc1 = rubric["axes"]["file_change_rubrics"][0]
            assert fc1["check"] == {"touches": gold_file}
    report = json.loads((work / "static" / "report.json").read_text())
    assert report["rubrics"]["grounding"]["rubrics_with_grounded_items"] == 2


RUBRIC = """metadata:
  task_summary: "{summary}"
  underlying_bug: "Found in {path}"
axes:
  file_change_rubrics:
    - id: FC1
      description: "Modifies {path}"
      weight: 3
      check: {{touches: {path}}}
    - id: FC2
      description: "Changes at most two non-test files"
      weight: 1
      check: {{max_files: 2, not_in: 'tests/'}}
  spec_alignment_rubrics:
    - id: SA1
      description: "Addresses what the issue asks for"
      weight: 3
  integrity_rubrics:
    - id: IN1
      description: "Removes no assertion from the tests"
      weight: 2
      check: {{removes_no_match: '^\\s*assert\\b', in: 'testing/'}}
  runtime_rubrics:
    - id: RT1
      description: "Adds no print call"
      weight: 1
      check: {{adds_no_match: '^\\s*print\\(', in: '*.py'}}
"""


def agent_script(body: dict[str, Any], n: int) -> Reply:
    """Searches the real repository for what the issue names, views it, writes, validates, submits."""
    issue = body["messages"][1]["content"]
    name, path = (
        ("DEFAULT_LOG_FORMAT", "src/_pytest/logging.py")
        if "DEFAULT_LOG_FORMAT" in issue
        else ("class Blueprint", "src/flask/blueprints.py")
    )
    turn = 1 + sum(1 for m in body["messages"] if m["role"] == "assistant")
    steps = [
        ("search", f"{name}\nsrc/"),
        ("view", f"{path} 1 40"),
        ("bash", f"cat > rubrics.yaml <<'EOF'\n{RUBRIC.format(summary=name, path=path)}EOF"),
        ("validate", ""),
        ("submit", ""),
    ]
    tool, argument = steps[min(turn, len(steps)) - 1]
    thought = "I look at what the issue names in the repository, then write the rubric. " * 2
    return Reply(content=f"THOUGHT: {thought}\n\n```{tool}\n{argument}\n```")


@require_bwrap  # the agent explores in bubblewrap
def test_import_then_run_the_agent_with_a_scripted_model(served: tuple[Path, str, Path]) -> None:
    work, template, tasks = served
    model = register_script("local/real-repo-agent", agent_script)
    statuses = run(work, template, tasks, "agent", "--explorer", "agent", "--explorer-model", model)
    for instance in INSTANCES:
        st = statuses[instance]
        assert st["status"] == "ok", st
        assert st["repository"]["source"] == "cache"
        assert (st["grounding"]["grounded_items"], st["grounding"]["named_paths_missing"]) == (1, 0)
    searched = [
        c["messages"][-1]["content"]
        for c in scripted_calls(model)
        if "src/_pytest/logging.py:" in c["messages"][-1]["content"]
    ]
    # a real grep of the real tree, in the sandbox over the cached export
    assert searched and "DEFAULT_LOG_FORMAT = " in searched[0]
