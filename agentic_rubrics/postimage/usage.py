"""Names a patch removes or renames, and whether the rest of the repository still uses them.

A removed name is a function, class, method (in classes all the way up) or module-level variable that a
changed file's pre-image defines and its post-image does not, unless some post-image still binds that
name (a definition moved within the patch, or re-imported). Dunder names are left out: Python calls
them implicitly and every file mentions ``__init__``.

The search is a word search (``grep -rlwF`` over ``*.py``, one process per name, under one deadline),
then each matching file is tokenised until a real use is found: a name token that is not the name of a
``def``/``class``, outside comments and strings. Unchanged files are read from the base tree, changed
ones from their post-images. It cannot tell which object an attribute belongs to: ``x.name`` counts as a
use of a removed method ``name`` (the example location lets a reader judge).
"""

from __future__ import annotations

import io
import os
import subprocess
import time
import tokenize
from dataclasses import dataclass
from pathlib import Path

from agentic_rubrics.postimage.flakes import decode_source
from agentic_rubrics.postimage.model import Location, PostimageConfig, RemovedKind, RemovedName
from agentic_rubrics.postimage.symbols import Image


@dataclass(frozen=True)
class Removed:
    """A removed definition before the search: where it was, its qualified name and kind."""

    path: str
    qualname: str
    kind: RemovedKind

    @property
    def word(self) -> str:
        return self.qualname.rsplit(".", 1)[-1]


def removed_definitions(path: str, pre: Image, post: Image | None) -> list[Removed]:
    """Public definitions and module variables of ``pre`` missing from ``post`` (``None``: deleted)."""
    after = {d.qualname for d in post.defs if d.public} if post is not None else set()
    gone = [d for d in pre.defs if d.public and d.qualname not in after]
    gone_names = {d.qualname for d in gone}
    out: list[Removed] = []
    for d in gone:
        parent = d.qualname.rsplit(".", 1)[0] if "." in d.qualname else None
        if parent in gone_names:
            continue  # its class went too: the class is the removed name
        kind: RemovedKind = "class" if d.kind == "class" else "method" if d.in_class else "function"
        out.append(Removed(path, d.qualname, kind))
    variables = pre.variables - (post.variables if post is not None else set())
    defined = {d.qualname for d in pre.defs}
    out += [Removed(path, v, "variable") for v in sorted(variables - defined)]
    return out


def bound_names(post: Image) -> set[str]:
    """Names a post-image still binds where other code could reach them."""
    names = {d.qualname.rsplit(".", 1)[-1] for d in post.defs if d.public}
    return names | post.variables | post.imports


def _first_uses(text: str, words: set[str]) -> dict[str, int] | None:
    """First line where each of ``words`` is used as a name token; ``None`` if it does not tokenise."""
    found: dict[str, int] = {}
    previous = ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type == tokenize.NAME:
                if (
                    tok.string in words
                    and tok.string not in found
                    and previous
                    not in (
                        "def",
                        "class",
                    )
                ):
                    found[tok.string] = tok.start[0]
                previous = tok.string
            elif tok.type not in (tokenize.NL, tokenize.COMMENT):
                previous = tok.string
    except (tokenize.TokenError, SyntaxError):
        return None
    return found


def _grep(repo: Path, word: str, timeout: float) -> tuple[list[str], bool]:
    """Files under ``repo`` whose ``*.py`` text holds ``word`` as a word; and whether grep erred."""
    proc = subprocess.run(
        ["grep", "-rlwIFZs", "--include=*.py", "--exclude-dir=.git", "-e", word, "--", "."],
        cwd=repo,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
    )
    paths = [p.decode("utf-8", "surrogateescape") for p in proc.stdout.split(b"\0") if p]
    return sorted(p.removeprefix("./") for p in paths), proc.returncode > 1


def scan(
    repo: Path,
    removed: list[Removed],
    changed_paths: set[str],
    post_texts: dict[str, str],
    config: PostimageConfig,
) -> tuple[list[RemovedName], list[str]]:
    """Decide ``still_used`` for each removed name; reasons for what could not be decided."""
    deadline = time.monotonic() + config.scan_timeout_s
    reasons: set[str] = set()
    words = {r.word for r in removed}
    cache: dict[str, dict[str, int] | None] = {}

    def uses(path: str, text: str | None) -> dict[str, int] | None:
        if path not in cache:
            cache[path] = _first_uses(text, words) if text is not None else None
        return cache[path]

    decided: dict[str, tuple[bool | None, Location | None, int | None]] = {}
    for n, word in enumerate(sorted(words)):
        if n >= config.max_removed_names:
            reasons.add("too_many_removed_names")
            decided[word] = (None, None, None)
            continue
        example: Location | None = None
        for path, text in sorted(post_texts.items()):
            line = (uses(path, text) or {}).get(word)
            if line is not None:
                example = Location(path=path, line=line)
                break
        remaining = deadline - time.monotonic()
        try:
            if remaining <= 0:
                raise subprocess.TimeoutExpired("grep", 0)
            files, erred = _grep(repo, word, remaining)
        except subprocess.TimeoutExpired:
            reasons.add("usage_scan_timeout")
            decided[word] = (True if example else None, example, None)
            continue
        except OSError:
            reasons.add("usage_scan_error")
            decided[word] = (True if example else None, example, None)
            continue
        files = [f for f in files if f not in changed_paths]
        undecided = erred
        if erred:
            reasons.add("usage_scan_error")
        for i, path in enumerate(files):
            if example is not None:
                break
            if i >= config.max_confirm_files or time.monotonic() > deadline:
                undecided = True
                break
            try:
                source = decode_source((repo / path).read_bytes())
            except OSError:
                source = None
            line = (uses(path, source) or {}).get(word)
            undecided = undecided or cache[path] is None
            if line is not None:
                example = Location(path=path, line=line)
        still = True if example else (None if undecided else False)
        decided[word] = (still, example, len(files))
    out = [
        RemovedName(
            path=r.path,
            qualname=r.qualname,
            kind=r.kind,
            still_used=decided[r.word][0],
            example=decided[r.word][1],
            files_matching=decided[r.word][2],
        )
        for r in removed
    ]
    return out, sorted(reasons)
