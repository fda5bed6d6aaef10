"""Hostile candidates against the post-image analysis: host files, sizes, symbolic links, memory.

Every hostile input is built here. In CI (AGENTIC_RUBRICS_REQUIRE_BWRAP=1) the confined cases fail,
never skip, where bubblewrap cannot run.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentic_rubrics.confine import PATH, confine_problem, confined_argv
from agentic_rubrics.rubric.postimage import PostimageConfig, analyze_patch

from .conftest import git

REQUIRED = os.environ.get("AGENTIC_RUBRICS_REQUIRE_BWRAP") == "1"
if REQUIRED and confine_problem() is not None:  # pragma: no cover - a broken CI machine
    raise RuntimeError(f"CI requires bubblewrap: {confine_problem()}")
require_confine = pytest.mark.skipif(
    confine_problem() is not None, reason=f"bubblewrap unavailable: {confine_problem()}"
)
MakeRepo = Callable[[dict[str, bytes | str]], tuple[Path, Callable[..., str]]]
CONFINED = PostimageConfig(isolation="bubblewrap")


def _secret(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "shadow"
    secret.parent.mkdir()
    secret.write_text("root:SECRET-HASH:19000:0:99999:7:::\n")
    return secret


@pytest.mark.parametrize("verb", ["copy", "rename"])
@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_a_copy_or_rename_from_outside_the_tree_is_never_applied(
    tmp_path: Path, git_repo: MakeRepo, verb: str, how: str
) -> None:
    secret = _secret(tmp_path)
    repo, _ = git_repo({"mod.py": "X = 1\n"})
    source = str(secret) if how == "absolute" else os.path.relpath(secret, repo)
    patch = f"diff --git a/x b/x\nsimilarity index 100%\n{verb} from {source}\n{verb} to s.py\n"
    result = analyze_patch(repo, patch)
    assert result.apply.method == "failed"
    assert "unsafe_path" in result.reasons
    assert result.files == ()
    assert secret.read_text().startswith("root:SECRET")


def test_a_removed_line_that_looks_like_a_header_is_not_a_path(git_repo: MakeRepo) -> None:
    """``-- /etc/x`` removed from a SQL file reads ``--- /etc/x`` in the diff: a change, not a header."""
    repo, diff = git_repo({"q.sql": "-- /etc/passwd\nSELECT 1;\n"})
    (repo / "q.sql").write_text("SELECT 1;\n")
    patch = diff()
    assert "\n--- /etc/passwd\n" in patch
    git(repo, "reset", "-q", "--hard")
    result = analyze_patch(repo, patch)
    assert result.apply.method == "git_apply", result.reasons
    assert "unsafe_path" not in result.reasons


@require_confine
def test_the_apply_commands_see_nothing_outside_their_folder(tmp_path: Path) -> None:
    secret = _secret(tmp_path)
    work = tmp_path / "work"
    work.mkdir()
    argv = confined_argv(
        work,
        ["bash", "-c", f"cat {secret}; cat /etc/hostname; echo x > {tmp_path}/escape; echo ok"],
        cwd=work,
        env={"PATH": PATH},
        max_memory_bytes=1 << 30,
        max_file_bytes=1 << 20,
    )
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
    assert "SECRET" not in done.stdout and done.stdout.strip().endswith("ok")
    assert not (tmp_path / "escape").exists()


@require_confine
def test_the_apply_commands_have_a_memory_and_file_size_bound(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()

    def run(command: str) -> subprocess.CompletedProcess[str]:
        argv = confined_argv(
            work,
            ["python3", "-c", command],
            cwd=work,
            env={"PATH": PATH},
            max_memory_bytes=256 << 20,
            max_file_bytes=1 << 20,
        )
        return subprocess.run(argv, capture_output=True, text=True, timeout=30)

    assert run("bytearray(1 << 30)").returncode != 0
    big = run("open('big', 'wb').write(b'x' * (4 << 20))")
    assert big.returncode != 0 and (work / "big").stat().st_size <= 1 << 20


def test_isolation_bubblewrap_refuses_where_it_cannot_run(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": "X = 1\n"})
    (repo / "mod.py").write_text("X = 2\n")
    patch = diff()
    git(repo, "reset", "-q", "--hard")
    result = analyze_patch(repo, patch, CONFINED)
    if confine_problem() is None:
        assert result.apply.method == "git_apply"
        assert "apply_unconfined" not in result.reasons
    else:  # pragma: no cover - a machine without bubblewrap
        assert (result.apply.method, result.reasons) == ("not_attempted", ("not_confined",))


def test_a_mode_change_on_a_huge_repository_file_is_not_copied(
    tmp_path: Path, git_repo: MakeRepo
) -> None:
    repo, _ = git_repo({"mod.py": "X = 1\n"})
    huge = repo / "data.bin"
    with huge.open("wb") as f:  # sparse: 2 GiB on paper, nothing on disk
        f.truncate(2 << 30)
    patch = "diff --git a/data.bin b/data.bin\nold mode 100644\nnew mode 100755\n"
    result = analyze_patch(repo, patch)
    assert (result.apply.method, result.reasons) == ("not_attempted", ("copy_too_large",))


def test_a_binary_hunk_declaring_a_huge_file_is_refused_before_anything_runs(
    git_repo: MakeRepo,
) -> None:
    repo, _ = git_repo({"mod.py": "X = 1\n"})
    patch = (
        "diff --git a/blob.bin b/blob.bin\nnew file mode 100644\nindex 0000000..1111111\n"
        "GIT binary patch\nliteral 300000000\nzcmeAS@N?(olHy`uVBq!ia0vp^j3CUx0wlM}@Gt=>Zci7-kcv5P&mQDuP~c%&\n\n"
        "literal 0\nHcmV?d00001\n\n"
    )
    result = analyze_patch(repo, patch)  # one line of data cannot inflate to 300 MB: corrupt
    assert (result.apply.method, result.reasons) == ("failed", ("corrupt_binary",))
    lines = "zcmeAS@N?(olHy`uVBq!ia0vp^j3CUx0wlM}@Gt=>Zci7-kcv5P&mQDuP~c%&\n" * 6000
    plausible = patch.replace(
        "zcmeAS@N?(olHy`uVBq!ia0vp^j3CUx0wlM}@Gt=>Zci7-kcv5P&mQDuP~c%&\n", lines
    )
    result = analyze_patch(repo, plausible)
    assert (result.apply.method, result.reasons) == ("not_attempted", ("patch_too_large",))
    small = analyze_patch(repo, "x" * 101, PostimageConfig(max_patch_bytes=100))
    assert small.reasons == ("patch_too_large",)


@require_confine
def test_a_file_written_over_the_bound_stops_the_analysis(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": "X = 1\n"})
    (repo / "gen.py").write_text("Y = 0\n" * 2000)
    patch = diff()
    git(repo, "reset", "-q", "--hard")
    git(repo, "clean", "-qfd")
    config = PostimageConfig(isolation="bubblewrap", max_output_file_bytes=4096)
    result = analyze_patch(repo, patch, config)
    assert result.apply.method == "not_attempted"
    assert "apply_output_too_large" in result.reasons
    assert analyze_patch(repo, patch, CONFINED).apply.method == "git_apply"


def test_a_post_image_over_max_file_bytes_is_not_read(git_repo: MakeRepo) -> None:
    repo, diff = git_repo({"mod.py": "X = 1\n"})
    (repo / "mod.py").write_text("X = 1\n" + "Y = 2\n" * 500)
    patch = diff()
    git(repo, "reset", "-q", "--hard")
    result = analyze_patch(repo, patch, PostimageConfig(max_file_bytes=1000))
    assert result.apply.method == "git_apply"
    (finding,) = result.files
    assert finding.reasons == ("file_too_large",) and finding.status == "modified"


def _harness(repo: Path, patch: str, tmp_path: Path) -> str:
    """Which of the harness's commands applies ``patch`` to a real checkout of ``repo``."""
    real = tmp_path / "real"
    subprocess.run(["git", "clone", "-q", str(repo), str(real)], check=True)
    (tmp_path / "p.diff").write_text(patch)
    for method, cmd in (
        ("git_apply", ["git", "apply", "--verbose"]),
        ("patch_fuzz", ["patch", "--batch", "--fuzz=5", "-p1", "-i"]),
    ):
        done = subprocess.run([*cmd, str(tmp_path / "p.diff")], cwd=real, capture_output=True)
        if done.returncode == 0:
            return method
        subprocess.run(["git", "checkout", "-q", "."], cwd=real)
        subprocess.run(["git", "clean", "-qfd"], cwd=real)
    return "failed"


def test_repository_symlinks_are_kept_so_apply_outcomes_match_the_harness(
    tmp_path: Path, git_repo: MakeRepo
) -> None:
    repo, _ = git_repo({"pkg/real/mod.py": "X = 1\n"})
    (repo / "pkg" / "alias").symlink_to("real")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    beyond = (
        "diff --git a/pkg/alias/new.py b/pkg/alias/new.py\nnew file mode 100644\n"
        "--- /dev/null\n+++ b/pkg/alias/new.py\n@@ -0,0 +1 @@\n+Y = 2\n"
    )
    # git apply refuses a path beyond a link; GNU patch follows a link that stays in the tree
    assert _harness(repo, beyond, tmp_path) == "patch_fuzz"
    result = analyze_patch(repo, beyond)
    assert (result.apply.method, result.apply.git_apply_error) == ("patch_fuzz", "beyond_symlink")
    assert [(f.path, f.status) for f in result.files] == [("pkg/real/new.py", "added")]
    # a link edited as a link: a change of its target, never read as the file it points at
    retarget = (
        "diff --git a/pkg/alias b/pkg/alias\nindex 1111111..2222222 120000\n"
        "--- a/pkg/alias\n+++ b/pkg/alias\n@@ -1 +1 @@\n-real\n\\ No newline at end of file\n"
        "+other\n\\ No newline at end of file\n"
    )
    assert _harness(repo, retarget, tmp_path / "second") == "git_apply"
    result = analyze_patch(repo, retarget)
    assert result.apply.method == "git_apply"
    assert [(f.path, f.python) for f in result.files] == [("pkg/alias", False)]


def test_links_out_of_the_tree_lead_nowhere(tmp_path: Path, git_repo: MakeRepo) -> None:
    secret = _secret(tmp_path)
    repo, _ = git_repo({"mod.py": "X = 1\n"})
    (repo / "shadow.py").symlink_to(secret)
    (repo / "out").symlink_to(secret.parent)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "links")
    for path in ("shadow.py", "out/shadow"):
        through = (
            f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-root:SECRET-HASH:19000:0:99999:7:::\n+x\n"
        )
        result = analyze_patch(repo, through)
        assert result.apply.method == "failed"
        assert secret.read_text().startswith("root:SECRET")


def test_the_worker_address_space_is_capped(tmp_path: Path) -> None:
    code = (
        "from agentic_rubrics.rubric.postimage import worker\n"
        "worker._start_worker(256 << 20)\n"
        "try:\n    bytearray(1 << 30)\nexcept MemoryError:\n    print('capped')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "capped", done.stderr


def test_a_binary_hunk_declaring_more_than_its_data_holds_is_corrupt_not_too_large() -> None:
    """``literal 99999999999`` over one line of data: more than zlib could inflate it to, so git
    refuses the patch ("corrupt binary patch") and so does the analysis (it was left unanalysed as
    too large, and its `applies` item undecided); a hunk whose data could reach a size over the bound
    stays too large to analyse."""
    from agentic_rubrics.rubric.postimage.apply import refusal
    from agentic_rubrics.rubric.postimage.binary import binary_sizes
    from agentic_rubrics.rubric.postimage.model import PostimageConfig

    head = "diff --git a/b.bin b/b.bin\nnew file mode 100644\nindex 0000000..1111111\nGIT binary patch\n"
    bogus = head + "literal 99999999999\nzcmeIu0Sy2E0K%a6Pi+qeh%mq\n\nliteral 0\nHcmV?d00001\n"
    assert binary_sizes(bogus.splitlines()) == [(99999999999, 52), (0, 8)]
    config = PostimageConfig()
    assert refusal(bogus, len(bogus), config) == ("failed", "corrupt_binary")
    big = head + "literal 67108865\n" + ("z" + "0" * 65 + "\n") * 1300 + "\n"
    assert refusal(big, len(big), config) == ("not_attempted", "patch_too_large")
    small = head + "literal 12\nTcmZQzU|?coU|?Wk00962\n\n"
    assert refusal(small, len(small), config) is None
