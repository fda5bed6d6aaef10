"""Unified diffs parsed once into plain values (on top of ``unidiff``) for checks and scoring.

Normalisations, each for a reason:
- CRLF line ends become LF before parsing, so a patch made on Windows or against a CRLF file gives the
  same lines as its LF twin (``unidiff`` matches git's header lines with ``$``, which fails on ``\\r``).
- ``a/`` and ``b/`` prefixes are stripped, ``/dev/null`` sides become ``None``, quoted paths are
  unquoted: every path is repository-relative.
- A text that holds no file header at all is not a patch: it raises instead of passing as empty.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from fnmatch import fnmatchcase
from functools import cached_property, lru_cache

from unidiff.errors import UnidiffParseError
from unidiff.patch import PatchSet

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.surrogates import utf8_bytes

_GLOB_CHARS = re.compile(r"[*?\[]")

TEST_GLOBS = [
    "tests/",
    "*/tests/*",
    "testing/",
    "*/testing/*",
    "test_*.py",
    "*_test.py",
    "conftest.py",
]
"""Globs of test files, for ``in`` / ``not_in`` filters."""
DOC_GLOBS = [
    "doc/",
    "docs/",
    "changelog/",
    "changes/",
    ".github/",
    "*.rst",
    "*.md",
    "*.adoc",
    "/CHANGES*",
    "/CHANGELOG*",
    "/NEWS*",
    "/HISTORY*",
    "/AUTHORS*",
]
"""Globs of files that document the project and that no program reads: a change to them alone changes
no behaviour (data files, templates and configuration are not among them)."""


@lru_cache(maxsize=65536)  # the same few paths and globs come back for every candidate of a task
def path_matches(path: str, pattern: str) -> bool:
    """Whether a repository-relative path matches a check's path pattern (the forms are in
    :mod:`agentic_rubrics.rubric.checks`' module doc)."""
    if pattern.startswith("/"):
        # anchored at the repository root: "/*.py" is a Python file at the top level only
        rest = pattern.lstrip("/")
        return path.count("/") == rest.count("/") and fnmatchcase(path, rest)
    if pattern.endswith("/"):
        return path.startswith(pattern) or fnmatchcase(path, pattern + "*")
    if _GLOB_CHARS.search(pattern) is None:
        return path == pattern or ("/" not in pattern and path.rsplit("/", 1)[-1] == pattern)
    if fnmatchcase(path, pattern):
        return True
    return "/" not in pattern and fnmatchcase(path.rsplit("/", 1)[-1], pattern)


def is_test_path(path: str) -> bool:
    """A test file or a file under a tests folder."""
    return any(path_matches(path, g) for g in TEST_GLOBS)


def is_doc_path(path: str) -> bool:
    """A documentation file (:data:`DOC_GLOBS`)."""
    return any(path_matches(path, g) for g in DOC_GLOBS)


_DEV_NULL = "/dev/null"
_INDEX_LINE = re.compile(r"^index [0-9a-fA-F]+\.\.[0-9a-fA-F]+( \d+)?$")


@dataclass(frozen=True)
class HunkLine:
    """One line of a hunk: ``kind`` is ``+``, ``-`` or `` `` (context)."""

    kind: str
    text: str


@dataclass(frozen=True)
class Hunk:
    """One hunk: the function context git printed after ``@@`` and its lines."""

    section_header: str
    lines: tuple[HunkLine, ...]


@dataclass(frozen=True)
class ChangedFile:
    """One file of a patch. ``old_path`` is ``None`` for a new file, ``new_path`` for a deleted one."""

    old_path: str | None
    new_path: str | None
    hunks: tuple[Hunk, ...]
    binary: bool

    @property
    def path(self) -> str:
        """The path after the change (before it, for a deleted file)."""
        path = self.new_path if self.new_path is not None else self.old_path
        assert path is not None  # a file has at least one side
        return path

    @cached_property  # read by every check of every item: built once per file
    def paths(self) -> tuple[str, ...]:
        """Both sides' paths (one for a plain edit, two for a rename)."""
        return tuple(dict.fromkeys(p for p in (self.old_path, self.new_path) if p is not None))

    @property
    def is_new(self) -> bool:
        """The patch creates this file."""
        return self.old_path is None

    @property
    def is_deleted(self) -> bool:
        """The patch deletes this file."""
        return self.new_path is None

    @property
    def is_rename(self) -> bool:
        """The patch moves this file."""
        return (
            self.old_path is not None
            and self.new_path is not None
            and self.old_path != self.new_path
        )

    @cached_property  # read by every check of every item: built once per file
    def added(self) -> tuple[str, ...]:
        """Added lines, without the ``+`` and the line end."""
        return tuple(ln.text for h in self.hunks for ln in h.lines if ln.kind == "+")

    @cached_property  # read by every check of every item: built once per file
    def removed(self) -> tuple[str, ...]:
        """Removed lines, without the ``-`` and the line end."""
        return tuple(ln.text for h in self.hunks for ln in h.lines if ln.kind == "-")

    @cached_property  # read by the explorer, the checks and the content features: built once
    def chains(self) -> tuple[Chain, ...]:
        """:func:`enclosing_chains` of this file."""
        return _chains(self)


@dataclass(frozen=True)
class ParsedPatch:
    """A whole patch: its files in order."""

    files: tuple[ChangedFile, ...]

    @property
    def is_empty(self) -> bool:
        """No file is changed."""
        return not self.files

    @property
    def changed_lines(self) -> int:
        """Added plus removed lines over all files."""
        return sum(len(f.added) + len(f.removed) for f in self.files)


def is_empty_patch(text: str | None) -> bool:
    """True for a patch that is missing or only white space."""
    return text is None or not text.strip()


def normalize_patch(text: str) -> str:
    """The patch with CRLF as LF, ``index`` lines dropped and trailing white space stripped per line.

    Two candidates whose normalised patches are equal make the same change.
    """
    lines = text.replace("\r\n", "\n").split("\n")
    kept = [ln.rstrip() for ln in lines if not _INDEX_LINE.match(ln)]
    return "\n".join(kept).strip("\n") + "\n" if any(kept) else ""


def patch_hash(text: str) -> str:
    """sha256 of the normalised patch: the identity of a change, never its content (a patch that is not
    valid text hashes too: its lone surrogates are kept as they are)."""
    return "sha256:" + hashlib.sha256(utf8_bytes(normalize_patch(text))).hexdigest()


def unquote_path(path: str) -> str:
    """A path as git printed it in a diff header, its C-quoting undone."""
    if len(path) >= 2 and path[0] == '"' and path[-1] == '"':
        # git C-quotes unusual paths: backslash escapes and octal bytes of UTF-8.
        raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        try:
            return raw.encode("latin-1").decode("utf-8")
        except (UnicodeEncodeError, UnicodeDecodeError):
            return raw
    return path


def _side(path: str | None, prefix: str) -> str | None:
    if path is None:
        return None
    path = unquote_path(path.strip())
    if path == _DEV_NULL or path == "":
        return None
    if path.startswith(prefix):
        path = path[len(prefix) :]
    return path


@lru_cache(maxsize=256)
def parse_patch(text: str) -> ParsedPatch:
    """Parse a unified diff. Empty text is the empty patch; anything else that is not a diff raises.

    Raises:
        PatchParseError: the text is not a unified diff, or a hunk is malformed.
    """
    if is_empty_patch(text):
        return ParsedPatch(files=())
    normalized = text.replace("\r\n", "\n")
    if not normalized.endswith("\n"):
        normalized += "\n"
    try:
        patch_set = PatchSet(normalized)
    except UnidiffParseError as exc:
        raise PatchParseError(f"not a valid unified diff: {exc}") from exc
    except (ValueError, IndexError, AssertionError) as exc:  # unidiff's own unguarded corners
        raise PatchParseError(f"not a valid unified diff: {exc}") from exc
    if len(patch_set) == 0:
        raise PatchParseError("no file header ('--- a/...', '+++ b/...' or 'diff --git') found")
    files: list[ChangedFile] = []
    for pf in patch_set:
        old = _side(pf.source_file, "a/")
        new = _side(pf.target_file, "b/")
        if old is None and new is None:
            raise PatchParseError("a file entry has neither an old nor a new path")
        hunks = tuple(
            Hunk(
                section_header=(h.section_header or "").strip(),
                lines=tuple(
                    HunkLine(ln.line_type, ln.value.rstrip("\n"))
                    for ln in h
                    if ln.line_type in ("+", "-", " ")
                ),
            )
            for h in pf
        )
        files.append(ChangedFile(old, new, hunks, bool(pf.is_binary_file)))
    return ParsedPatch(files=tuple(files))


# --------------------------------------------------------------------------- structure

_DEF_RE = re.compile(r"^(\s*)(?:async\s+)?(?:def|class)\s+([A-Za-z_]\w*)")


Chain = tuple[tuple[str, int | None], ...]
"""The definitions around one changed line, outermost first: ``(name, indent)``, indent ``None`` for
the hunk's function context."""


def enclosing_chains(f: ChangedFile) -> tuple[Chain, ...]:
    """For each changed line, the defs/classes visibly enclosing it, outermost first, with indents.

    Sources, all from the diff alone: the hunk's function context (what git prints after ``@@``;
    its indentation is unknown), ``def``/``class`` lines seen earlier in the hunk at a smaller
    indentation, and the changed line itself when it is a ``def``/``class`` line. Computed once per
    file (the explorer, the checks and the content features all read it).
    """
    return f.chains


def _chains(f: ChangedFile) -> tuple[Chain, ...]:
    out: list[Chain] = []
    for hunk in f.hunks:
        header = _DEF_RE.match(hunk.section_header)
        outer: list[tuple[str, int | None]] = [(header.group(2), None)] if header else []
        stack: list[tuple[str, int | None]] = []
        for line in hunk.lines:
            text = line.text
            stripped = text.lstrip()
            if not stripped:
                continue
            indent = len(text) - len(stripped)
            if indent == 0:
                outer = []  # a top-level line: the hunk has left the header's definition
            if stack and stack[-1][1] is not None and stack[-1][1] >= indent:
                stack = [(n, i) for n, i in stack if i is not None and i < indent]  # close scopes
            m = _DEF_RE.match(text) if stripped[0] in "acd" else None
            if line.kind in "+-":
                out.append((*outer, *stack, (m.group(2), indent)) if m else (*outer, *stack))
            if m:
                stack.append((m.group(2), indent))
    return tuple(out)


def touches_symbol(files: Iterable[ChangedFile], symbol: str) -> bool:
    """Whether a changed line lies inside ``symbol`` (``name`` or ``Class.method``), as the diff shows.

    The last part must be a visible definition around a changed line (or the changed ``def`` line
    itself). Qualifiers must appear, in order, further out. When nothing further out is visible and
    the definition is indented (so it is nested in something the diff does not show), the
    qualifiers cannot be confirmed or refuted and the name alone decides.
    """
    *qualifiers, name = symbol.split(".")
    for f in files:
        for chain in enclosing_chains(f):
            names = [n for n, _ in chain]
            if name not in names:
                continue
            at = len(names) - 1 - names[::-1].index(name)
            outer = iter(names[:at])
            if all(q in outer for q in qualifiers):
                return True
            indent = chain[at][1]
            if at == 0 and (indent is None or indent > 0):
                return True  # nested in something invisible: qualifiers unknowable from the diff
    return False


_HUNK = re.compile(r"@@ -\d{1,10}(?:,(\d{1,10}))? \+\d{1,10}(?:,(\d{1,10}))? @@")
"""A hunk header; counts of more than ten digits are no hunk (git calls such a patch corrupt)."""


def walk_hunks(text: str) -> Iterator[tuple[str, str]]:
    """Each line of a diff (CRLF read as LF) with what it is to ``git apply``: ``removed``, ``added``
    or ``context`` inside a hunk, as many as its ``@@`` header counts; ``marker`` for ``\\ No newline
    at end of file``; ``outside`` for everything else (file headers, ``@@`` lines, a mail's text).

    So a removed line whose text starts with ``--`` (a SQL comment, a YAML separator) or an added one
    starting with ``++`` is a change, never a header, and nothing past what a hunk counts is a change.
    """
    old = new = 0  # lines of the current hunk still to come
    for line in text.replace("\r\n", "\n").split("\n"):
        if old > 0 or new > 0:
            tag = line[:1]
            if tag == "-" and old > 0:
                old -= 1
                yield "removed", line
                continue
            if tag == "+" and new > 0:
                new -= 1
                yield "added", line
                continue
            if tag in (" ", "") and old > 0 and new > 0:  # context (a blank one may lose its space)
                old, new = old - 1, new - 1
                yield "context", line
                continue
            if tag == "\\":
                yield "marker", line
                continue
            old = new = 0  # not a line this hunk holds: it is over
        hunk = _HUNK.match(line)
        if hunk is not None:
            old = 1 if hunk.group(1) is None else int(hunk.group(1))
            new = 1 if hunk.group(2) is None else int(hunk.group(2))
        yield "outside", line


def changed_lines(patch: str) -> list[str]:
    """The ``+``/``-`` lines of a diff's hunks, as :func:`walk_hunks` reads them: not the file headers,
    not the signature or commit message of a ``git format-patch`` mail, not a line past what a
    hunk's header counts. Text with no hunk (not a diff) has no changed lines."""
    return [line for kind, line in walk_hunks(patch) if kind in ("removed", "added")]


def outside_hunks(patch: str) -> list[str]:
    """The lines of a diff outside its hunks (headers, ``@@`` lines, a mail's text)."""
    return [line for kind, line in walk_hunks(patch) if kind == "outside"]
