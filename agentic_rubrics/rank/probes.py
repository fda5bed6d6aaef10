"""Outputs on examples: what each candidate's tree prints for the issue's examples and the changed
definitions' own.

Behaviour consensus (:mod:`agentic_rubrics.rank.consensus`) reads what a change does from its code;
where the task's tree imports in an environment, it can also read what the change *does*: examples run
on each candidate's tree, in the sandbox of the tests verifier (no network, bounded), and candidates
that print the same agree.

1. **Inputs** (:mod:`agentic_rubrics.rank.probe_inputs`): the issue's examples and the changed
   definitions' own docstring examples.
2. **One run per candidate** (:data:`PROBE_SOURCE`, standard library only): a watchdog forks the
   runner and is the only writer of the log; the runner runs the snippets in order (the issue's in
   one namespace, as a user pastes them into one session; a docstring's in a copy of its module's),
   each under its own alarm (:data:`SNIPPET_SECONDS`), and is killed :data:`GRACE_SECONDS` past an
   alarm it caught; a statement's value recorded as the REPL shows it (``repr``), a block's printed
   output, an exception as its type and message. Memory addresses and the tree's path are blanked,
   ``PYTHONHASHSEED`` is fixed; each snippet's output is hashed: only hashes leave the sandbox
   (``PROBE <n> <hash>`` lines, then ``PROBE_END``).
3. **The base tree runs twice**: a snippet the two runs print differently on is :data:`UNSTABLE` on
   every tree; one that prints the same on every tree is no evidence either; and no outputs count
   unless the base gave one for every snippet (otherwise they did not run at all: an import the
   environment lacks).

What it is not: a test. No output is known to be right; consensus counts which candidates print the
same. Code under test runs in the runner's process: code written against the probe could fake its own
outputs, as it could pass a test, but it cannot see the others'.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from agentic_rubrics.rank.probe_inputs import Snippet, packages

SNIPPET_SECONDS = 10
"""Seconds one snippet may run (``signal.alarm``); past it its output is ``@timeout``."""
GRACE_SECONDS = 5
"""Seconds after a snippet's alarm before the watchdog kills the runner (an alarm caught)."""
START_SECONDS = 60
"""Seconds the runner may take to import the issue's packages before the first snippet."""
PROBE_SOURCE = r"""
import ast, contextlib, hashlib, importlib, io, json, os, re, select, signal, sys, time
sys.path.insert(0, os.getcwd())
_ROOT = os.getcwd()
_ADDR = re.compile(r"0x[0-9a-fA-F]{4,}")
_FOUND = []
def _norm(text):
    return _ADDR.sub("0x?", text.replace(_ROOT, "<tree>"))[-20000:]
class _Late(BaseException):
    pass
def _alarm(*_):
    raise _Late()
def _fill(tree, space):
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    for name in sorted(names - set(space) - set(dir(__builtins__))):
        for module in _FOUND:
            for holder in (module, getattr(module, "abc", None)):
                if holder is not None and hasattr(holder, name):
                    space[name] = getattr(holder, name)
                    break
            if name in space:
                break
def _statement(kind, s, space, shown):
    tree = ast.parse(s)
    _fill(tree, space)
    if kind != "block" and len(tree.body) == 1 and isinstance(tree.body[0], ast.Expr):
        value = eval(compile(ast.Expression(tree.body[0].value), "<example>", "eval"), space)
        if value is not None:
            shown.append(repr(value))
    else:
        exec(compile(tree, "<example>", "exec"), space)
def _run(kind, source, module, space):
    shown = []
    buf = io.StringIO()
    statements = [source] if kind == "block" else source.split("\x00")
    signal.alarm(SECONDS)
    try:
        with contextlib.redirect_stdout(buf), contextlib.redirect_stderr(io.StringIO()):
            if kind == "doctest":
                space = dict(vars(importlib.import_module(module)))
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
    except BaseException as e:
        shown.append("@" + type(e).__name__)
    finally:
        signal.alarm(0)
    return _norm(buf.getvalue() + "\n".join(shown))
def _child(given, w):
    signal.signal(signal.SIGALRM, _alarm)
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.dup2(null, 2)
    pipe = os.fdopen(w, "w")
    for name, needed in given["preload"]:
        try:
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                _FOUND.append(__import__(name))
                with contextlib.suppress(BaseException):
                    __import__(name + ".abc")
        except BaseException:
            if needed:
                os._exit(3)
    space = {"__name__": "__main__", **{m.__name__: m for m in _FOUND}}
    pipe.write("ready\n")
    pipe.flush()
    for n, (kind, source, module) in enumerate(given["snippets"]):
        text = _run(kind, source, module, space)
        pipe.write("%d %s\n" % (n, hashlib.sha256(text.encode("utf-8", "replace")).hexdigest()[:16]))
        pipe.flush()
    os._exit(0)
def main():
    given = json.loads(open(sys.argv[1], encoding="utf-8").read())
    count = len(given["snippets"])
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        _child(given, w)
    os.close(w)
    late = hashlib.sha256(b"@timeout").hexdigest()[:16]
    got, buf, done = {}, b"", 0
    deadline = time.monotonic() + START
    while done < count:
        left = deadline - time.monotonic()
        ready = select.select([r], [], [], max(left, 0))[0] if left > 0 else []
        if not ready:
            os.kill(pid, signal.SIGKILL)
            got.setdefault(done, []).append(late)
            break
        chunk = os.read(r, 65536)
        if not chunk:
            break
        buf += chunk
        while b"\n" in buf:
            line, buf = buf.split(b"\n", 1)
            parts = line.decode("ascii", "replace").split(" ")
            if parts == ["ready"]:
                deadline = time.monotonic() + SECONDS + GRACE
            elif len(parts) == 2 and parts[0].isdigit() and int(parts[0]) < count:
                got.setdefault(int(parts[0]), []).append(parts[1])
                done = max(done, int(parts[0]) + 1)
                deadline = time.monotonic() + SECONDS + GRACE
    with contextlib.suppress(BaseException):
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 3:
        sys.exit(3)
    for n in range(count):
        if len(got.get(n, [])) == 1:
            sys.stdout.write("PROBE %d %s\n" % (n, got[n][0]))
    sys.stdout.write("PROBE_END %d\n" % len(got))
main()
"""
"""The probe the sandbox runs (argument: a JSON file of the snippets and the packages to import
first, :func:`~agentic_rubrics.rank.probe_inputs.packages`). A watchdog process forks the one that runs
the snippets, in order, and reads each snippet's hash from a pipe: a snippet that runs past its
alarm (caught or not) is killed after :data:`GRACE_SECONDS` more, recorded ``@timeout``, and the ones
after it get no output; a snippet reported twice keeps neither. Only the watchdog writes to the log.
The runner's output and errors go nowhere. The packages the issue names are imported first under their
own names (one that does not import ends the run without outputs: the examples cannot run in this
environment); a name a statement reads that nothing defines comes from them (as ``from pkg import *``
gives it) or from their ``abc`` module of example objects (``sympy.abc``); a doctest snippet runs in
a copy of its module's namespace, imported under the snippet's alarm."""

_LINE = re.compile(r"^PROBE ([0-9]+) ([0-9a-f]{16})$")
_LINES = r"^PROBE( [0-9]+ [0-9a-f]{16}|_END [0-9]+)$"
"""The log's lines the run keeps: each snippet's hash, and the watchdog's last line."""
MISSING = "missing"
"""A candidate's output on an example where its run gave none, once the base's count
(:func:`agentic_rubrics.rank.consensus._voter_outputs`): it agrees with nothing, itself included."""
UNSTABLE = "unstable"
"""A snippet's output where the base tree's two runs printed differently (no evidence anywhere)."""


def probe_source() -> str:
    """:data:`PROBE_SOURCE` with its settings filled in."""
    return (
        PROBE_SOURCE.replace("GRACE", str(GRACE_SECONDS))
        .replace("START", str(START_SECONDS))
        .replace("SECONDS", str(SNIPPET_SECONDS))
    )


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
    on a fix); two :data:`MISSING` outputs do not agree (two crashes are not one fix)."""
    both = [n for n in over if a[n] is not None and b[n] is not None]
    changed = [n for n in both if a[n] != base[n] or b[n] != base[n]]
    if not changed:
        return None
    return sum(1 for n in changed if a[n] == b[n] != MISSING) / len(changed)


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
    kept = re.compile(_LINES)
    return {line.strip(): "passed" for line in lines.splitlines() if kept.match(line.strip())}


async def probe_pool(
    tree: Path,
    patches: Mapping[str, str],
    snippets: Sequence[Snippet],
    *,
    python: str,
    read_only: Mapping[str, Path] | None = None,
    limits: Any = None,
    slot: Callable[[], AbstractAsyncContextManager[Any]] | None = None,
) -> PoolOutputs:
    """The probe on the base tree (twice: a snippet whose output differs between the two runs is
    no evidence) and on each candidate's tree (``tree``: a
    :class:`~agentic_rubrics.sandbox.testrun.PreparedTree`'s path, never modified), one sandbox run
    each, in order, each in one of the caller's sandbox ``slot``\\s; ``limits``: the sandbox's
    (:class:`~agentic_rubrics.sandbox.testrun.ExecLimits`; its timeout is the probe's own)."""
    from agentic_rubrics.sandbox.testrun import ExecLimits, RunCommand, run_tests
    from agentic_rubrics.test_infra import GRADED_FOLDER

    if not snippets:
        return PoolOutputs(base=None, reasons={"base": "no_examples"})
    given = {
        "preload": packages(tree, snippets),
        "snippets": [[s.kind, s.source, s.module] for s in snippets],
    }
    files = {"probe.py": probe_source().encode(), "snippets.json": json.dumps(given).encode()}
    folder = GRADED_FOLDER
    command = RunCommand(
        f"PYTHONHASHSEED=0 {python} -B {folder}/probe.py {folder}/snippets.json",
        lines=_LINES,
        parse=_probe_lines,
        not_loaded=lambda name: False,
    )
    bound = (SNIPPET_SECONDS + GRACE_SECONDS) * len(snippets) + START_SECONDS + 30.0
    limits = replace(limits or ExecLimits(), timeout_s=bound)
    found = PoolOutputs(base=None)
    runs: dict[str, tuple[str | None, ...]] = {}
    for cid, patch in [("base", ""), ("base-again", ""), *patches.items()]:
        async with slot() if slot is not None else contextlib.nullcontext():
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
        if run.reason is not None or not any(k.startswith("PROBE_END") for k in run.outcomes):
            found.reasons[cid] = run.reason or "no_outputs"
        else:
            runs[cid] = read_outputs(list(run.outcomes), len(snippets))
    return _stable(found, runs)


def _stable(found: PoolOutputs, runs: dict[str, tuple[str | None, ...]]) -> PoolOutputs:
    """``found`` with the base's outputs from its two runs: a snippet they differ on is
    :data:`UNSTABLE` on every tree (no evidence); the candidates' outputs beside."""
    base, again = runs.pop("base", None), runs.pop("base-again", None)
    if base is not None and again is not None:
        stable = [a if a == b else UNSTABLE for a, b in zip(base, again, strict=True)]
        found.base = tuple(stable)
        found.outputs = {
            c: tuple(UNSTABLE if s == UNSTABLE else o for o, s in zip(out, stable, strict=True))
            for c, out in runs.items()
        }
    found.reasons.pop("base-again", None)
    if found.base is None and "base" not in found.reasons:
        found.reasons["base"] = "base_runs_differ_in_whether_they_ran"
    return found
