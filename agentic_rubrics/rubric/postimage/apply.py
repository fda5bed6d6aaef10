"""Apply a candidate like the SWE-bench harness, on a copy of only the files it touches.

The harness's commands, verbatim (SWE-bench ``swebench/harness/run_evaluation.py`` at commit
ac3225118fb2c7575aef99c67f835641de994310, "Fix evaluation hanging issue and improve patch apply
(#162)", 2024-07-01)::

    git apply -v /tmp/patch.diff                      # first
    patch --batch --fuzz=5 -p1 -i /tmp/patch.diff     # only when git apply failed

History, for reading labels: before that commit the harness ran ``git apply -v`` alone, so a
``patch_fuzz`` candidate is exactly one on which harness generations disagree. b27bbfd5 (2024-07-02)
added ``--allow-empty`` (an empty patch "applies"; here it is ``empty``). d83e1001 (2025-01-13) made
the list ``GIT_APPLY_CMDS = ["git apply --verbose", "git apply --verbose --reject", "patch --batch
--fuzz=5 -p1 -i"]``; ``--reject`` succeeds exactly when plain ``git apply`` does (it only gives up
atomicity). The newest adds ``--3way`` (it needs the repository's objects, which an exported tree has
not) and ``patch --forward``, and resets the tree between attempts, as this module does by running
each command on a fresh copy. Without ``--forward``, ``patch --batch`` reverts a hunk that looks
reversed: that is recorded (``patch_assumed_reversed``), not hidden.

The given repository is only read: touched files are copied into a temporary folder (regular files
only; a path through a symbolic link or outside the tree is not copied and is recorded), the commands
run there, and the caller reads pre-images from the repository and post-images from the copy.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agentic_rubrics.patch import unquote_path
from agentic_rubrics.rubric.postimage.model import ApplyMethod

GIT_APPLY = ("git", "apply", "--verbose")
PATCH_FUZZ = ("patch", "--batch", "--fuzz=5", "-p1", "-i")

_HEADER = re.compile(r"^(?:--- |\+\+\+ |rename from |rename to |copy from |copy to )(.+)$")
_DIFF_GIT = re.compile(r"^diff --git (\"(?:[^\"\\]|\\.)*\"|\S+) (\"(?:[^\"\\]|\\.)*\"|\S+)$")
_OFFSET = re.compile(
    r"^Hunk #\d+ succeeded at \d+(?: with fuzz (\d+))?(?: \(offset (-?\d+) lines?\))?"
)
_FAILED = re.compile(r"^Hunk #\d+ FAILED")
_REVERSED = "Reversed (or previously applied) patch detected"
_GIT_ERRORS = (
    ("patch does not apply", "does_not_apply"),
    ("already exists in working directory", "already_exists"),
    ("No such file or directory", "missing_file"),
    ("does not exist in index", "missing_file"),
    ("corrupt patch", "corrupt_patch"),
    ("No valid patches in input", "no_patch"),
    ("unrecognized input", "no_patch"),
)


@dataclass
class Applied:
    """The outcome: ``method``, per-hunk counts, and where the post-images are (``root``)."""

    method: ApplyMethod
    root: Path
    copied: set[str] = field(default_factory=set)
    git_error: str | None = None
    patch_error: str | None = None
    hunks_offset: int = 0
    max_offset: int = 0
    hunks_fuzz: int = 0
    max_fuzz: int = 0
    hunks_failed: int = 0
    reasons: list[str] = field(default_factory=list)


def header_paths(text: str) -> set[str]:
    """Every repository-relative path the patch's headers could name (a superset: both -p0 and -p1)."""
    raw: list[str] = []
    for line in text.splitlines():
        m = _DIFF_GIT.match(line)
        if m:
            raw += [m.group(1), m.group(2)]
            continue
        m = _HEADER.match(line)
        if m:
            raw.append(m.group(1).split("\t")[0].rstrip())
    out: set[str] = set()
    for path in raw:
        path = unquote_path(path.strip())
        if not path or path == "/dev/null":
            continue
        out.add(path)
        if "/" in path:
            out.add(path.split("/", 1)[1])
    return out


def _safe_relative(path: str) -> PurePosixPath | None:
    p = PurePosixPath(path)
    if p.is_absolute() or not p.parts or any(part in ("..", "") for part in p.parts):
        return None
    return p


def materialise(repo: Path, paths: set[str], root: Path) -> tuple[set[str], list[str]]:
    """Copy the regular files among ``paths`` from ``repo`` to ``root``; return them and reasons."""
    copied: set[str] = set()
    reasons: list[str] = []
    for path in sorted(paths):
        rel = _safe_relative(path)
        if rel is None:
            reasons.append("unsafe_path")
            continue
        src = repo
        through_link = False
        for part in rel.parts:
            src = src / part
            if src.is_symlink():
                through_link = True
                break
        if through_link:
            reasons.append("symlink_skipped")
            continue
        if not src.is_file():
            continue  # a file the patch creates, or a -p0/-p1 reading that names nothing
        dst = root.joinpath(*rel.parts)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        # writable whatever the source's mode (RepoCache exports are read-only); keep the x bit,
        # which git apply compares with a patch's "old mode"
        dst.chmod(0o755 if src.stat().st_mode & 0o111 else 0o644)
        copied.add(rel.as_posix())
    return copied, sorted(set(reasons))


def _env(home: Path) -> dict[str, str]:
    # no repository above the copy may be discovered, no user or system git config may change git apply
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LC_ALL": "C",
        "GIT_CEILING_DIRECTORIES": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }


def _run(cmd: tuple[str, ...], patch_file: Path, cwd: Path, timeout: float) -> tuple[int, str]:
    proc = subprocess.run(
        [*cmd, str(patch_file)],
        cwd=cwd,
        env=_env(cwd.parent),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
    )
    out = (proc.stdout + b"\n" + proc.stderr).decode("utf-8", "replace")
    return proc.returncode, out


def _count_hunks(out: str, applied: Applied) -> None:
    for line in out.splitlines():
        m = _OFFSET.match(line)
        if m:
            fuzz = int(m.group(1) or 0)
            offset = abs(int(m.group(2) or 0))
            applied.hunks_fuzz += fuzz > 0
            applied.max_fuzz = max(applied.max_fuzz, fuzz)
            applied.hunks_offset += offset > 0
            applied.max_offset = max(applied.max_offset, offset)
        elif _FAILED.match(line):
            applied.hunks_failed += 1


def _git_error(out: str) -> str:
    return next((code for needle, code in _GIT_ERRORS if needle in out), "other")


def _patch_error(out: str) -> str:
    if "FAILED" in out:
        return "hunk_failed"
    if "Only garbage" in out:
        return "garbage"
    if "No such file" in out or "can't find file" in out:
        return "missing_file"
    return "other"


def apply_like_harness(repo: Path, patch: bytes, work: Path, timeout: float) -> Applied:
    """Apply ``patch`` to copies of its files under ``work``: git apply first, then patch with fuzz."""
    patch_file = work / "candidate.diff"
    patch_file.write_bytes(patch)
    paths = header_paths(patch.decode("utf-8", "replace"))
    attempts: list[tuple[ApplyMethod, tuple[str, ...]]] = [
        ("git_apply", GIT_APPLY),
        ("patch_fuzz", PATCH_FUZZ),
    ]
    result = Applied(method="failed", root=work / "tree")
    for i, (method, cmd) in enumerate(attempts):
        root = work / f"tree{i}"
        root.mkdir()
        copied, reasons = materialise(repo, paths, root)
        result.reasons = reasons
        hunks = Applied(method=method, root=root, copied=copied)
        try:
            code, out = _run(cmd, patch_file, root, timeout)
        except subprocess.TimeoutExpired:
            result.reasons.append("apply_timeout")
            continue
        except FileNotFoundError:
            result.reasons.append("apply_tool_missing")
            continue
        _count_hunks(out, hunks)
        if code == 0:
            hunks.git_error = result.git_error
            hunks.reasons = result.reasons + (
                ["patch_assumed_reversed"] if _REVERSED in out else []
            )
            return hunks
        if method == "git_apply":
            result.git_error = _git_error(out)
        else:
            result.patch_error = _patch_error(out)
            result.hunks_failed = hunks.hunks_failed
    return result
