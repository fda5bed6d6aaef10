"""Check predicates on real git diffs: renames, new/deleted/binary files, CRLF, multi-file patches."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.patch import is_empty_patch, normalize_patch, parse_patch, patch_hash
from agentic_rubrics.rubric.check_verdicts import check_verdicts
from agentic_rubrics.rubric.checks import CHECKS, path_matches, run_check
from agentic_rubrics.types import Check

from .conftest import item, rubric

Maker = Callable[[dict[str, bytes | str]], tuple[Path, Callable[..., str]]]

CORE = """\
class Parser:
    def parse_header(self, text):
        if not text:
            return None
        return text.split(":")

    def parse_body(self, text):
        return text.strip()


def helper(x):
    return x + 1
"""


def c(spec: dict[str, object]) -> Check:
    return Check.model_validate(spec)


def value(spec: dict[str, object], patch: str) -> int | None:
    return run_check(c(spec), patch).value


def test_multi_file_edit_new_and_deleted(git_repo: Maker) -> None:
    repo, diff = git_repo(
        {
            "src/pkg/core.py": CORE,
            "src/pkg/old.py": "X = 1\n",
            "tests/test_core.py": "def test(): assert 1\n",
        }
    )
    (repo / "src/pkg/core.py").write_text(CORE.replace("return None", "raise ValueError('empty')"))
    (repo / "src/pkg/old.py").unlink()
    (repo / "src/pkg/new.py").write_text("Y = 2\nprint('debug')\n")
    patch = diff()
    parsed = parse_patch(patch)
    kinds = {f.path: (f.is_new, f.is_deleted) for f in parsed.files}
    assert kinds == {
        "src/pkg/core.py": (False, False),
        "src/pkg/new.py": (True, False),
        "src/pkg/old.py": (False, True),
    }
    assert parsed.files[0].old_path == "src/pkg/core.py"  # a/ b/ prefixes stripped
    assert value({"touches": "src/pkg/core.py"}, patch) == 1
    assert value({"touches": "core.py"}, patch) == 1  # a bare name matches the base name
    assert value({"touches": "src/*.py"}, patch) == 1
    assert value({"touches": "tests/"}, patch) == 0
    assert value({"not_touches": "tests/"}, patch) == 1
    assert value({"only_touches": ["src/pkg/"]}, patch) == 1
    assert value({"only_touches": "src/pkg/core.py"}, patch) == 0
    assert value({"adds_match": r"raise ValueError", "in": "src/pkg/core.py"}, patch) == 1
    assert value({"adds_match": r"raise ValueError", "in": "tests/"}, patch) == 0
    assert value({"adds_no_match": r"^\s*print\(", "in": "*.py"}, patch) == 0
    assert value({"removes_match": "return None"}, patch) == 1
    assert value({"removes_no_match": "return None"}, patch) == 0
    assert value({"max_files": 3}, patch) == 1
    assert value({"max_files": 2}, patch) == 0
    changed = parsed.changed_lines
    assert changed == 1 + 1 + 2 + 1  # core: -1 +1, new: +2, old: -1
    assert value({"max_changed_lines": changed}, patch) == 1
    assert value({"max_changed_lines": changed - 1}, patch) == 0
    assert value({"max_changed_lines": 2, "in": "src/pkg/core.py"}, patch) == 1
    assert value({"adds_file": "src/pkg/*.py"}, patch) == 1
    assert value({"adds_no_file": "tests/"}, patch) == 1
    assert value({"deletes_no_file": "*"}, patch) == 0
    assert value({"deletes_no_file": "tests/"}, patch) == 1
    # file filters apply to every predicate
    assert value({"max_files": 1, "not_in": "src/pkg/*.py"}, patch) == 1
    assert value({"max_files": 1, "in": "src/"}, patch) == 0
    assert value({"adds_no_match": r"print\(", "not_in": ["src/pkg/new.py"]}, patch) == 1
    assert value({"touches": "*.py", "in": ["tests/", "docs/"]}, patch) == 0


def test_rename_with_edit_counts_both_paths(git_repo: Maker) -> None:
    body = "".join(f"line {i}\n" for i in range(30))
    repo, diff = git_repo({"a/mod.py": body})
    (repo / "b").mkdir()
    (repo / "a/mod.py").rename(repo / "b/moved.py")
    (repo / "b/moved.py").write_text(body.replace("line 3\n", "line three\n"))
    patch = diff()
    assert "rename from" in patch
    (f,) = parse_patch(patch).files
    assert (f.old_path, f.new_path, f.is_rename) == ("a/mod.py", "b/moved.py", True)
    assert value({"touches": "a/mod.py"}, patch) == 1
    assert value({"touches": "b/moved.py"}, patch) == 1
    assert value({"only_touches": "b/"}, patch) == 0  # the old path is outside b/
    assert value({"adds_match": "three"}, patch) == 1
    assert value({"adds_file": "*"}, patch) == 0


def test_pure_rename_has_no_hunks(git_repo: Maker) -> None:
    repo, diff = git_repo({"x.py": "a = 1\n" * 5})
    (repo / "x.py").rename(repo / "y.py")
    patch = diff()
    (f,) = parse_patch(patch).files
    assert (f.old_path, f.new_path, f.hunks) == ("x.py", "y.py", ())
    assert value({"touches": "y.py"}, patch) == 1
    assert value({"max_changed_lines": 0}, patch) == 1


def test_binary_files(git_repo: Maker) -> None:
    repo, diff = git_repo({"img.png": b"\x89PNG\x00\x01\x02", "a.py": "x = 1\n"})
    (repo / "img.png").write_bytes(b"\x89PNG\x00\x09\x09\x09")
    (repo / "new.bin").write_bytes(b"\x00\xff" * 10)
    (repo / "a.py").write_text("x = 2\n")
    for patch in (diff(), diff("--binary")):
        files = {f.path: f for f in parse_patch(patch).files}
        assert files["img.png"].binary and files["new.bin"].binary
        assert not files["a.py"].binary
        assert value({"touches": "*.png"}, patch) == 1
        assert value({"adds_match": "x = 2"}, patch) == 1
        assert value({"max_files": 3}, patch) == 1


def test_crlf_patch_equals_its_lf_twin(git_repo: Maker) -> None:
    repo, diff = git_repo({"w.py": "a = 1\r\nb = 2\r\n"})
    (repo / "w.py").write_bytes(b"a = 1\r\nb = 3\r\n")
    patch_crlf_content = diff()
    assert parse_patch(patch_crlf_content).files[0].added == ("b = 3",)
    lf_patch = "--- a/w.py\n+++ b/w.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n"
    crlf_patch = lf_patch.replace("\n", "\r\n")
    assert parse_patch(crlf_patch) == parse_patch(lf_patch)
    assert value({"adds_match": r"^b = 3$"}, crlf_patch) == 1
    assert patch_hash(crlf_patch) == patch_hash(lf_patch)


def test_dev_null_sides_without_git_header() -> None:
    patch = (
        "--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,1 @@\n+hello\n"
        "--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\n"
    )
    new, gone = parse_patch(patch).files
    assert (new.old_path, new.new_path, new.is_new) == (None, "docs/new.md", True)
    assert (gone.old_path, gone.new_path, gone.is_deleted) == ("gone.txt", None, True)
    assert value({"adds_file": "docs/"}, patch) == 1
    assert value({"deletes_no_file": "*.txt"}, patch) == 0


def test_unparsable_and_empty_patches() -> None:
    assert parse_patch("").is_empty and parse_patch("  \n").is_empty
    assert is_empty_patch(None) and is_empty_patch("\n\t")
    with pytest.raises(PatchParseError):
        parse_patch("I fixed it by editing core.py")
    with pytest.raises(PatchParseError):
        # the hunk promises 3 lines and holds 1
        parse_patch("--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-a\n")
    for bad in ("I fixed it", "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n-a\n"):
        out = run_check(c({"touches": "x.py"}), bad)
        assert (out.value, out.reason) == (None, "check_error")
    # an empty patch is a patch: checks decide on it (a reject comes from scoring, not from here)
    assert value({"touches": "x.py"}, "") == 0
    assert value({"not_touches": "x.py"}, "") == 1


def test_invalid_checks_are_check_errors_not_verdicts() -> None:
    patch = "--- a/x.py\n+++ b/x.py\n@@ -1 +1 @@\n-a\n+b\n"
    for spec in (
        {"frobnicate": "x"},
        {"adds_match": "(unclosed"},
        {"max_files": "two"},
        {"max_files": True},
        {"touches": ""},
        {"touches": "x.py", "in": ""},
        {"touches": "x.py", "not_in": 3},
        {"touches": "x.py", "not_in": []},
        {"touches_symbol": "not a name"},
        {"only_touches": []},
    ):
        out = run_check(c(spec), patch)
        assert (out.value, out.reason) == (None, "check_error"), spec


SYMBOL_PATCH_DEFAULT_GIT = """\
--- a/core.py
+++ b/core.py
@@ -2,4 +2,4 @@ class Parser:
     def parse_header(self, text):
         if not text:
-            return None
+            raise ValueError("empty")
         return text.split(":")
"""

# hunk deep inside a method: only the class is visible in git's default function context
SYMBOL_PATCH_DEEP = """\
--- a/core.py
+++ b/core.py
@@ -40,3 +40,3 @@ class Parser:
         x = 1
-        y = 2
+        y = 3
         return x
"""

SYMBOL_PATCH_TOPLEVEL = (
    "--- a/core.py\n+++ b/core.py\n@@ -9,5 +9,5 @@ class Parser:\n"
    "         return text.strip()\n \n \n def helper(x):\n-    return x + 1\n+    return x + 2\n"
)


def test_touches_symbol_from_the_diff_alone() -> None:
    p = SYMBOL_PATCH_DEFAULT_GIT
    assert value({"touches_symbol": "parse_header"}, p) == 1
    assert value({"touches_symbol": "Parser.parse_header"}, p) == 1
    assert value({"touches_symbol": "Parser"}, p) == 1
    assert value({"touches_symbol": "Other.parse_header"}, p) == 0
    assert value({"touches_symbol": "parse_body"}, p) == 0
    assert value({"touches_symbol": "parse_header", "in": "other.py"}, p) == 0
    # only the class is visible: the method cannot be confirmed, the class can
    assert value({"touches_symbol": "Parser"}, SYMBOL_PATCH_DEEP) == 1
    assert value({"touches_symbol": "Parser.parse_body"}, SYMBOL_PATCH_DEEP) == 0
    # a top-level line closes the header's class: helper is not a method of Parser
    assert value({"touches_symbol": "helper"}, SYMBOL_PATCH_TOPLEVEL) == 1
    assert value({"touches_symbol": "Parser"}, SYMBOL_PATCH_TOPLEVEL) == 0
    assert value({"touches_symbol": "Parser.helper"}, SYMBOL_PATCH_TOPLEVEL) == 0


def test_touches_symbol_on_a_real_git_diff(git_repo: Maker) -> None:
    repo, diff = git_repo({"core.py": CORE})
    (repo / "core.py").write_text(
        CORE.replace("return text.strip()", "return text.strip() or None")
    )
    patch = diff()
    assert value({"touches_symbol": "Parser.parse_body"}, patch) == 1
    assert value({"touches_symbol": "Parser.parse_header"}, patch) == 0
    # a changed def line touches the function it defines
    (repo / "core.py").write_text(CORE.replace("def helper(x):", "def helper(x, step=1):"))
    assert value({"touches_symbol": "helper"}, diff()) == 1


def test_path_matching_rules() -> None:
    assert path_matches("src/a/b.py", "src/")
    assert path_matches("src/a/b.py", "src/*.py")  # * crosses /
    assert path_matches("src/a/b.py", "b.py")
    assert path_matches("src/a/b.py", "*.py")
    assert not path_matches("src/a/b.py", "a/b")
    assert not path_matches("src/a/b.pyc", "b.py")
    assert not path_matches("xsrc/a.py", "src/")


def test_check_verdicts_only_for_items_with_checks() -> None:
    r = rubric(
        file_change=[item("FC1", 3, {"touches": "core.py"}), item("FC2", 1)],
        integrity=[item("IN1", 2, {"not_touches": "tests/"})],
    )
    out = check_verdicts(r, SYMBOL_PATCH_DEFAULT_GIT, instance_id="t", candidate_id="c")
    assert set(out) == {"FC1", "IN1"}
    assert out["FC1"].origin == "checked" and out["FC1"].value == 1
    bad = check_verdicts(r, "not a diff", instance_id="t", candidate_id="c")
    assert {(v.origin, v.value, v.reason) for v in bad.values()} == {
        ("missing", None, "check_error")
    }


def test_normalize_patch_ignores_index_lines_and_trailing_space() -> None:
    a = "diff --git a/x b/x\nindex 1234567..89abcde 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a \n+b\n"
    b = "diff --git a/x b/x\nindex fffffff..0000000 100644\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n\n"
    assert normalize_patch(a) == normalize_patch(b)
    assert normalize_patch("") == ""


def test_every_check_documents_an_example_that_validates() -> None:
    import yaml

    for spec in CHECKS.values():
        example = yaml.safe_load(spec.example)
        chk = Check.model_validate(example)
        assert chk.name == spec.name
        got = run_check(chk, SYMBOL_PATCH_DEFAULT_GIT)
        if spec.repository:  # decided on the base tree at judge time; from the diff alone: missing
            assert (got.value, got.reason) == (None, "no_repository"), spec.name
        else:
            assert got.value in (0, 1), spec.name
