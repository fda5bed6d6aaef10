"""One candidate on the real base tree: apply it, then parse, lint, map and search its changed files.

``analyze_patch`` never raises: every failure is a reason code on the result (``REASONS``), and what it
prevented is left out. The repository folder is only read; all writing happens in a temporary folder
that holds copies of the touched files alone.
"""

from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.patch import parse_patch
from agentic_rubrics.rubric.postimage.apply import Applied, apply_like_harness, header_paths
from agentic_rubrics.rubric.postimage.behaviour import compare
from agentic_rubrics.rubric.postimage.flakes import (
    Parsed,
    check_source,
    decode_source,
    introduced_messages,
)
from agentic_rubrics.rubric.postimage.model import (
    ApplyInfo,
    ChangedSymbol,
    FileFinding,
    IntroducedMessage,
    PostimageConfig,
    PostimageResult,
    RemovedName,
    Timings,
)
from agentic_rubrics.rubric.postimage.symbols import Image, changed_lines, changed_symbols
from agentic_rubrics.rubric.postimage.usage import (
    Removed,
    bound_names,
    removed_definitions,
    scan,
)

Status = Literal["modified", "added", "deleted", "renamed"]


@dataclass
class _Change:
    path: str
    old_path: str | None
    status: Status
    pre: bytes | None
    post: bytes | None
    link: bool = False
    """A symbolic link (``pre``/``post`` are its targets): never parsed as Python."""
    too_large: bool = False
    """A side is over ``max_file_bytes``: its bytes were not read."""


@dataclass
class _State:
    apply: ApplyInfo = field(default_factory=lambda: ApplyInfo(method="not_attempted"))
    files: list[FileFinding] = field(default_factory=list)
    removed: list[Removed] = field(default_factory=list)
    removed_names: list[RemovedName] = field(default_factory=list)
    posts: dict[str, str] = field(default_factory=dict)
    """Decoded post-images of the changed Python files (searched for uses of removed names)."""
    images: dict[str, Image] = field(default_factory=dict)
    """Their trees and definitions, where they parse."""
    reasons: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def _apply_info(a: Applied) -> ApplyInfo:
    return ApplyInfo(
        method=a.method,
        git_apply_error=a.git_error,
        patch_error=a.patch_error,
        hunks_offset=a.hunks_offset,
        max_offset=a.max_offset,
        hunks_fuzz=a.hunks_fuzz,
        max_fuzz=a.max_fuzz,
        hunks_failed=a.hunks_failed,
    )


def _walk(root: Path) -> set[str]:
    out: set[str] = set()
    for folder, dirs, names in os.walk(root):
        for name in names + [d for d in dirs if (Path(folder) / d).is_symlink()]:
            out.add((Path(folder) / name).relative_to(root).as_posix())
    return out


def _read(path: Path, limit: int) -> bytes | None:
    """The file's bytes, or ``None`` when it is larger than ``limit`` (never read whole then)."""
    if path.lstat().st_size > limit:
        return None
    return path.read_bytes()


def _same(a: Path, b: Path) -> bool:
    """Whether two regular files hold the same bytes, read in blocks (memory bounded)."""
    if a.stat().st_size != b.stat().st_size:
        return False
    with a.open("rb") as fa, b.open("rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def _link(path: Path) -> bytes:
    """A symbolic link's content as git stores it: its target, never what it points at."""
    return os.fsencode(path.readlink())


def _changes(repo: Path, a: Applied, patch_text: str, limit: int) -> list[_Change]:
    """What applying did, read back from the copy: modified, added, deleted and renamed files.
    A file over ``limit`` is compared in blocks and kept without its bytes (``too_large``)."""
    after = _walk(a.root)
    named = header_paths(patch_text)
    # GNU patch leaves FILE.orig (a fuzzed or offset hunk) and FILE.rej beside what it patched
    after = {
        p
        for p in after
        if p in named
        or not any(p.endswith(s) and p.removesuffix(s) in a.copied for s in (".orig", ".rej"))
    }
    changes: dict[str, _Change] = {}
    for p in sorted(a.copied | a.links):
        link = p in a.links
        source = repo / p
        if p not in after:
            pre = _link(source) if link else _read(source, limit)
            changes[p] = _Change(p, None, "deleted", pre, None, link, pre is None)
            continue
        target = a.root / p
        if link or target.is_symlink():
            pre_l = _link(source) if link else None
            post_l = _link(target) if target.is_symlink() else None
            if pre_l != post_l or link != target.is_symlink():
                changes[p] = _Change(p, None, "modified", pre_l, post_l, True)
            continue
        if _same(source, target):
            continue
        pre, post = _read(source, limit), _read(target, limit)
        changes[p] = _Change(p, None, "modified", pre, post, False, pre is None or post is None)
    for p in sorted(after - a.copied - a.links):
        target = a.root / p
        if target.is_symlink():
            changes[p] = _Change(p, None, "added", None, _link(target), True)
        elif not target.is_dir():
            post = _read(target, limit)
            changes[p] = _Change(p, None, "added", None, post, False, post is None)
    try:
        renames = [(f.old_path, f.new_path) for f in parse_patch(patch_text).files if f.is_rename]
    except PatchParseError:
        renames = []
    for old, new in renames:
        if old is None or new is None or old not in changes or new not in changes:
            continue
        if changes[old].status == "deleted" and changes[new].status == "added":
            gone, come = changes.pop(old), changes[new]
            changes[new] = _Change(
                new,
                old,
                "renamed",
                gone.pre,
                come.post,
                come.link,
                gone.too_large or come.too_large,
            )
    return [changes[p] for p in sorted(changes)]


def _parse(data: bytes | None, reasons: list[str]) -> tuple[Parsed | None, str | None]:
    if data is None:
        return None, None
    parsed = check_source(data)
    if parsed is None:
        reasons.append("not_decodable")
        return None, None
    return parsed, decode_source(data)


def _parse_both(
    c: _Change, reasons: list[str], state: _State
) -> tuple[Parsed | None, str | None, Parsed | None, str | None]:
    """Both images parsed and checked, with their text (``None`` where there is none)."""
    t0 = time.perf_counter()
    try:
        pre, pre_text = _parse(c.pre, reasons)
        post, post_text = _parse(c.post, reasons)
    except Exception:  # a hostile file must not take the analysis down (RecursionError, …)
        reasons.append("pyflakes_error")
        pre = post = None
        pre_text = post_text = None
    state.timings["python_ms"] = state.timings.get("python_ms", 0.0) + _ms(t0)
    return pre, pre_text, post, post_text


def _python_file(c: _Change, config: PostimageConfig, state: _State) -> FileFinding:
    reasons: list[str] = []
    finding = FileFinding(path=c.path, old_path=c.old_path, status=c.status, python=True)
    if c.too_large or max(len(c.pre or b""), len(c.post or b"")) > config.max_file_bytes:
        return finding.model_copy(update={"reasons": ("file_too_large",)})
    pre, pre_text, post, post_text = _parse_both(c, reasons, state)
    if "not_decodable" in reasons or "pyflakes_error" in reasons:
        return finding.model_copy(update={"reasons": tuple(dict.fromkeys(reasons))})
    t0 = time.perf_counter()
    removed, added = changed_lines(
        (pre_text or "").splitlines() if c.pre is not None else [],
        (post_text or "").splitlines() if c.post is not None else [],
    )
    pre_image = pre.image if pre is not None else None
    post_image = post.image if post is not None else None
    # a module renamed to a name Python cannot import (``x.py`` -> ``x.py.bak``) binds nothing any more
    module = post_image if c.path.endswith(".py") else None
    introduced: tuple[IntroducedMessage, ...] = ()
    if post is not None:
        state.posts[c.path] = post_text or ""
        if module is not None:
            state.images[c.path] = module
        if pre is not None and pre_image is None and post_image is not None:
            reasons.append("pre_syntax_error")
        else:
            introduced = introduced_messages(pre, post, added)
    symbols: tuple[ChangedSymbol, ...] = ()
    if (c.pre is None or pre_image) and (c.post is None or post_image):
        symbols = changed_symbols(
            pre_image.defs if pre_image else None,
            post_image.defs if post_image else None,
            removed,
            added,
        )
        if pre_image is not None:
            state.removed += removed_definitions(c.old_path or c.path, pre_image, module)
    state.timings["symbols_ms"] = state.timings.get("symbols_ms", 0.0) + _ms(t0)
    parses = None if post is None else post_image is not None
    t0 = time.perf_counter()
    what = compare(
        pre_text if c.pre is not None else None, post_text if c.post is not None else None
    )
    renamed = c.old_path is not None and c.old_path != c.path  # the module's import name changed
    changed = True if renamed else what.changed
    state.timings["behaviour_ms"] = state.timings.get("behaviour_ms", 0.0) + _ms(t0)
    return finding.model_copy(
        update={
            "introduced": introduced,
            "symbols": symbols,
            "post_parses": parses,
            "behaviour": None if changed is None else "changed" if changed else "unchanged",
            "behaviour_symbols": what.symbols,
            "behaviour_delta": None if renamed else what.delta,
            "reasons": tuple(reasons),
        }
    )


def _ms(t0: float) -> float:
    return round((time.perf_counter() - t0) * 1000, 3)


def _run(repo: Path, patch: str | bytes, config: PostimageConfig, state: _State) -> None:
    if not repo.is_dir():
        state.reasons.append("no_repository")
        return
    if isinstance(patch, str):
        try:
            data = patch.encode("utf-8")
        except UnicodeEncodeError:  # the harness writes the patch as text and fails the same way
            state.apply = ApplyInfo(method="failed")
            state.reasons.append("patch_not_utf8")
            return
    else:
        data = patch
    if not data.strip():
        state.apply = ApplyInfo(method="empty")
        return
    text = data.decode("utf-8", "replace")
    with tempfile.TemporaryDirectory(prefix="agentic-rubrics-postimage-") as tmp:
        t0 = time.perf_counter()
        applied = apply_like_harness(repo, data, Path(tmp), config)
        state.apply = _apply_info(applied)
        state.reasons += applied.reasons
        if applied.method not in ("git_apply", "patch_fuzz"):
            state.timings["apply_ms"] = _ms(t0)
            return
        changes = _changes(repo, applied, text, config.max_file_bytes)
        state.timings["apply_ms"] = _ms(t0)
    for c in changes:
        if not c.link and (c.path.endswith(".py") or (c.old_path or "").endswith(".py")):
            state.files.append(_python_file(c, config, state))
        else:
            state.files.append(
                FileFinding(path=c.path, old_path=c.old_path, status=c.status, python=False)
            )
    bound: set[str] = set().union(*(bound_names(i) for i in state.images.values()))
    removed = [r for r in state.removed if r.word not in bound and not _dunder(r.word)]
    if removed:
        t0 = time.perf_counter()
        changed_paths = {p for c in changes for p in (c.path, c.old_path) if p}
        state.removed_names, reasons = scan(repo, removed, changed_paths, state.posts, config)
        state.timings["usage_ms"] = _ms(t0)
        state.reasons += reasons


def _dunder(word: str) -> bool:
    return word.startswith("__") and word.endswith("__")


def analyze_patch(
    repo_dir: Path, patch: str | bytes, config: PostimageConfig | None = None
) -> PostimageResult:
    """Apply ``patch`` to (copies of) ``repo_dir`` like the SWE-bench harness and analyse the result.

    ``repo_dir`` is a repository at the task's base commit (a checkout or an exported tree); it is
    never modified. Never raises: failures are reason codes on the result.
    """
    config = config or PostimageConfig()
    state = _State()
    t0 = time.perf_counter()
    try:
        _run(Path(repo_dir), patch, config, state)
    except MemoryError:  # the worker's address-space bound (max_memory_bytes)
        state.reasons.append("memory_limit")
    # a bug must not stop a 500-task run: it is recorded, and the result is partial
    except Exception:
        state.reasons.append("internal_error")
    state.timings["total_ms"] = _ms(t0)
    return PostimageResult(
        apply=state.apply,
        files=tuple(state.files),
        removed_names=tuple(state.removed_names),
        timings=Timings(**state.timings),
        reasons=tuple(dict.fromkeys(state.reasons)),
    )
