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

The given repository is only read: touched files are copied into a temporary folder (regular files;
a repository symbolic link on a touched path is copied as a link, never followed, so that ``git apply``
refuses a path beyond it as it does on the real tree), the commands run there, and the caller reads
pre-images from the repository and post-images from the copy.

A stranger's patch is bounded before anything runs (:func:`refusal`): a header naming a path outside the
tree (absolute, or with ``..``: a copy or rename whose source is ``/etc/shadow``) is refused outright and
recorded as not applying (``unsafe_path``); a patch larger than ``max_patch_bytes``, a binary hunk whose
declared size is over ``max_output_file_bytes``, and a touched repository file (or all of them) over
the copy bounds are not analysed (``patch_too_large``, ``copy_too_large``). The commands run confined
(:mod:`agentic_rubrics.confine`): nothing outside the copy is readable, the address space and the size
of any file they write are capped (``apply_output_too_large`` when they hit it).
"""

from __future__ import annotations

import logging
import os
import re
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from agentic_rubrics.confine import PATH, confine_problem, confined_argv
from agentic_rubrics.patch import outside_hunks, unquote_path
from agentic_rubrics.rubric.postimage.binary import INFLATE_MAX, binary_sizes
from agentic_rubrics.rubric.postimage.model import ApplyMethod, PostimageConfig

log = logging.getLogger(__name__)

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
    ("beyond a symbolic link", "beyond_symlink"),
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
    """Regular files copied from the repository (their pre-images are the repository's)."""
    links: set[str] = field(default_factory=set)
    """Repository symbolic links laid in the copy as links (their pre-image is the link's target)."""
    git_error: str | None = None
    patch_error: str | None = None
    hunks_offset: int = 0
    max_offset: int = 0
    hunks_fuzz: int = 0
    max_fuzz: int = 0
    hunks_failed: int = 0
    reasons: list[str] = field(default_factory=list)


def _raw_paths(text: str) -> list[str]:
    raw: list[str] = []
    for line in outside_hunks(text):
        m = _DIFF_GIT.match(line)
        if m:
            raw += [m.group(1), m.group(2)]
            continue
        m = _HEADER.match(line)
        if m:
            raw.append(m.group(1).split("\t")[0].rstrip())
    return [p for p in (unquote_path(r.strip()) for r in raw) if p and p != "/dev/null"]


def header_paths(text: str) -> set[str]:
    """Every repository-relative path the patch's headers could name (a superset: both -p0 and -p1)."""
    out: set[str] = set()
    for path in _raw_paths(text):
        out.add(path)
        if "/" in path:
            out.add(path.split("/", 1)[1])
    return out


def _safe_relative(path: str) -> PurePosixPath | None:
    p = PurePosixPath(path)
    if p.is_absolute() or not p.parts or any(part in ("..", "") for part in p.parts):
        return None
    return p


def refusal(text: str, size: int, config: PostimageConfig) -> tuple[ApplyMethod, str] | None:
    """Why the patch must not be applied at all, read from its text alone (``None``: it may be).

    ``("failed", "unsafe_path")``: a header names a path outside the tree, which the harness's tree
    could not hold either; ``("not_attempted", code)``: the patch is over a size bound, so what it
    would do is not analysed (it is not judged as failing)."""
    if size > config.max_patch_bytes:
        return "not_attempted", "patch_too_large"
    for path in _raw_paths(text):
        stripped = path.split("/", 1)[1] if "/" in path and not path.startswith("/") else path
        if _safe_relative(path) is None or _safe_relative(stripped) is None:
            return "failed", "unsafe_path"
    for declared, held in binary_sizes(outside_hunks(text)):
        if declared > INFLATE_MAX * held + 64:  # more than its data can inflate to: git refuses it
            return "failed", "corrupt_binary"
        if declared > config.max_output_file_bytes:
            return "not_attempted", "patch_too_large"
    return None


def materialise(
    repo: Path, paths: set[str], root: Path, config: PostimageConfig
) -> tuple[set[str], set[str], list[str]]:
    """Copy the regular files among ``paths`` from ``repo`` to ``root``, and the repository's symbolic
    links on those paths as links (never followed by this code); return the files, the links and
    reasons. A link whose target lies inside the tree gets that target laid too (the rest of the path
    under it), since GNU patch follows such a link in the harness's tree; an absolute or outward
    target is not (confined, the commands find nothing there).

    Raises :class:`CopyTooLarge` when a file, or all of them together, are over the copy bounds."""
    laid = _Laid(repo, root, config)
    reasons: list[str] = []
    for path in sorted(paths):
        rel = _safe_relative(path)
        if rel is None:
            reasons.append("unsafe_path")
            continue
        laid.lay(rel.parts, depth=0)
    return laid.copied, laid.links, sorted(set(reasons))


@dataclass
class _Laid:
    repo: Path
    root: Path
    config: PostimageConfig
    copied: set[str] = field(default_factory=set)
    links: set[str] = field(default_factory=set)
    total: int = 0

    def lay(self, parts: tuple[str, ...], depth: int) -> None:
        src, dst = self.repo, self.root
        for i, part in enumerate(parts):
            src, dst = src / part, dst / part
            if src.is_symlink():
                self._link(src, dst)
                if depth < 8:  # a chain of links (or a loop) stops here
                    self._follow(parts[: i + 1], str(src.readlink()), parts[i + 1 :], depth)
                return
        if src.is_file():
            self._copy(src, dst, "/".join(parts))
        elif src.is_dir():
            dst.mkdir(parents=True, exist_ok=True)
        elif src.parent.is_dir() and not src.parent.is_symlink():
            # a file the patch creates: its folder exists in the tree, so it does in the copy
            dst.parent.mkdir(parents=True, exist_ok=True)
        # else: a -p0/-p1 reading that names nothing

    def _follow(self, at: tuple[str, ...], target: str, rest: tuple[str, ...], depth: int) -> None:
        if target.startswith("/"):
            return
        joined = PurePosixPath(os.path.normpath(PurePosixPath(*at[:-1], target).as_posix()))
        inside = _safe_relative(joined.as_posix()) if joined.parts != (".",) else None
        if inside is not None:
            self.lay((*inside.parts, *rest), depth + 1)

    def _link(self, src: Path, dst: Path) -> None:
        key = src.relative_to(self.repo).as_posix()
        if key in self.links:
            return
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.symlink_to(src.readlink())
        self.links.add(key)

    def _copy(self, src: Path, dst: Path, key: str) -> None:
        if key in self.copied:
            return
        size = src.lstat().st_size
        self.total += size
        if size > self.config.max_copy_bytes or self.total > self.config.max_copy_total_bytes:
            raise CopyTooLarge(key)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dst)
        # writable whatever the source's mode (RepoCache exports are read-only); keep the x bit,
        # which git apply compares with a patch's "old mode"
        dst.chmod(0o755 if src.stat().st_mode & 0o111 else 0o644)
        self.copied.add(key)


class CopyTooLarge(Exception):
    """A touched repository file (or all of them) is over the copy bounds: nothing is analysed."""


def _env(home: Path) -> dict[str, str]:
    # no repository above the copy may be discovered, no user or system git config may change git apply
    return {
        "PATH": PATH,
        "HOME": str(home),
        "LC_ALL": "C",
        "GIT_CEILING_DIRECTORIES": str(home),
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": os.devnull,
    }


def confinement(config: PostimageConfig) -> str | None:
    """``"bubblewrap"`` when the commands run confined, ``None`` when they may run unconfined
    (``isolation: none``, or ``auto`` where bubblewrap cannot run, with one warning per process).
    Raises :class:`Unconfined` when ``isolation: bubblewrap`` and bubblewrap cannot run."""
    if config.isolation == "none":
        return None
    problem = confine_problem()
    if problem is None:
        return "bubblewrap"
    if config.isolation == "bubblewrap":
        raise Unconfined(problem)
    _warn_unconfined(problem)
    return None


class Unconfined(Exception):
    """``isolation: bubblewrap`` was asked for and bubblewrap cannot run here."""


_warned: list[str] = []


def _warn_unconfined(problem: str) -> None:
    if not _warned:
        _warned.append(problem)
        log.warning(
            "post-image analysis applies candidate patches WITHOUT isolation (%s): the patch is"
            " checked for paths outside the tree first, but git apply and patch run as this user;"
            " install bubblewrap (PostimageConfig(isolation='bubblewrap') refuses instead)",
            problem,
        )


def _run(
    cmd: tuple[str, ...], patch_file: Path, cwd: Path, config: PostimageConfig, confined: bool
) -> tuple[int, str]:
    argv = [*cmd, str(patch_file)]
    env = _env(cwd.parent)
    if confined:
        argv = confined_argv(
            cwd.parent,
            argv,
            cwd=cwd,
            env=env,
            max_memory_bytes=config.max_memory_bytes,
            max_file_bytes=config.max_output_file_bytes,
        )
    proc = subprocess.run(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=config.apply_timeout_s,
    )
    out = (proc.stdout[-200_000:] + b"\n" + proc.stderr[-200_000:]).decode("utf-8", "replace")
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


_FILE_LIMIT = (128 + signal.SIGXFSZ, -signal.SIGXFSZ)
"""How a command that wrote past ``ulimit -f`` ends (killed by SIGXFSZ: by the shell's count or ours)."""
_EFBIG = ("File too large", "file too large")


def apply_like_harness(
    repo: Path, patch: bytes, work: Path, config: PostimageConfig | None = None
) -> Applied:
    """Apply ``patch`` to copies of its files under ``work``: git apply first, then patch with fuzz."""
    config = config or PostimageConfig()
    text = patch.decode("utf-8", "replace")
    result = Applied(method="failed", root=work / "tree")
    refused = refusal(text, len(patch), config)
    if refused is not None:
        result.method, reason = refused
        result.reasons = [reason]
        return result
    try:
        confined = confinement(config) is not None
    except Unconfined:
        result.method = "not_attempted"
        result.reasons = ["not_confined"]
        return result
    patch_file = work / "candidate.diff"
    patch_file.write_bytes(patch)
    paths = header_paths(text)
    attempts: list[tuple[ApplyMethod, tuple[str, ...]]] = [
        ("git_apply", GIT_APPLY),
        ("patch_fuzz", PATCH_FUZZ),
    ]
    for i, (method, cmd) in enumerate(attempts):
        root = work / f"tree{i}"
        root.mkdir()
        try:
            copied, links, reasons = materialise(repo, paths, root, config)
        except CopyTooLarge:
            result.method, result.reasons = "not_attempted", ["copy_too_large"]
            return result
        result.reasons = reasons + ([] if confined else ["apply_unconfined"])
        hunks = Applied(method=method, root=root, copied=copied, links=links)
        try:
            code, out = _run(cmd, patch_file, root, config, confined)
        except subprocess.TimeoutExpired:
            result.reasons.append("apply_timeout")
            continue
        except FileNotFoundError:
            result.reasons.append("apply_tool_missing")
            continue
        if code in _FILE_LIMIT or any(e in out for e in _EFBIG):
            result.method = "not_attempted"
            result.reasons.append("apply_output_too_large")
            return result
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
