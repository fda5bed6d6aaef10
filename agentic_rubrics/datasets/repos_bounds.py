"""How much an exported tree may write: its largest file, its total and its number of entries.

A commit's size on the wire says nothing of its size on disk: git stores a blob once however many
paths name it, and a tree once however many folders hold it, and compresses both. A few kilobytes can
be a 2 GiB file of zeros, or sixteen folders of sixteen folders ... of sixteen empty files (16^6: 16.7
million files, 32 KB of objects). The bounds are therefore read from git's own listing of the commit
(``ls-tree -r -t -l``: every path with its blob's size) before anything is written, stopping at the
first entry past a bound (a tree bomb's listing is never held whole), and held again as the
archive streams.
"""

from __future__ import annotations

import os
import tarfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from agentic_rubrics.datasets.repos_git import Git, GitResult, kill_group

_CHUNK = 1 << 16
_MAX_PATH = 1 << 16  # bytes of one path: far past what a file system takes (4096)


@dataclass(frozen=True)
class ExportBounds:
    """The largest file and the largest tree an export may write, in bytes, and its most entries."""

    max_file: int = 100 << 20
    max_tree: int = 2048 << 20
    max_files: int = 200_000
    """Files, links, submodules and folders together (each costs an inode however small)."""


class Over(NamedTuple):
    """What is over a bound, the bound, and the setting (``repos.<field>``) that sets it."""

    what: str
    bound: int = 0
    field: str = ""

    def message(self) -> str:
        if not self.field:
            return f"{self.what}; nothing was written"
        if self.field == "max_files":
            return f"{self.what}, the export's bound (repos.max_files); nothing was written"
        return (
            f"{self.what}, over the export bound of {self.bound:,} MiB (repos.{self.field});"
            " nothing was written"
        )


class _Tally:
    """What the entries seen so far add up to; the first one past a bound says why."""

    def __init__(self, bounds: ExportBounds) -> None:
        self.bounds = bounds
        self.total = 0
        self.entries = 0

    def add(self, path: str | bytes, size: int) -> Over | None:
        self.entries += 1
        self.total += size
        bounds = self.bounds
        if size > bounds.max_file:
            name = path if isinstance(path, str) else path.decode("utf-8", "replace")
            return Over(f"{name!r} is {size:,} bytes", bounds.max_file >> 20, "max_file_mib")
        if self.total > bounds.max_tree:
            return Over(
                f"the tree is over {self.total:,} bytes", bounds.max_tree >> 20, "max_tree_mib"
            )
        if self.entries > bounds.max_files:
            return Over(
                f"the tree has over {bounds.max_files:,} entries (files, links and folders)",
                bounds.max_files,
                "max_files",
            )
        return None


def listed_over(
    git: Git, bare: Path, commit: str, bounds: ExportBounds, *, timeout: float
) -> tuple[Over | None, GitResult]:
    """The first entry of ``commit``'s tree past ``bounds`` (``None``: all within), from git's
    listing read as it streams; git is stopped there. The ``GitResult`` says whether the listing
    itself succeeded (it holds no stdout)."""
    args = ["ls-tree", "-r", "-t", "-l", "-z", "--full-tree", commit]
    proc = git.popen(args, git_dir=bare)
    assert proc.stdout is not None and proc.stderr is not None
    late = threading.Event()

    def expire() -> None:
        late.set()
        kill_group(proc)

    timer = threading.Timer(timeout, expire)
    timer.start()
    tally, over, pending = _Tally(bounds), None, b""
    try:
        while over is None and (chunk := os.read(proc.stdout.fileno(), _CHUNK)):
            *entries, pending = (pending + chunk).split(b"\0")
            for entry in entries:
                if (over := tally.add(*_entry(entry))) is not None:
                    break
            if over is None and len(pending) > _MAX_PATH:
                over = Over(f"a path is over {_MAX_PATH:,} bytes long")
            if over is not None:
                kill_group(proc)  # the rest of the listing is not needed (nor its memory)
        err = proc.stderr.read().decode("utf-8", "replace")
        returncode = proc.wait()
    finally:
        timer.cancel()
        if proc.poll() is None:
            kill_group(proc)
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    if over is None and pending and not late.is_set():
        returncode, err = returncode or 1, err or "the listing ends inside an entry"
    return over, GitResult(0 if over else returncode, "", err, late.is_set())


def _entry(entry: bytes) -> tuple[bytes, int]:
    """One ``ls-tree -l`` entry (``<mode> <type> <object> <size>\\t<path>``): its path and size (a
    folder or a submodule has none: ``-``)."""
    meta, _, path = entry.partition(b"\t")
    size = meta.rpartition(b" ")[2]
    return path, int(size) if size.isdigit() else 0


class StreamBound:
    """The archive's members within the bounds as they stream (git's listing was checked first:
    this holds should the archive say otherwise)."""

    def __init__(self, bounds: ExportBounds) -> None:
        self.tally = _Tally(bounds)

    def __call__(self, member: tarfile.TarInfo | None) -> tarfile.TarInfo | None:
        if member is not None:
            over = self.tally.add(member.name, member.size if member.isfile() else 0)
            if over is not None:
                raise tarfile.TarError(
                    f"{member.name!r} takes the export over a bound: {over.what}"
                )
        return member
