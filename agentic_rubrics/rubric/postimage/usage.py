"""Names a patch removes or renames, and whether the rest of the repository still uses them.

A removed name is a function, class, method (in classes all the way up) or module-level variable that a
changed file's pre-image defines and its post-image does not, unless some post-image still binds that
name (a definition moved within the patch, or re-imported). Dunder names are left out: Python calls
them implicitly and every file mentions ``__init__``.

The search is one word search for all names (``grep -rowF`` over ``*.py``, under a deadline), then
each file holding a name is tokenised until a real use is found: a name token that is not the name of a
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
from dataclasses import dataclass, field
from pathlib import Path

from agentic_rubrics.rubric.postimage.flakes import decode_source
from agentic_rubrics.rubric.postimage.model import (
    Location,
    PostimageConfig,
    RemovedKind,
    RemovedName,
)
from agentic_rubrics.rubric.postimage.symbols import Image


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


_DEF_WORDS = ("def", "class")


def _first_uses(text: str, words: set[str]) -> dict[str, int] | None:
    """First line where each of ``words`` is used as a name token; ``None`` if it does not tokenise."""
    found: dict[str, int] = {}
    previous = ""
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.type in (tokenize.NL, tokenize.COMMENT):
                continue
            if (
                tok.type == tokenize.NAME
                and tok.string in words
                and tok.string not in found
                and previous not in _DEF_WORDS
            ):
                found[tok.string] = tok.start[0]
            previous = tok.string
    except (tokenize.TokenError, SyntaxError):
        return None
    return found


def _grep(repo: Path, words: list[str], timeout: float) -> tuple[dict[str, list[str]], bool]:
    """For each word, the ``*.py`` files under ``repo`` holding it as a word (one pass over the
    tree for all words); and whether grep reported an error."""
    patterns = [arg for w in words for arg in ("-e", w)]
    proc = subprocess.run(
        ["grep", "-rowIFZs", "--include=*.py", "--exclude-dir=.git", *patterns, "--", "."],
        cwd=repo,
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LC_ALL": "C"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        timeout=timeout,
    )
    files: dict[str, set[str]] = {w: set() for w in words}
    for line in proc.stdout.splitlines():  # b"./path\0word" per occurrence
        path, _, word = line.partition(b"\0")
        found = files.get(word.decode("ascii", "replace"))
        if found is not None:
            found.add(path.decode("utf-8", "surrogateescape").removeprefix("./"))
    return {w: sorted(f) for w, f in files.items()}, proc.returncode > 1


@dataclass
class _Scan:
    """One scan's state: the repository, its limits, the files tokenised so far, reasons."""

    repo: Path
    words: list[str]
    config: PostimageConfig
    deadline: float
    reasons: set[str] = field(default_factory=set)
    cache: dict[str, dict[str, int] | None] = field(default_factory=dict)

    def uses(self, path: str, text: str | None) -> dict[str, int] | None:
        """The first use of each word in a file (tokenised once; ``None``: not decodable)."""
        if path not in self.cache:
            self.cache[path] = _first_uses(text, set(self.words)) if text is not None else None
        return self.cache[path]

    def source(self, path: str) -> str | None:
        """A repository file's text: never through a link, never over ``max_file_bytes``."""
        try:
            found = self.repo / path
            big = found.is_symlink() or found.stat().st_size > self.config.max_file_bytes
            return None if big else decode_source(found.read_bytes())
        except OSError:
            return None

    def confirm(
        self, word: str, files: list[str], example: Location | None, undecided: bool
    ) -> tuple[bool | None, Location | None]:
        """Whether ``word`` is used in one of ``files`` (tokenised, at most ``max_confirm_files``,
        before the deadline): a use found, none, or ``None`` when that could not be decided."""
        for i, path in enumerate(files):
            if example is not None:
                break
            if i >= self.config.max_confirm_files or time.monotonic() > self.deadline:
                undecided = True
                if time.monotonic() > self.deadline:
                    self.reasons.add("usage_scan_timeout")
                break
            first = (self.uses(path, self.source(path)) or {}).get(word)
            undecided = undecided or self.cache[path] is None
            if first is not None:
                example = Location(path=path, line=first)
        return (True if example else (None if undecided else False)), example


def scan(
    repo: Path,
    removed: list[Removed],
    changed_paths: set[str],
    post_texts: dict[str, str],
    config: PostimageConfig,
) -> tuple[list[RemovedName], list[str]]:
    """Decide ``still_used`` for each removed name; reasons for what could not be decided."""
    ordered = sorted({r.word for r in removed})
    state = _Scan(repo, ordered[: config.max_removed_names], config, time.monotonic())
    state.deadline += config.scan_timeout_s
    decided: dict[str, tuple[bool | None, Location | None, int | None]] = dict.fromkeys(
        ordered[config.max_removed_names :], (None, None, None)
    )
    if decided:
        state.reasons.add("too_many_removed_names")
    examples: dict[str, Location] = {}
    for path, text in sorted(post_texts.items()):  # changed files, as the patch leaves them
        for word, line in (state.uses(path, text) or {}).items():
            examples.setdefault(word, Location(path=path, line=line))
    grepped: dict[str, list[str]] | None = None
    erred = False
    try:
        grepped, erred = _grep(repo, state.words, max(0.0, state.deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        state.reasons.add("usage_scan_timeout")
    except OSError:
        state.reasons.add("usage_scan_error")
    if erred:
        state.reasons.add("usage_scan_error")
    for word in state.words:
        example = examples.get(word)
        if grepped is None:
            decided[word] = (True if example else None, example, None)
            continue
        files = [f for f in grepped[word] if f not in changed_paths]
        still, example = state.confirm(word, files, example, erred)
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
    return out, sorted(state.reasons)
