"""Outputs on the issue's own inputs: what each candidate's tree prints for the examples the issue shows.

Behaviour consensus (:mod:`agentic_rubrics.rank.consensus`) reads what a change does from its code;
where the task's tree imports in an environment, it can also read what the change *does*: the issue's
examples run on each candidate's tree, in the sandbox of the tests verifier (no network, bounded), and
candidates that print the same for every example agree.

1. **Inputs** (:mod:`agentic_rubrics.rank.probe_inputs`): the issue's examples and the changed
   definitions' own docstring examples.
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

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.rank.probe_inputs import Snippet, packages

SNIPPET_SECONDS = 10
"""Seconds one snippet may run (``signal.alarm``); past it its output is ``timeout``."""
PROBE_SOURCE = r'''
import ast, contextlib, hashlib, importlib, io, json, os, re, signal, sys
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
def _statement(kind, s, space, shown):
    tree = ast.parse(s)
    _fill(tree, space, _FOUND)
    if kind != "block" and len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        value = eval(compile(ast.Expression(tree.body[0].value), "<example>", "eval"), space)
        if value is not None:
            shown.append(repr(value))
    else:
        exec(compile(tree, "<example>", "exec"), space)
def _run(kind, source, space):
    shown = []
    buf = io.StringIO()
    statements = [source] if kind == "block" else source.split("\x00")
    signal.alarm(SECONDS)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            for s in statements:
                try:
                    _statement(kind, s, space, shown)
                except _Late:
                    raise
                except RecursionError:
                    shown.append("@RecursionError")
                except BaseException as e:
                    shown.append("@" + type(e).__name__ + ": " + str(e)[:500])
    except _Late:
        shown.append("@timeout")
    finally:
        signal.alarm(0)
    return _norm(buf.getvalue() + "\n".join(shown))
def _namespace(kind, module, space):
    """The namespace a snippet runs in: the session's, or a copy of its module's (doctest's way)."""
    if kind != "doctest":
        return space
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        return dict(vars(importlib.import_module(module)))
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
    for n, (kind, source, module) in enumerate(snippets):
        try:
            text = _run(kind, source, _namespace(kind, module, space))
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

    if not snippets:
        return PoolOutputs(base=None, reasons={"base": "no_examples"})

    given = {
        "preload": packages(tree, snippets),
        "snippets": [[s.kind, s.source, s.module] for s in snippets],
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
