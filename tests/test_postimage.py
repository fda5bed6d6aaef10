"""Post-image analysis on small repositories made here: applying, pyflakes, symbols, removed names."""

from __future__ import annotations

import gzip
import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentic_rubrics.rubric.postimage import PostimageConfig, PostimageResult, analyze_patch

from .conftest import git

ROOT = Path(__file__).resolve().parents[1]
MakeRepo = Callable[[dict[str, bytes | str]], tuple[Path, Callable[..., str]]]

MOD = """\
import os


def helper(x):
    return x + 1


class Shape:
    def area(self):
        return 0

    def scaled(self, k):
        def inner(v):
            return v * k

        return inner(self.area())


LIMIT = helper(41)
"""


def _reset(repo: Path) -> None:
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")


def _edit(repo: Path, diff: Callable[..., str], edits: dict[str, str | bytes | None]) -> str:
    """Apply ``edits`` (None deletes) to the work tree, return the diff, restore the base."""
    for rel, content in edits.items():
        p = repo / rel
        if content is None:
            p.unlink()
            continue
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content.encode() if isinstance(content, str) else content)
    patch = diff()
    _reset(repo)
    return patch


def _tree_digest(repo: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(repo.rglob("*")):
        if ".git" in p.parts:
            continue
        h.update(p.relative_to(repo).as_posix().encode())
        if p.is_file():
            h.update(p.read_bytes())
    return h.hexdigest()


def _kinds(result: PostimageResult) -> list[tuple[str, str | None]]:
    return [(m.kind, m.name) for m in result.introduced]


def test_clean_patch_applies_with_git_and_leaves_the_repository_alone(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"pkg/mod.py": MOD})
    patch = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return 0", "return 1")})
    before = _tree_digest(repo)
    result = analyze_patch(repo, patch)
    assert result.apply.method == "git_apply"
    assert result.applied and result.reasons == ()
    assert [(f.path, f.status, f.python) for f in result.files] == [
        ("pkg/mod.py", "modified", True)
    ]
    assert result.introduced == ()
    assert result.changed_symbols == ("pkg/mod.py::Shape.area",)
    assert _tree_digest(repo) == before
    assert git(repo, "status", "--porcelain") == ""


def test_a_patch_that_does_not_apply_is_recorded_not_analysed(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": MOD})
    patch = _edit(repo, diff, {"mod.py": MOD.replace("return x + 1", "return x + 2")})
    (repo / "mod.py").write_text(
        MOD.replace("def helper(x):\n    return x + 1", "def other():\n    pass")
    )
    git(repo, "commit", "-qam", "drift")
    result = analyze_patch(repo, patch)
    assert result.apply.method == "failed"
    assert result.apply.git_apply_error == "does_not_apply"
    assert result.apply.patch_error == "hunk_failed"
    assert result.apply.hunks_failed == 1
    assert result.files == () and not result.applied


def test_fuzz_applies_where_git_apply_refuses(git_repo: MakeRepo) -> None:
    lines = [f"V{i} = {i}" for i in range(1, 30)]
    repo, diff = git_repo({"consts.py": "\n".join(lines) + "\n"})
    changed = [*lines]
    changed[14] = "V15 = undefined_thing"
    patch = _edit(repo, diff, {"consts.py": "\n".join(changed) + "\n"})
    drifted = ["# header", "# more", *lines]
    drifted[14 + 2 - 3] = "V13 = 1300"  # the first context line of the hunk differs
    (repo / "consts.py").write_text("\n".join(drifted) + "\n")
    git(repo, "commit", "-qam", "drift")
    result = analyze_patch(repo, patch)
    assert result.apply.method == "patch_fuzz"
    assert result.apply.git_apply_error == "does_not_apply"
    assert result.apply.hunks_fuzz == 1 and result.apply.max_fuzz >= 1
    assert result.apply.hunks_offset == 1 and result.apply.max_offset == 2
    # the post-image is the fuzzed one (line 17 now), and patch's consts.py.orig is not a change
    assert [f.path for f in result.files] == ["consts.py"]
    assert [(m.kind, m.name, m.line) for m in result.introduced] == [
        ("UndefinedName", "undefined_thing", 17)
    ]


def test_a_syntax_error_is_introduced_with_its_line(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": MOD})
    patch = _edit(repo, diff, {"mod.py": MOD.replace("return x + 1", "return x +")})
    result = analyze_patch(repo, patch)
    assert [(m.kind, m.category, m.line) for m in result.introduced] == [
        ("SyntaxError", "syntax_error", 5)
    ]
    assert result.files[0].symbols == ()  # no post-image tree to map onto
    assert result.removed_names == ()  # a broken post-image removes nothing by itself


def test_a_file_broken_before_the_patch_is_not_blamed_on_it(git_repo: MakeRepo) -> None:
    broken = "def f(:\n    pass\n"
    repo, diff = git_repo({"old.py": broken})
    patch = _edit(repo, diff, {"old.py": broken + "x = 1\n"})
    result = analyze_patch(repo, patch)
    assert result.introduced == ()
    assert result.files[0].reasons == ()  # broken before and after: nothing introduced
    fixed = _edit(repo, diff, {"old.py": "import os\ndef f():\n    pass\n"})
    result = analyze_patch(repo, fixed)
    assert result.introduced == ()
    assert result.files[0].reasons == ("pre_syntax_error",)


def test_a_new_undefined_name_and_a_redefinition(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": MOD})
    new = MOD.replace("return x + 1", "return x + offset\n\n\ndef helper(y):\n    return y")
    result = analyze_patch(repo, _edit(repo, diff, {"mod.py": new}))
    assert sorted(_kinds(result)) == [
        ("RedefinedWhileUnused", "helper"),
        ("UndefinedName", "offset"),
    ]
    assert result.introduced_by_category() == {"undefined_name": 1, "redefinition": 1}


def test_only_the_unused_import_the_patch_adds_is_reported(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": MOD})  # `import os` is unused before the patch
    new = "import sys\n\n" + MOD.replace("import os\n", "") + "\nimport os\n"  # moves os, adds sys
    result = analyze_patch(repo, _edit(repo, diff, {"mod.py": new}))
    assert _kinds(result) == [("UnusedImport", "sys")]
    assert result.introduced[0].line == 1
    # dotted and aliased imports are told apart by their full names, not lumped together
    more = "import xml.dom\nfrom json import dumps as to_json\n" + MOD
    result = analyze_patch(repo, _edit(repo, diff, {"mod.py": more}))
    assert sorted(_kinds(result)) == [
        ("UnusedImport", "json.dumps as to_json"),
        ("UnusedImport", "xml.dom"),
    ]


def test_a_renamed_function_still_called_elsewhere(git_repo: MakeRepo) -> None:
    users = "from pkg.mod import helper\n\n\ndef use():\n    return helper(1)\n"
    mention = "# helper is documented here\nNOTE = 'helper'\n"
    repo, diff = git_repo({"pkg/mod.py": MOD, "pkg/users.py": users, "pkg/notes.py": mention})
    renamed = MOD.replace("def helper(x)", "def assist(x)").replace("= helper(41)", "= assist(41)")
    result = analyze_patch(repo, _edit(repo, diff, {"pkg/mod.py": renamed}))
    assert result.introduced == ()  # pyflakes cannot see the caller in another file
    [gone] = result.removed_names
    assert (gone.path, gone.qualname, gone.kind, gone.still_used) == (
        "pkg/mod.py",
        "helper",
        "function",
        True,
    )
    assert gone.example is not None and gone.example.path == "pkg/users.py"
    assert gone.files_matching == 2  # users.py and notes.py hold the word; only users.py uses it
    assert result.removed_still_used == (gone,)
    # with the caller renamed too, only a comment and a string mention it: not a use
    both = _edit(
        repo, diff, {"pkg/mod.py": renamed, "pkg/users.py": users.replace("helper", "assist")}
    )
    [gone] = analyze_patch(repo, both).removed_names
    assert gone.still_used is False and gone.example is None


def test_a_removed_method_used_in_the_same_file_and_a_moved_definition(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": MOD, "other.py": "X = 1\n"})
    no_area = MOD.replace("    def area(self):\n        return 0\n\n", "")
    [gone] = analyze_patch(repo, _edit(repo, diff, {"mod.py": no_area})).removed_names
    assert (gone.qualname, gone.kind, gone.still_used) == ("Shape.area", "method", True)
    assert gone.example is not None and gone.example.path == "mod.py"  # self.area() in scaled
    # helper moved to another changed file and imported back: nothing is removed
    moved = MOD.replace("def helper(x):\n    return x + 1\n", "from other import helper\n")
    other = "X = 1\n\n\ndef helper(x):\n    return x\n"
    result = analyze_patch(repo, _edit(repo, diff, {"mod.py": moved, "other.py": other}))
    assert result.removed_names == ()


def test_changed_symbols_for_a_method_a_nested_function_and_module_code(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": MOD})
    new = (
        MOD.replace("return v * k", "return v * k * 2")
        .replace("return 0", "return 1")
        .replace("LIMIT = helper(41)", "LIMIT = helper(42)")
    )
    result = analyze_patch(repo, _edit(repo, diff, {"mod.py": new}))
    symbols = {
        (s.qualname, s.kind, s.change, s.lines_added, s.lines_removed)
        for s in result.files[0].symbols
    }
    assert symbols == {
        ("Shape.area", "function", "modified", 1, 1),
        ("Shape.scaled.inner", "function", "modified", 1, 1),
        ("<module>", "module", "modified", 1, 1),
    }
    added_method = MOD.replace(
        "class Shape:\n",
        "class Shape:\n    sides = 0\n\n    def name(self):\n        return 'shape'\n\n",
    )
    result = analyze_patch(repo, _edit(repo, diff, {"mod.py": added_method}))
    changes = {s.qualname: s.change for s in result.files[0].symbols}
    assert changes == {"Shape": "modified", "Shape.name": "added"}


def test_a_new_file_and_a_deleted_file(git_repo: MakeRepo) -> None:
    users = "from gone import old_api\n\nold_api()\n"
    repo, diff = git_repo({"gone.py": "def old_api():\n    return 1\n", "users.py": users})
    new_file = "import json\n\n\ndef fresh():\n    return missing_name\n"
    result = analyze_patch(repo, _edit(repo, diff, {"gone.py": None, "fresh.py": new_file}))
    by_path = {f.path: f for f in result.files}
    assert {p: f.status for p, f in by_path.items()} == {"fresh.py": "added", "gone.py": "deleted"}
    assert sorted(_kinds(result)) == [("UndefinedName", "missing_name"), ("UnusedImport", "json")]
    assert [(s.qualname, s.change) for s in by_path["fresh.py"].symbols] == [
        ("<module>", "added"),
        ("fresh", "added"),
    ]
    assert [(s.qualname, s.change) for s in by_path["gone.py"].symbols] == [("old_api", "removed")]
    [gone] = result.removed_names
    assert (gone.qualname, gone.still_used) == ("old_api", True)
    assert gone.example is not None and gone.example.path == "users.py"


def test_a_renamed_file_keeps_its_definitions(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"a.py": MOD})
    git(repo, "mv", "a.py", "b.py")
    (repo / "b.py").write_text(MOD.replace("return 0", "return 2"))
    patch = diff()
    _reset(repo)
    assert "rename from a.py" in patch
    result = analyze_patch(repo, patch)
    [f] = result.files
    assert (f.path, f.old_path, f.status) == ("b.py", "a.py", "renamed")
    assert [s.qualname for s in f.symbols] == ["Shape.area"]
    assert result.removed_names == ()


def test_a_module_renamed_away_from_python_removes_its_names(git_repo: MakeRepo) -> None:
    """``gone.py`` -> ``gone.py.bak``: Python cannot import it any more, so its names are removed and
    their users found (the renamed file's own image bound them, and the rename passed as harmless)."""
    users = "from gone import old_api\n\nold_api()\n"
    repo, diff = git_repo({"gone.py": "def old_api():\n    return 1\n", "users.py": users})
    git(repo, "mv", "gone.py", "gone.py.bak")
    patch = diff()
    _reset(repo)
    assert "rename to gone.py.bak" in patch
    [gone] = analyze_patch(repo, patch).removed_names
    assert (gone.qualname, gone.still_used, gone.example and gone.example.path) == (
        "old_api",
        True,
        "users.py",
    )


def test_non_python_files_are_listed_but_not_checked(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"README.md": "# title\n", "setup.cfg": "[x]\n"})
    patch = _edit(repo, diff, {"README.md": "# title\nimport os\nundefined\n"})
    result = analyze_patch(repo, patch)
    [f] = result.files
    assert (f.path, f.python, f.introduced, f.symbols) == ("README.md", False, (), ())


def test_lone_surrogates_and_undecodable_files_are_reasons_not_crashes(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": MOD})
    patch = _edit(repo, diff, {"mod.py": MOD.replace("return 0", "return 3")})
    result = analyze_patch(repo, patch.replace("return 3", "return '\udc80\ud800'"))
    assert (result.apply.method, result.reasons) == ("failed", ("patch_not_utf8",))
    raw = _edit(repo, diff, {"mod.py": MOD.encode().replace(b"return 0", b"return '\xff\xfe'")})
    result = analyze_patch(repo, raw.encode("utf-8", "surrogateescape"))
    assert result.apply.method == "git_apply"
    [f] = result.files
    assert f.reasons == ("not_decodable",) and f.introduced == () and f.symbols == ()
    # a declared encoding is honoured: latin-1 bytes under a coding cookie decode fine
    latin = b"# -*- coding: latin-1 -*-\nNAME = '\xe9'\n"
    repo2 = repo.parent / "repo2"
    repo2.mkdir()
    git(repo2, "init", "-q")
    (repo2 / "l.py").write_bytes(latin)
    git(repo2, "add", "-A")
    git(repo2, "commit", "-qm", "base")
    (repo2 / "l.py").write_bytes(latin + b"OTHER = undefined\n")
    git(repo2, "add", "-A")
    latin_patch = git(repo2, "diff", "--cached").encode("utf-8", "surrogateescape")
    git(repo2, "reset", "-q", "--hard")
    result = analyze_patch(repo2, latin_patch)
    assert _kinds(result) == [("UndefinedName", "undefined")]


def test_no_repository_and_garbage_patches(tmp_path: Path, git_repo: MakeRepo) -> None:
    result = analyze_patch(tmp_path / "absent", "diff --git a/x b/x\n")
    assert (result.apply.method, result.reasons) == ("not_attempted", ("no_repository",))
    repo, _ = git_repo({"mod.py": MOD})
    for empty in ("", " \n\n", b""):
        assert analyze_patch(repo, empty).apply.method == "empty"
    for junk in ("not a patch at all\n", "--- a/mod.py\n+++ b/mod.py\n@@ -1 +1 @@\n"):
        result = analyze_patch(repo, junk)
        assert result.apply.method == "failed" and result.files == ()
        assert "internal_error" not in result.reasons


def test_paths_outside_the_repository_are_never_touched(tmp_path: Path, git_repo: MakeRepo) -> None:
    repo, _ = git_repo({"mod.py": MOD})
    outside = tmp_path / "victim.py"
    outside.write_text("SAFE = 1\n")
    patch = "--- a/../victim.py\n+++ b/../victim.py\n@@ -1 +1 @@\n-SAFE = 1\n+SAFE = 0\n"
    result = analyze_patch(repo, patch)
    assert "unsafe_path" in result.reasons
    assert result.apply.method == "failed"
    assert outside.read_text() == "SAFE = 1\n"


def test_the_scan_is_bounded_and_says_so(git_repo: MakeRepo) -> None:
    many = "".join(f"def f{i}():\n    pass\n\n\n" for i in range(6))
    users = "".join(f"from mod import f{i}\n" for i in range(6))
    repo, diff = git_repo({"mod.py": many, "users.py": users})
    patch = _edit(repo, diff, {"mod.py": "X = 1\n"})
    result = analyze_patch(repo, patch, PostimageConfig(max_removed_names=4))
    assert "too_many_removed_names" in result.reasons
    decided = sorted((r.qualname, r.still_used) for r in result.removed_names)
    assert decided == [(f"f{i}", True) for i in range(4)] + [("f4", None), ("f5", None)]
    spread = {f"u{i}.py": "# f0\n" for i in range(5)} | {"z.py": "f0()\n"}
    for rel, content in spread.items():
        (repo / rel).write_text(content)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "more")
    patch = _edit(repo, diff, {"mod.py": many.replace("def f0", "def g0")})
    [gone] = analyze_patch(repo, patch, PostimageConfig(max_confirm_files=3)).removed_names
    assert (gone.qualname, gone.still_used, gone.files_matching) == ("f0", None, 7)
    [gone] = analyze_patch(repo, patch).removed_names
    assert gone.still_used is True and gone.example is not None
    assert gone.example.path == "users.py"


def test_the_result_is_json_and_holds_no_file_contents(git_repo: MakeRepo) -> None:
    secret = "SECRET_TOKEN_VALUE_123"
    repo, diff = git_repo({"mod.py": MOD + f"KEY = '{secret}'\n"})
    patch = _edit(repo, diff, {"mod.py": MOD + f"KEY = '{secret}' + oops\n"})
    result = analyze_patch(repo, patch)
    dumped = result.model_dump_json()
    assert secret not in dumped
    assert PostimageResult.model_validate(json.loads(dumped)) == result
    assert _kinds(result) == [("UndefinedName", "oops")]


@pytest.mark.parametrize("tool", ["git", "patch", "grep"])
def test_the_tools_it_needs_are_installed(tool: str) -> None:
    assert shutil.which(tool), f"{tool} is required (CI installs it: .ci/run)"


def test_the_benchmark_exports_base_trees_and_reports_rates(
    tmp_path: Path, git_repo: MakeRepo
) -> None:
    repo, diff = git_repo({"pkg/mod.py": MOD, "pkg/users.py": "from pkg.mod import helper\n"})
    base = git(repo, "rev-parse", "HEAD").strip()
    good = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return 0", "return 1")})
    bad = _edit(repo, diff, {"pkg/mod.py": MOD.replace("return 0", "return nothing")})
    renamed = _edit(repo, diff, {"pkg/mod.py": MOD.replace("helper", "assist")})
    broken = good.replace("return 0", "return 7")
    repos = tmp_path / "repos"
    repos.mkdir()
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(tmp_path / "acme__tool.git"))
    shutil.make_archive(str(repos / "acme__tool.git"), "tar", tmp_path, "acme__tool.git")
    cands = [
        {"source": "a", "patch": good, "resolved": True, "source_kind": "full_run"},
        {"source": "b", "patch": bad, "resolved": False, "source_kind": "full_run"},
        {"source": "c", "patch": renamed, "resolved": False, "source_kind": "full_run"},
        {"source": "d", "patch": broken, "resolved": False, "source_kind": "full_run"},
        {"source": "e", "patch": good, "resolved": True, "source_kind": "resolved_only"},
    ]
    records = [
        {
            "instance_id": "acme__tool-1",
            "repo": "acme/tool",
            "base_commit": base,
            "candidates": cands,
        },
        {
            "instance_id": "acme__tool-2",
            "repo": "acme/tool",
            "base_commit": "0" * 40,
            "candidates": cands,
        },
        {"instance_id": "other__x-1", "repo": "other/x", "base_commit": base, "candidates": cands},
    ]
    data = tmp_path / "cands.jsonl.gz"
    with gzip.open(data, "wt") as fh:
        fh.writelines(json.dumps({**r, "problem_statement": "p"}) + "\n" for r in records)
    out = tmp_path / "stats.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "postimage_stats.py"), "--data", str(data), "--repos", str(repos), "--out", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    stats = json.loads(out.read_text())
    assert stats["instances_skipped"] == {"base_commit_missing": 1, "no_repository": 1}
    assert (stats["instances"], stats["candidates"]) == (1, 4)  # resolved_only left out
    assert stats["apply"]["git_apply"]["n"] == 3 and stats["apply"]["failed"]["n"] == 1
    flagged = stats["applied"]["introduces_any_message"]
    assert (flagged["with"]["n"], flagged["with"]["resolved"]) == (1, 0)
    assert (flagged["without"]["n"], flagged["without"]["resolved"]) == (2, 1)
    used = stats["applied"]["removes_a_name_still_used"]
    assert (used["with"]["n"], used["without"]["n"]) == (1, 2)
    assert stats["cpu_ms_per_candidate"]["median"] > 0
    assert "introduces_any_message" in done.stdout


def test_a_patch_already_in_the_tree_is_reverted_by_patch_and_says_so(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": MOD})
    patch = _edit(repo, diff, {"mod.py": MOD.replace("return 0", "return 1")})
    (repo / "mod.py").write_text(MOD.replace("return 0", "return 1"))  # the fix is already there
    git(repo, "commit", "-qam", "applied")
    result = analyze_patch(repo, patch)
    # git apply refuses; patch --batch (no --forward, as the harness runs it) assumes -R
    assert result.apply.method == "patch_fuzz"
    assert "patch_assumed_reversed" in result.reasons
    assert result.changed_symbols == ("mod.py::Shape.area",)


def test_a_read_only_tree_with_an_executable_file(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"tool.py": MOD})
    (repo / "tool.py").chmod(0o755)
    git(repo, "commit", "-qam", "exec")
    patch = _edit(repo, diff, {"tool.py": MOD.replace("return 0", "return 5")})
    (repo / "tool.py").chmod(0o555)  # as RepoCache exports are: read-only
    try:
        result = analyze_patch(repo, patch)
    finally:
        (repo / "tool.py").chmod(0o755)
    assert result.apply.method == "git_apply", result.apply
    assert result.changed_symbols == ("tool.py::Shape.area",)
