"""The issue's examples, and the changed functions' own, as a probe's inputs.

Two sources (:mod:`agentic_rubrics.rank.probes` runs them on each candidate's tree):

1. **Inputs from the issue** (:func:`issue_snippets`): its interactive sessions (``>>>`` / ``...``
   lines, IPython's ``In [n]:`` / ``...:``) and its fenced code blocks that parse as Python, in order, at
   most :data:`MAX_SNIPPETS` of at most :data:`MAX_SNIPPET_CHARS` characters. The issue's own printed
   outputs are dropped: they are the reporter's, not the candidate's. Read in linear time, at most
   :data:`MAX_ISSUE_CHARS` characters.
2. **Inputs from the tree** (:func:`tree_snippets`): the docstring examples (``doctest``'s reading) of
   the definitions the pool's candidates change, as the base tree has them — the functions most
   candidates change first, at most :data:`MAX_TREE_FUNCTIONS` of them and :data:`MAX_EXAMPLES` examples
   each — each run in a copy of its module's namespace, as ``doctest`` runs it.
"""

from __future__ import annotations

import ast
import doctest
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from agentic_rubrics.exceptions import PatchParseError
from agentic_rubrics.patch import enclosing_chains, parse_patch
from agentic_rubrics.rubric.behaviour import program_file

MAX_SNIPPETS = 8
"""Snippets kept per issue (the first ones)."""
MAX_SNIPPET_CHARS = 4000
"""Characters of one snippet; a longer one is dropped."""
MAX_ISSUE_CHARS = 100_000
"""Characters of the issue read for examples."""
_OPEN = re.compile(r"^[ \t]*(`{3,}|~{3,})[ \t]*([\w+-]*)")
_PROMPT = re.compile(r"^[ \t]*(?:>>>|In \[\d+\]:)[ \t]?(.*)$")
_ANY_PROMPT = re.compile(r"^[ \t]*(?:>>>|In \[\d+\]:)", re.M)
_MORE = re.compile(r"^[ \t]*\.\.\.:?(?: (.*)|)$")
_CODE_LANGS = {"", "python", "py", "python3", "pycon", "ipython", "python-console"}


@dataclass(frozen=True)
class Snippet:
    """One example: ``session`` (statements joined by ``\\x00``, expressions shown, the issue's),
    ``block`` (a program, its printed output), or ``doctest`` (a session run in a copy of
    ``module``'s namespace)."""

    kind: str
    source: str
    module: str = ""


def _sessions(text: str) -> list[str]:
    """The statements of each interactive session in ``text``, one string per session (statements
    joined by ``\\x00``), outputs dropped. A session runs from a prompt line to the last prompt line
    before prose: a blank line whose next non-blank line is no prompt ends it."""
    lines = text.splitlines()
    following = [""] * (len(lines) + 1)  # each line's next non-blank line after it (linear)
    for n in range(len(lines) - 1, -1, -1):
        following[n] = (
            lines[n + 1] if n + 1 < len(lines) and lines[n + 1].strip() else following[n + 1]
        )
    found: list[list[str]] = []
    current: list[str] | None = None
    for n, line in enumerate(lines):
        if m := _PROMPT.match(line):
            if current is None:
                current = []
                found.append(current)
            current.append(m.group(1))
        elif current and (m := _MORE.match(line)):
            current[-1] += "\n" + (m.group(1) or "")
        elif current is not None and not line.strip() and not _PROMPT.match(following[n]):
            current = None
    statements = [[s for s in session if parses(s)] for session in found]
    return ["\x00".join(s) for s in statements if s]


def parses(source: str) -> bool:
    """Whether ``source`` is Python that parses (a parser that runs out of depth or memory: no)."""
    try:
        ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _pieces(text: str) -> list[tuple[str | None, str]]:
    """``text`` cut into prose (``None``) and fenced blocks (their language), in order. Linear: a
    fence with no closing line makes the rest prose."""
    lines = text.split("\n")
    out: list[tuple[str | None, str]] = []
    prose: list[str] = []
    n = 0
    while n < len(lines):
        m = _OPEN.match(lines[n])
        if m is None:
            prose.append(lines[n])
            n += 1
            continue
        end = next((j for j in range(n + 1, len(lines)) if _closes(lines[j], m.group(1))), None)
        if end is None:
            prose += lines[n:]
            break
        out += [
            (None, "\n".join(prose)),
            (m.group(2).lower(), "\n".join(lines[n + 1 : end]) + "\n"),
        ]
        prose, n = [], end + 1
    return [*out, (None, "\n".join(prose))]


def _closes(line: str, marker: str) -> bool:
    """Whether ``line`` closes a fence opened with ``marker`` (the same character, as many or more)."""
    bare = line.strip()
    return len(bare) >= len(marker) and bare == marker[0] * len(bare)


def issue_snippets(text: str) -> list[Snippet]:
    """The issue's examples, in order (see the module's docstring); none when it shows none. Only
    the first :data:`MAX_ISSUE_CHARS` characters are read."""
    text = text[:MAX_ISSUE_CHARS].replace("\r\n", "\n").replace("\r", "\n")
    found: list[Snippet] = []
    for lang, body in _pieces(text):
        if lang is None or (lang in _CODE_LANGS and _ANY_PROMPT.search(body)):
            found += [Snippet("session", s) for s in _sessions(body)]
        elif lang in _CODE_LANGS and body.strip() and parses(body):
            found.append(Snippet("block", body))
    return list(dict.fromkeys(s for s in found if len(s.source) <= MAX_SNIPPET_CHARS))[
        :MAX_SNIPPETS
    ]


MAX_TREE_FUNCTIONS = 6
"""Changed definitions whose docstring examples are kept per pool."""
MAX_EXAMPLES = 30
"""Examples kept of one docstring."""
MAX_FILE_BYTES = 2_000_000
"""A base file larger than this is not read for examples."""
_SKIP = re.compile(r"#\s*doctest:.*\+SKIP")


def _module(path: str) -> str | None:
    """``pkg/sub/mod.py`` -> ``pkg.sub.mod`` (``src/`` layouts too; ``None``: not importable)."""
    parts = path.removesuffix(".py").split("/")
    if parts and parts[0] == "src":
        parts = parts[1:]
    if parts and parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) if parts and all(p.isidentifier() for p in parts) else None


MAX_LOOKUPS = 50
"""Changed definitions looked up per pool (the ones most candidates change first)."""


def _definitions(tree: Path, path: str) -> list[tuple[tuple[str, ...], str | None]] | None:
    """Every definition of the base file ``path`` of ``tree`` (its name chain, outermost first)
    with its docstring; ``None``: not a regular file inside the tree, too big, or not Python."""
    file = tree / path
    try:
        if file.is_symlink() or not file.resolve().is_relative_to(tree.resolve()):
            return None
        if not file.is_file() or file.stat().st_size > MAX_FILE_BYTES:
            return None
        module = ast.parse(file.read_bytes())
    except (OSError, SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    found: list[tuple[tuple[str, ...], str | None]] = []
    stack: list[tuple[tuple[str, ...], ast.AST]] = [((), module)]
    while stack:
        outer, node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                chain = (*outer, child.name)
                found.append((chain, ast.get_docstring(child, clean=True)))
                stack.append((chain, child))
    return found


def _docstring(
    defs: list[tuple[tuple[str, ...], str | None]], names: tuple[str, ...]
) -> str | None:
    """The docstring of the definition ``names`` (the innermost decides; a chain that ends as
    ``names`` does is preferred, then the outermost)."""
    found = [(chain, doc) for chain, doc in defs if chain[-1] == names[-1]]
    found.sort(key=lambda f: (f[0][-len(names) :] != names, len(f[0])))
    return found[0][1] if found else None


def tree_snippets(tree: Path, patches: Iterable[str]) -> list[Snippet]:
    """The docstring examples of the definitions the candidates change (see the module's
    docstring), as the base tree has them; a patch that does not parse adds none. Each file is read
    once, at most :data:`MAX_LOOKUPS` definitions looked up."""
    counts: Counter[tuple[str, tuple[str, ...]]] = Counter()
    for patch in set(patches):
        try:
            files = parse_patch(patch).files
        except PatchParseError:
            continue
        changed = {
            (f.old_path, tuple(name for name, _ in chain))
            for f in files
            if f.old_path and f.old_path.endswith(".py") and program_file(f.old_path)
            for chain in enclosing_chains(f)
            if chain
        }
        counts.update(changed)
    files_read: dict[str, list[tuple[tuple[str, ...], str | None]] | None] = {}
    out: list[Snippet] = []
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:MAX_LOOKUPS]
    for (path, names), _ in ranked:
        module = _module(path)
        if module is None:
            continue
        if path not in files_read:
            files_read[path] = _definitions(tree, path)
        doc = _docstring(files_read[path] or [], names)
        if not doc:
            continue
        try:
            examples = doctest.DocTestParser().get_examples(doc)
        except ValueError:
            continue
        statements = [e.source.rstrip("\n") for e in examples if not _SKIP.search(e.source)]
        source = "\x00".join(statements[:MAX_EXAMPLES])
        if statements and len(source) <= MAX_SNIPPET_CHARS:
            out.append(Snippet("doctest", source, module))
        if len(out) == MAX_TREE_FUNCTIONS:
            break
    return out


def packages(tree: Path, snippets: Sequence[Snippet]) -> list[tuple[str, bool]]:
    """The tree's top-level packages (a folder with ``__init__.py`` at its root, ``src/`` layouts
    too) to import before the snippets, each with whether the issue's snippets name it (then the
    examples cannot run without it); when they name none, every one (at most three), not needed.
    A doctest snippet's module is imported by that snippet alone."""
    issue = " ".join(s.source for s in snippets if s.kind != "doctest")
    words = set(re.findall(r"\b[A-Za-z_]\w*\b", issue))
    roots = [tree, tree / "src"]
    found = sorted(
        d.name
        for root in roots
        if root.is_dir()
        for d in root.iterdir()
        if d.is_dir()
        and d.name.isidentifier()
        and (d / "__init__.py").is_file()
        and d.name not in ("tests", "test", "doc", "docs")
    )
    named = [(n, True) for n in found if n in words]
    return named or [(n, False) for n in found[:3]]
