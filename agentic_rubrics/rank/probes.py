"""Outputs on the issue's own inputs: what each candidate's tree prints for the examples the issue shows.

Behaviour consensus (:mod:`agentic_rubrics.rank.consensus`) reads what a change does from its code;
where the task's tree imports in an environment, it can also read what the change *does*: the issue's
examples run on each candidate's tree, in the sandbox of the tests verifier (no network, bounded), and
candidates that print the same for every example agree.

1. **Inputs from the issue** (:func:`issue_snippets`): its interactive sessions (``>>>`` / ``...``
   lines, IPython's ``In [n]:`` / ``...:``) and its fenced code blocks that parse as Python, in order, at
   most :data:`MAX_SNIPPETS` of at most :data:`MAX_SNIPPET_CHARS` characters. The issue's own printed
   outputs are dropped: they are the reporter's, not the candidate's.
2. **One run per candidate** (:data:`PROBE_SOURCE`, standard library only): every snippet in order in
   one namespace (as a user pastes them into one session), each under its own alarm
   (:data:`SNIPPET_SECONDS`); a session's expressions recorded as the REPL shows them (``repr``), a
   block's printed output, an exception as its type and message. Memory addresses and the tree's path
   are blanked, ``PYTHONHASHSEED`` is fixed; each snippet's output is hashed: only hashes leave the
   sandbox (``PROBE <n> <hash>`` lines).
3. **The base tree runs the same way**; a snippet whose output is the same on every tree it ran on is
   not evidence, and a candidate's outputs are kept only when the base run gave an output for every
   snippet (otherwise the snippets did not run at all: an import the environment lacks).

What it is not: a test. No output is known to be right; consensus counts which candidates print the
same. Code under test runs in the probe's process and could print anything, as under every test
runner; only a candidate's own outputs can be forged that way, and it cannot see the others'.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAX_SNIPPETS = 8
"""Snippets kept per issue (the first ones)."""
MAX_SNIPPET_CHARS = 4000
"""Characters of one snippet; a longer one is dropped."""
MAX_ISSUE_CHARS = 100_000
"""Characters of the issue read for examples."""
SNIPPET_SECONDS = 10
"""Seconds one snippet may run (``signal.alarm``); past it its output is ``timeout``."""
_OPEN = re.compile(r"^[ \t]*(```|~~~)[ \t]*([\w+-]*)")
_PROMPT = re.compile(r"^[ \t]*(?:>>>|In \[\d+\]:)[ \t]?(.*)$")
_ANY_PROMPT = re.compile(r"^[ \t]*(?:>>>|In \[\d+\]:)", re.M)
_MORE = re.compile(r"^[ \t]*\.\.\.:?(?: (.*)|)$")
_CODE_LANGS = {"", "python", "py", "python3", "pycon", "ipython", "python-console"}


@dataclass(frozen=True)
class Snippet:
    """One example of the issue: ``session`` (prompt lines, expressions shown) or ``block``."""

    kind: str
    source: str


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
    statements = [[s for s in session if _parses(s)] for session in found]
    return ["\x00".join(s) for s in statements if s]


def _parses(source: str) -> bool:
    try:
        ast.parse(source)
    except (SyntaxError, ValueError):
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
        end = next((j for j in range(n + 1, len(lines)) if lines[j].strip() == m.group(1)), None)
        if end is None:
            prose += lines[n:]
            break
        out += [
            (None, "\n".join(prose)),
            (m.group(2).lower(), "\n".join(lines[n + 1 : end]) + "\n"),
        ]
        prose, n = [], end + 1
    return [*out, (None, "\n".join(prose))]


def issue_snippets(text: str) -> list[Snippet]:
    """The issue's examples, in order (see the module's docstring); none when it shows none. Only
    the first :data:`MAX_ISSUE_CHARS` characters are read."""
    text = text[:MAX_ISSUE_CHARS].replace("\r\n", "\n").replace("\r", "\n")
    found: list[Snippet] = []
    for lang, body in _pieces(text):
        if lang is None or (lang in _CODE_LANGS and _ANY_PROMPT.search(body)):
            found += [Snippet("session", s) for s in _sessions(body)]
        elif lang in _CODE_LANGS and body.strip() and _parses(body):
            found.append(Snippet("block", body))
    kept: list[Snippet] = []
    for snippet in found:
        if len(snippet.source) <= MAX_SNIPPET_CHARS and snippet not in kept:
            kept.append(snippet)
    return kept[:MAX_SNIPPETS]


PROBE_SOURCE = r'''
import ast, contextlib, hashlib, io, json, os, re, signal, sys
sys.path.insert(0, os.getcwd())
_out = os.fdopen(os.dup(1), "w")
_ROOT = os.getcwd()
_ADDR = re.compile(r"0x[0-9a-fA-F]{4,}")
def _norm(text):
    return _ADDR.sub("0x?", text.replace(_ROOT, "<tree>"))[-20000:]
class _Late(Exception):
    pass
def _alarm(*_):
    raise _Late()
signal.signal(signal.SIGALRM, _alarm)
def _run(kind, source, space):
    shown = []
    buf = io.StringIO()
    statements = source.split("\x00") if kind == "session" else [source]
    signal.alarm(SECONDS)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            for s in statements:
                tree = ast.parse(s)
                _fill(tree, space, _FOUND)
                if kind == "session" and len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
                    value = eval(compile(ast.Expression(tree.body[0].value), "<issue>", "eval"), space)
                    if value is not None:
                        shown.append(repr(value))
                else:
                    exec(compile(tree, "<issue>", "exec"), space)
    except _Late:
        shown.append("@timeout")
    except RecursionError:
        shown.append("@RecursionError")
    except BaseException as e:
        shown.append("@" + type(e).__name__ + ": " + str(e)[:500])
    finally:
        signal.alarm(0)
    return _norm(buf.getvalue() + "\n".join(shown))
def _fill(tree, space, found):
    """Names the statement reads that nothing defines, from the tree's packages (as ``from pkg import
    *`` would give them) or their ``abc`` module of example objects (``sympy.abc``)."""
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for name in sorted(names - set(space) - set(dir(__builtins__))):
        for module in found:
            for holder in (module, getattr(module, "abc", None)):
                if holder is not None and hasattr(holder, name):
                    space[name] = getattr(holder, name)
                    break
            if name in space:
                break
def main():
    given = json.loads(open(sys.argv[1], encoding="utf-8").read())
    space = {"__name__": "__main__"}
    found = []
    for name in given["preload"]:
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                found.append(__import__(name))
                try:
                    __import__(name + ".abc")
                except BaseException:
                    pass
        except BaseException:
            sys.exit(3)
    space.update({m.__name__: m for m in found})
    global _FOUND
    _FOUND = found
    snippets = given["snippets"]
    for n, (kind, source) in enumerate(snippets):
        try:
            text = _run(kind, source, space)
        except BaseException as e:
            text = "@probe " + type(e).__name__
        digest = hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]
        _out.write("PROBE %d %s\n" % (n, digest))
        _out.flush()
_FOUND = []
main()
'''
"""The probe the sandbox runs (argument: a JSON file of the snippets and the tree's packages,
:func:`packages`). The packages are imported first under their own names; a name a statement reads
that nothing defines comes from them (as ``from pkg import *`` gives it) or from their ``abc`` module
of example objects (``sympy.abc``), as an issue's example often assumes. A package that does not import
ends the probe without outputs: on the base tree, the examples cannot run in this environment."""

_LINE = re.compile(r"^PROBE ([0-9]+) ([0-9a-f]{16})$")


def probe_source() -> str:
    """:data:`PROBE_SOURCE` with its settings filled in."""
    return PROBE_SOURCE.replace("SECONDS", str(SNIPPET_SECONDS))


def read_outputs(lines: Sequence[str], count: int) -> tuple[str | None, ...]:
    """Each snippet's output hash from the probe's ``PROBE`` lines (``None``: it did not report;
    a snippet reported twice keeps neither)."""
    seen: dict[int, str | None] = {}
    for line in lines:
        if (m := _LINE.match(line.strip())) and int(m.group(1)) < count:
            n = int(m.group(1))
            seen[n] = m.group(2) if n not in seen else None
    return tuple(seen.get(n) for n in range(count))


def informative(
    outputs: Mapping[str, Sequence[str | None]], base: Sequence[str | None]
) -> list[int]:
    """The snippets whose output is not the same on every tree that gave one (the base's included)."""
    count = len(base)
    found = []
    for n in range(count):
        values = {o[n] for o in outputs.values() if len(o) == count and o[n] is not None}
        if base[n] is not None:
            values.add(base[n])
        if len(values) > 1:
            found.append(n)
    return found


def output_agreement(
    a: Sequence[str | None],
    b: Sequence[str | None],
    base: Sequence[str | None],
    over: Sequence[int],
) -> float | None:
    """How far ``a`` and ``b`` agree in what they change of the examples' outputs: of the snippets
    ``over`` on which either prints otherwise than the base tree, the fraction on which both print the
    same (``None``: neither changes any output there — printing what the base prints is no agreement
    on a fix)."""
    both = [n for n in over if a[n] is not None and b[n] is not None]
    changed = [n for n in both if a[n] != base[n] or b[n] != base[n]]
    if not changed:
        return None
    return sum(1 for n in changed if a[n] == b[n]) / len(changed)


@dataclass
class PoolOutputs:
    """What the probe printed on a pool's trees: per candidate (and the base tree) each snippet's
    output hash, or why there is none."""

    base: tuple[str | None, ...] | None
    """The base tree's outputs (``None``: the probe did not run there)."""
    outputs: dict[str, tuple[str | None, ...]] = field(default_factory=dict)
    """Candidate id -> its outputs (only candidates whose probe ran)."""
    reasons: dict[str, str] = field(default_factory=dict)
    """Candidate id (or ``base``) -> why the probe gave no outputs there."""
    cpu_s: float = 0.0
    """CPU-seconds of every run in the sandbox, together."""

    def usable(self) -> bool:
        """The base tree gave an output for every snippet (the snippets ran there at all)."""
        return bool(self.base) and all(h is not None for h in self.base or ())


def packages(tree: Path, snippets: Sequence[Snippet]) -> list[str]:
    """The tree's top-level packages (a folder with ``__init__.py`` at its root, ``src/`` layouts
    too) the snippets name; when they name none, every one (at most three)."""
    words = set(re.findall(r"\b[A-Za-z_]\w*\b", " ".join(s.source for s in snippets)))
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
    named = [n for n in found if n in words]
    return named or found[:3]


def _probe_lines(lines: str) -> dict[str, Any]:
    return {line.strip(): "passed" for line in lines.splitlines() if _LINE.match(line.strip())}


async def probe_pool(
    tree: Path,
    patches: Mapping[str, str],
    snippets: Sequence[Snippet],
    *,
    python: str,
    read_only: Mapping[str, Path] | None = None,
    timeout_s: float | None = None,
) -> PoolOutputs:
    """The probe on the base tree and on each candidate's tree (``tree``: a
    :class:`~agentic_rubrics.sandbox.testrun.PreparedTree`'s path, never modified), one sandbox run
    each, in order (the caller bounds how many pools run at once)."""
    from agentic_rubrics.sandbox.testrun import ExecLimits, RunCommand, run_tests
    from agentic_rubrics.test_infra import GRADED_FOLDER

    given = {
        "preload": packages(tree, snippets),
        "snippets": [[s.kind, s.source] for s in snippets],
    }
    files = {
        "probe.py": probe_source().encode(),
        "snippets.json": json.dumps(given).encode(),
    }
    folder = GRADED_FOLDER
    command = RunCommand(
        f"PYTHONHASHSEED=0 {python} -B {folder}/probe.py {folder}/snippets.json",
        lines=_LINE.pattern,
        parse=_probe_lines,
        not_loaded=lambda name: False,
    )
    limits = ExecLimits(timeout_s=timeout_s or SNIPPET_SECONDS * len(snippets) + 30.0)
    found = PoolOutputs(base=None)
    for cid, patch in [("base", ""), *patches.items()]:
        run = await run_tests(
            tree,
            patch,
            files,
            python=python,
            limits=limits,
            command=command,
            read_only=dict(read_only or {}),
            folder=folder,
        )
        found.cpu_s += run.cpu_s or 0.0
        if run.reason is not None or not run.outcomes:
            found.reasons[cid] = run.reason or "no_outputs"
            continue
        outputs = read_outputs(list(run.outcomes), len(snippets))
        if cid == "base":
            found.base = outputs
        else:
            found.outputs[cid] = outputs
    return found
