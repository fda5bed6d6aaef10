"""Runs on tasks that name a repository and a base commit only: the tree is fetched, cached, explored.

The upstream is a small git repository made here and served over ``file://`` exactly as GitHub would
be through ``--repo-url``. The bubblewrap sandbox lays its writable layer over the cached tree.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from agentic_rubrics.cli.app import app
from agentic_rubrics.datasets.repos_store import remove_tree
from agentic_rubrics.pipeline.config import load_config
from agentic_rubrics.pipeline.runner import run
from agentic_rubrics.runfolder.files import read_jsonl
from agentic_rubrics.sandbox.bwrap import BubblewrapSandbox, bwrap_problem
from tests.test_repos import make_tree_bomb, make_upstream

CORE = '''"""Totals."""


def compute_total(values):
    """The sum of ``values``."""
    total = 0
    for v in values:
        if v > 0:
            total += v
    return total
'''

ISSUE = """compute_total ignores negative numbers

`compute_total([1, -2])` returns 1 instead of -1. The function in `widget/core.py` skips every value
that is not positive.
"""

GOOD = """--- a/widget/core.py
+++ b/widget/core.py
@@ -6,6 +6,5 @@ def compute_total(values):
     total = 0
     for v in values:
-        if v > 0:
-            total += v
+        total += v
     return total
"""

BAD = """--- a/README.md
+++ b/README.md
@@ -1 +1,2 @@
 # widget
+Negative numbers are ignored.
"""

needs_bwrap = pytest.mark.skipif(
    bwrap_problem() is not None and not os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP"),
    reason=f"bubblewrap cannot run here: {bwrap_problem()}",
)


@pytest.fixture
def open_dir() -> Iterator[Path]:
    """A folder every user may walk through (pytest's own are closed to others), for the cache."""
    path = Path(tempfile.mkdtemp(prefix="agentic-rubrics-test-"))
    path.chmod(0o755)
    yield path
    remove_tree(path)


def upstream(root: Path) -> list[str]:
    return make_upstream(
        root / "srv" / "acme__widget",
        [
            {"README.md": "# widget\n", "widget/__init__.py": "", "widget/core.py": CORE},
            {"widget/core.py": CORE.replace("if v > 0:\n            ", "")},  # the fix, later
        ],
    )


def write_tasks(path: Path, base_commit: str, **more: Any) -> Path:
    task = {
        "instance_id": "acme__widget-1",
        "repo": "acme/widget",
        "base_commit": base_commit,
        "problem_statement": ISSUE,
        "candidates": [
            {"id": "good", "patch": GOOD, "resolved": True},
            {"id": "bad", "patch": BAD, "resolved": False},
        ],
        "repo_path": None,
        **more,
    }
    path.write_text(json.dumps(task) + "\n", encoding="utf-8")
    return path


def settings(tmp_path: Path, cache: Path | None = None) -> dict[str, Any]:
    return {
        "bootstrap_resamples": 0,
        "repos": {
            "url_template": f"file://{tmp_path}/srv/{{owner}}__{{name}}",
            "cache_dir": str(cache or tmp_path / "cache"),
        },
    }


def status(out: Path) -> dict[str, Any]:
    return json.loads((out / "rubrics" / "acme__widget-1" / "status.json").read_text())


def test_a_task_with_only_repo_and_base_commit_is_explored_in_its_repository(
    tmp_path: Path, open_dir: Path
) -> None:
    shas = upstream(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", shas[0])
    report = run(tasks, tmp_path / "out", load_config(None, settings(tmp_path, open_dir)))
    assert report is not None
    st = status(tmp_path / "out")
    assert st["status"] == "ok"
    assert st["repository"]["source"] == "cache"
    assert (st["repository"]["commit"], st["repository"]["cached"]) == (shas[0], False)
    assert st["repository"]["url"].startswith("file://")
    rubric = yaml.safe_load(
        (tmp_path / "out" / "rubrics" / "acme__widget-1" / "rubrics.yaml").read_text()
    )
    text = json.dumps(rubric)
    # grounded in the tree at base_commit: the function and its file, located
    assert "widget/core.py" in text and "compute_total" in text
    verdicts = [r for _, r in read_jsonl(tmp_path / "out" / "verdicts.jsonl")]
    assert {r["candidate_id"] for r in verdicts} == {"good", "bad"}
    # the repository-aware items are decided on the cached tree at judge time, never guessed
    applies = {r["candidate_id"]: (r["value"], r.get("detail")) for r in verdicts
               if r["reason"] == "applies"}  # fmt: skip
    # GOOD's hunk header counts 6 old lines for 5: git apply refuses it, patch --fuzz takes it
    assert applies == {"good": (1, "patch_fuzz")}
    changed = {
        (r["candidate_id"], r["value"]) for r in verdicts if r["reason"] == "changes_behaviour"
    }
    assert changed == {("good", 1), ("bad", 0)}  # bad's: the integrity item IN0
    # BAD changes the README alone: no behaviour of the program, so every functional item fails
    bad = [r for r in verdicts if r["candidate_id"] == "bad" and r["axis"] != "integrity_rubrics"]
    assert bad and {(r["value"], r["reason"]) for r in bad} == {(0, "no_behaviour_change")}
    assert not any(r["reason"] == "no_repository" for r in verdicts)
    # how grounded it is: items naming the tree's files, the explorer's leads (counts only)
    assert st["grounding"]["grounded_items"] >= 2 and st["grounding"]["named_paths_missing"] == 0
    assert st["grounding"]["leads"]["symbol"] >= 1 and st["grounding"]["leads"]["path"] == 1
    g = json.loads((tmp_path / "out" / "report.json").read_text())["rubrics"]["grounding"]
    assert (g["rubrics_in_repository"], g["rubrics_with_grounded_items"]) == (1, 1)
    assert g["leads"]["path"] == 1 and g["leads_unmatched"].get("path", 0) == 0
    assert "- Grounding: 1 of 1 rubrics" in (tmp_path / "out" / "report.md").read_text()
    # a second run (another folder) takes the tree from the cache: no fetch
    run(tasks, tmp_path / "again", load_config(None, settings(tmp_path, open_dir)))
    again = status(tmp_path / "again")
    assert (again["repository"]["cached"], again["repository"]["fetch"]) == (True, "none")
    assert again["hash"] == st["hash"]


def test_without_fetching_the_same_task_gets_the_issue_only_rubric(tmp_path: Path) -> None:
    shas = upstream(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", shas[0])
    config = settings(tmp_path)
    config["repos"]["url_template"] = "none"
    run(tasks, tmp_path / "out", load_config(None, config))
    st = status(tmp_path / "out")
    assert st["status"] == "ok" and "repository" not in st
    assert "grounded_items" not in st["grounding"]  # no repository: nothing to be grounded in
    assert not (tmp_path / "cache").exists()
    grounded = load_config(None, settings(tmp_path))
    assert load_config(None, config).content_hash() != grounded.content_hash()
    other = settings(tmp_path)
    other["repos"]["url_template"] = "https://example.org/{repo}.git"
    assert load_config(None, other).content_hash() == grounded.content_hash()


def test_a_commit_the_upstream_lacks_fails_that_rubric_naming_repo_commit_and_url(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    upstream(tmp_path)
    missing = "0123456789abcdef0123456789abcdef01234567"
    tasks = write_tasks(tmp_path / "tasks.jsonl", missing)
    report = run(tasks, tmp_path / "out", load_config(None, settings(tmp_path)))
    st = status(tmp_path / "out")
    assert (st["status"], st["reason"]) == ("failed", "no_repository:commit_not_found")
    assert report is not None
    logged = caplog.text
    assert "acme/widget" in logged and missing in logged and "file://" in logged


def test_a_repository_over_the_export_bounds_fails_that_rubric_until_the_bound_is_raised(
    tmp_path: Path,
) -> None:
    sha = make_tree_bomb(tmp_path / "srv" / "acme__widget", fanout=8, depth=2)  # 512 files
    tasks = write_tasks(tmp_path / "tasks.jsonl", sha)
    config = settings(tmp_path)
    config["repos"]["max_files"] = 100
    report = run(tasks, tmp_path / "out", load_config(None, config))
    assert report is not None and report["rubrics"]["failed"] == {
        "no_repository:export_too_large": 1
    }
    st = status(tmp_path / "out")
    assert (st["status"], st["reason"]) == ("failed", "no_repository:export_too_large")
    config["repos"]["max_files"] = 1000  # not hashed: the resumed run retries the repository
    again = run(tasks, tmp_path / "out", load_config(None, config))
    assert again is not None and again["rubrics"]["failed"] == {}
    assert status(tmp_path / "out")["status"] == "ok"


def test_credentials_in_the_url_template_are_never_written(tmp_path: Path) -> None:
    config = load_config(
        None, {"repos": {"url_template": "https://user:s3cret@git.example.org/{repo}.git"}}
    )
    assert "s3cret" not in json.dumps(config.model_dump(mode="json"))
    secret = config.model_dump(mode="json", context={"secrets": True})
    assert "s3cret" in secret["repos"]["url_template"]  # a worker process still gets it


@needs_bwrap
def test_the_sandbox_lays_its_writable_layer_over_the_cached_tree(
    tmp_path: Path, open_dir: Path
) -> None:
    from agentic_rubrics.datasets.repos import RepoCache

    shas = upstream(tmp_path)
    tree = RepoCache(open_dir / "cache", f"file://{tmp_path}/srv/{{owner}}__{{name}}").checkout(
        "acme/widget", shas[0]
    )
    before = {p: p.read_bytes() for p in tree.path.rglob("*") if p.is_file()}

    async def go() -> list[Any]:
        box = BubblewrapSandbox(tree.path, shared=True)
        try:
            assert box.root == tree.path  # nothing copied
            out = [
                await box.run("grep -n 'def compute_total' widget/core.py"),
                await box.run("printf 'x: 1\\n' > rubrics.yaml && cat rubrics.yaml"),
                await box.run(
                    "chmod u+w widget/core.py 2>/dev/null; echo hacked >> widget/core.py"
                ),
                await box.read_file("rubrics.yaml"),
            ]
        finally:
            await box.close()
        return out

    grep, write, _, read_back = asyncio.run(go())
    assert grep.exit_code == 0 and "4:def compute_total" in grep.output
    assert write.exit_code == 0 and read_back == "x: 1\n"
    # the cached tree is exactly as exported, whatever the commands did
    assert {p: p.read_bytes() for p in tree.path.rglob("*") if p.is_file()} == before
    assert not (tree.path / "rubrics.yaml").exists()


@needs_bwrap
@pytest.mark.skipif(os.geteuid() != 0, reason="the sandbox's host user differs only under root")
def test_as_root_a_cache_below_a_private_folder_still_reaches_the_sandbox(
    tmp_path: Path, open_dir: Path
) -> None:
    from agentic_rubrics.datasets.repos import RepoCache

    shas = upstream(tmp_path)
    private = tmp_path / "private"
    private.mkdir(
        mode=0o700
    )  # like /root/.cache: the sandbox's unprivileged host user cannot walk it
    tree = RepoCache(private / "cache", f"file://{tmp_path}/srv/{{owner}}__{{name}}").checkout(
        "acme/widget", shas[0]
    )

    async def go() -> Any:
        box = BubblewrapSandbox(tree.path, shared=True)
        try:
            return await box.run("id -u && cat widget/core.py | head -1"), box.root != tree.path
        finally:
            await box.close()

    result, copied = asyncio.run(go())
    assert result.exit_code == 0, result.output
    assert result.output.splitlines() == ["1000", '"""Totals."""']
    assert (
        copied
    )  # the tree could not be laid under the sandbox as it is: it was copied, and said so
    # under a folder every user may walk through, nothing is copied
    open_tree = RepoCache(
        open_dir / "cache", f"file://{tmp_path}/srv/{{owner}}__{{name}}"
    ).checkout("acme/widget", shas[0])
    box = BubblewrapSandbox(open_tree.path, shared=True)
    try:
        assert box.root == open_tree.path
    finally:
        asyncio.run(box.close())


def test_run_command_line_with_repo_url_and_cache(tmp_path: Path) -> None:
    shas = upstream(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", shas[0])
    done = CliRunner().invoke(
        app,
        ["run", "--tasks", str(tasks), "--out", str(tmp_path / "out"), "--explorer", "static",
         "--repo-url", f"file://{tmp_path}/srv/{{owner}}__{{name}}",
         "--repo-cache", str(tmp_path / "cache"), "--quiet"],
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    assert status(tmp_path / "out")["repository"]["commit"] == shas[0]
    assert (tmp_path / "cache" / "trees" / "acme__widget" / shas[0]).is_dir()


def test_items_judged_without_the_tree_are_decided_when_the_run_is_resumed(
    tmp_path: Path, open_dir: Path
) -> None:
    shas = upstream(tmp_path)
    tasks = write_tasks(tmp_path / "tasks.jsonl", shas[0])
    config = load_config(None, settings(tmp_path, open_dir / "cache"))
    out = tmp_path / "out"
    run(tasks, out, config, stages=("explore",))
    # the tree is gone by judge time: the cache is emptied and the upstream cannot be reached
    remove_tree(open_dir / "cache")
    (tmp_path / "srv").rename(tmp_path / "srv-away")
    run(tasks, out, config, stages=("judge", "report"))
    rows = [r for _, r in read_jsonl(out / "verdicts.jsonl")]
    gaps = [r for r in rows if r["reason"] == "no_repository"]
    assert gaps and all(r["origin"] == "missing" for r in gaps)
    assert {r.get("detail") for r in gaps} == {"fetch_failed"}  # why, as a code
    # the upstream is back: the same command decides exactly those items, keeping every other verdict
    (tmp_path / "srv-away").rename(tmp_path / "srv")
    run(tasks, out, config, stages=("judge", "report"))
    again = [r for _, r in read_jsonl(out / "verdicts.jsonl")]
    assert not any(r["reason"] == "no_repository" for r in again)
    key = ("candidate_id", "item_id", "repeat")
    kept = {tuple(r[k] for k in key): r for r in rows if r["reason"] != "no_repository"}
    now = {tuple(r[k] for k in key): r for r in again}
    assert all(now[k] == r for k, r in kept.items())
    applies = {r["candidate_id"]: r["value"] for r in again if r["reason"] == "applies"}
    assert applies == {
        "good": 1
    }  # bad changes the README alone: read from its diff, it fixes nothing


@pytest.mark.parametrize("where", ["network", "mirror"])
def test_without_the_network_every_rubric_fails_with_advice_that_works(
    tmp_path: Path, where: str
) -> None:
    """The upstream cannot be reached — GitHub without a network (here: an https URL nothing
    listens at), or a file:// mirror template with nothing behind it: the run fails fast, and its
    advice is right for the configuration in force: --repo-url none for the static explorer, and a
    mirror only when none is in force; a mirror in force is named, to be checked."""
    tasks = write_tasks(tmp_path / "tasks.jsonl", "a" * 40)
    out = tmp_path / "out"
    url = (
        "https://127.0.0.1:9/{repo}.git"
        if where == "network"
        else f"file://{tmp_path}/nowhere/{{owner}}__{{name}}"
    )
    args = ["--tasks", str(tasks), "--out", str(out), "--explorer", "static", "--repo-url", url]
    args += ["--repo-cache", str(tmp_path / "cache"), "--quiet"]
    done = CliRunner().invoke(app, ["run", *args])
    assert done.exit_code == 1, done.output
    said = " ".join(done.output.split())
    assert "Every rubric failed" in said and "--repo-url none" in said
    assert "--explorer static" not in said
    suggested = "file:///path/to/mirrors/{owner}__{name}.git" in said
    assert suggested == (where == "network")
    assert (f"The mirrors the URL template in force names ({url}) could not be read" in said) == (
        where == "mirror"
    )
    report = json.loads((out / "report.json").read_text())
    assert report["rubrics"]["repository_url"] == url
    md = (out / "report.md").read_text()
    assert "Repositories explored: none: the rubric failed first 1." in md
    assert "none (issue only)" not in md
    # the explore stage alone gives the same advice
    again = CliRunner().invoke(app, ["explore", *args, "--restart"])
    assert again.exit_code == 1, again.output
    assert ("file:///path/to/mirrors" in " ".join(again.output.split())) == (where == "network")


def test_an_agent_explorer_with_fetching_off_is_not_told_to_turn_it_off(tmp_path: Path) -> None:
    """--repo-url none leaves the agent explorer without a repository: the advice says fetching is
    off and what gives it one, not "--repo-url none" again."""
    tasks = write_tasks(tmp_path / "tasks.jsonl", "a" * 40)
    out = tmp_path / "out"
    config = load_config(
        None,
        {
            "explorer": {"kind": "agent", "model": {"model": "openai/x"}},
            "repos": {"url_template": "none"},
            "bootstrap_resamples": 0,
            "plots": False,
        },
    )
    report = run(tasks, out, config)
    assert report is not None and report["rubrics"]["failed"] == {"no_repository": 1}
    (fatal,) = [p for p in report["problems"]["fatal"] if "Every rubric failed" in p]
    said = " ".join(fatal.split())
    assert "fetching is off (--repo-url none)" in said and "remove --repo-url none" in said
    assert "--explorer issue-only" in said
    assert report["rubrics"]["repository_url"] == "none"
