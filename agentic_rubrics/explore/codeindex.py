"""Python definitions of a repository, read through a sandbox and parsed with ``ast`` (never run).

The index is built once per task with two commands, whatever the repository's size: ``find`` lists the
Python files and one ``grep`` lists every ``def``/``class`` line and every upper-case assignment, with
its indentation (from which qualified names follow). Later lookups are in memory; only the few files
the explorer settles on are read and parsed (for line ranges and calls). Every grep runs with
``LC_ALL=C`` (byte matching: an order of magnitude faster than a UTF-8 locale on big trees), over
Python files only, with its output capped.
"""

from __future__ import annotations

import ast
import re
import shlex
from dataclasses import dataclass, field

from agentic_rubrics.protocols import Sandbox

LOW_PRIOR_PARTS = frozenset(
    {
        "doc",
        "docs",
        "examples",
        "example",
        "bench",
        "benchmarks",
        "asv_bench",
        "extern",
        "externals",
        "vendor",
        "_vendor",
        "vendored",
        "third_party",
        "packages",
        "_antlr",
        "scripts",
        "tools",
        "release",
        "ci",
        "build",
    }
)
"""Folder names whose code is rarely where an issue is fixed: documentation, examples, benchmarks,
vendored copies of other projects and generated parsers."""

MAX_INDEX_OUTPUT = 40_000_000
"""Characters of the definition listing read (far above the biggest SWE-bench repository's 4 MB)."""

_FIND = (
    "find . -type f -name '*.py' -not -path '*/.*' -not -path '*/node_modules/*' | LC_ALL=C sort"
)
_DEF_LINE = (
    r"^[[:space:]]*(async[[:space:]]+)?(def|class)[[:space:]]+[[:alnum:]_]+"
    r"|^[[:space:]]*[A-Z][A-Z0-9_]*[[:space:]]*(:[^=]*)?=[^=]"
)
_LISTED = re.compile(
    r"^(?P<indent>[ \t]*)(?:(?:async\s+)?(?P<kw>def|class)\s+(?P<name>\w+)|(?P<const>[A-Z][A-Z0-9_]*))"
)


def is_low_prior(path: str) -> bool:
    """Documentation, examples, benchmarks, vendored or generated code (see LOW_PRIOR_PARTS)."""
    return any(part in LOW_PRIOR_PARTS for part in path.split("/")[:-1])


@dataclass(frozen=True)
class Definition:
    """A class, function or upper-case constant with its qualified name and lines in one file."""

    path: str
    qualname: str
    kind: str  # "class", "function" or "constant"
    lineno: int
    end_lineno: int

    @property
    def name(self) -> str:
        """The last part of the qualified name."""
        return self.qualname.rsplit(".", 1)[-1]


@dataclass
class Step:
    """One tool call of an exploration (recorded in the trajectory, not in evaluation records)."""

    tool: str
    argument: str
    exit_code: int | None
    output_chars: int
    truncated: bool


@dataclass
class CodeIndex:
    """The repository's files and definitions; read files are parsed and kept."""

    sandbox: Sandbox
    files: list[str] = field(default_factory=list)
    listed: dict[str, list[Definition]] = field(default_factory=dict)
    """Every definition by name, from the one grep (line ranges unknown: ``end_lineno == lineno``)."""
    definitions: dict[str, list[Definition]] = field(default_factory=dict)
    """Definitions of the files parsed so far, with their real line ranges."""
    sources: dict[str, str] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    truncated: bool = False
    """The definition listing was cut (an enormous repository): some names are not indexed."""
    _file_set: set[str] = field(default_factory=set)

    async def sh(self, command: str, *, timeout: float = 60.0, max_output: int = 2_000_000) -> str:
        """Run a read-only command in the sandbox and record it."""
        result = await self.sandbox.run(command, timeout=timeout, max_output=max_output)
        self.steps.append(
            Step("bash", command, result.exit_code, len(result.output), result.truncated)
        )
        return result.output

    async def build(self) -> None:
        """List the Python files and every definition line: two commands, once per task."""
        out = await self.sh(_FIND, max_output=MAX_INDEX_OUTPUT)
        self.files = [
            ln[2:] if ln.startswith("./") else ln for ln in out.splitlines() if ln.strip()
        ]
        self._file_set = set(self.files)
        command = f"LC_ALL=C grep -rnoE --include='*.py' {shlex.quote(_DEF_LINE)} ."
        result = await self.sandbox.run(command, timeout=120.0, max_output=MAX_INDEX_OUTPUT)
        self.steps.append(
            Step("bash", command, result.exit_code, len(result.output), result.truncated)
        )
        self.truncated = result.truncated
        self.listed = {}
        stack: list[tuple[int, str, str]] = []
        current = ""
        for line in result.output.splitlines():
            path, _, rest = line.removeprefix("./").partition(":")
            number, _, text = rest.partition(":")
            m = _LISTED.match(text)
            if not number.isdigit() or m is None or path not in self._file_set:
                continue
            if path != current:
                stack, current = [], path
            indent = len(m.group("indent").expandtabs(8))
            stack = [s for s in stack if s[0] < indent]
            if stack and stack[-1][2] == "function":
                continue  # a local of a function: not addressable from outside
            name = m.group("name") or m.group("const")
            kind = {"def": "function", "class": "class"}.get(m.group("kw") or "", "constant")
            qual = ".".join([*(s[1] for s in stack), name])
            lineno = int(number)
            self.listed.setdefault(name, []).append(Definition(path, qual, kind, lineno, lineno))
            if kind != "constant":
                stack.append((indent, name, kind))

    async def list_files(self) -> list[str]:
        """Every Python file of the repository (hidden folders left out), sorted; builds the index."""
        if not self.files:
            await self.build()
        return self.files

    def lookup(self, name: str) -> list[Definition]:
        """Every listed definition with this last name part."""
        return self.listed.get(name, [])

    def has_file(self, path: str) -> bool:
        """Whether ``path`` is one of the repository's Python files."""
        return path in self._file_set

    async def grep_fixed(self, text: str, *, limit: int = 200) -> list[tuple[str, int]]:
        """(file, line) of each Python line containing ``text`` literally (at most ``limit``)."""
        found = await self.grep_literals([text], limit=limit)
        return found.get(text, [])

    async def grep_literals(
        self, texts: list[str], *, limit: int = 400
    ) -> dict[str, list[tuple[str, int]]]:
        """For each text, the (file, line) of Python lines holding it literally: one grep for all."""
        texts = [t for t in dict.fromkeys(texts) if t and "\n" not in t]
        if not texts:
            return {}
        patterns = " ".join(f"-e {shlex.quote(t)}" for t in texts)
        out = await self.sh(
            f"LC_ALL=C grep -rnoF --include='*.py' {patterns} . | head -{int(limit)}"
        )
        hits: dict[str, list[tuple[str, int]]] = {}
        for ln in out.splitlines():
            path, _, rest = ln.removeprefix("./").partition(":")
            number, _, text = rest.partition(":")
            if number.isdigit() and text in texts:
                hits.setdefault(text, []).append((path, int(number)))
        return hits

    async def parse(self, path: str) -> list[Definition]:
        """Definitions of one file (cached); a file that does not parse has none."""
        if path in self.definitions:
            return self.definitions[path]
        source = await self.sandbox.read_file(path, max_bytes=4_000_000)
        self.steps.append(Step("read_file", path, 0, len(source), False))
        self.sources[path] = source
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            self.definitions[path] = []
            return []
        defs: list[Definition] = []

        def visit(node: ast.AST, prefix: str, in_function: bool) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    qual = f"{prefix}.{child.name}" if prefix else child.name
                    kind = "class" if isinstance(child, ast.ClassDef) else "function"
                    end = child.end_lineno or child.lineno
                    start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    if not in_function:
                        defs.append(Definition(path, qual, kind, start, end))
                    visit(child, qual, in_function or kind == "function")
                elif isinstance(child, ast.Assign | ast.AnnAssign) and not in_function:
                    targets = child.targets if isinstance(child, ast.Assign) else [child.target]
                    for t in targets:
                        if isinstance(t, ast.Name) and t.id[:1].isupper() and t.id.isupper():
                            qual = f"{prefix}.{t.id}" if prefix else t.id
                            end = child.end_lineno or child.lineno
                            defs.append(Definition(path, qual, "constant", child.lineno, end))
                elif isinstance(child, ast.stmt) and not isinstance(child, ast.expr):
                    visit(child, prefix, in_function)  # if/try/with blocks at this level

        try:
            visit(tree, "", False)
        except RecursionError:
            defs = []
        self.definitions[path] = defs
        return defs

    def callees(self, d: Definition) -> list[str]:
        """Names a function calls or is decorated with (``f(...)``, ``obj.f(...)``, ``@f``), in order."""
        source = self.sources.get(d.path)
        if source is None or d.kind != "function":
            return []
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                and node.name == d.name
                and (min([node.lineno, *(x.lineno for x in node.decorator_list)]) == d.lineno)
            ):
                names: dict[str, None] = {}
                for dec in node.decorator_list:
                    target = dec.func if isinstance(dec, ast.Call) else dec
                    if isinstance(target, ast.Name | ast.Attribute):
                        names[target.id if isinstance(target, ast.Name) else target.attr] = None
                for sub in ast.walk(node):
                    if isinstance(sub, ast.Call):
                        f = sub.func
                        if isinstance(f, ast.Name):
                            names[f.id] = None
                        elif isinstance(f, ast.Attribute):
                            names[f.attr] = None
                return [n for n in names if n != d.name]
        return []

    def enclosing(self, path: str, line: int) -> Definition | None:
        """The innermost class or function of ``path`` containing ``line`` (the file must be parsed)."""
        inside = [
            d
            for d in self.definitions.get(path, [])
            if d.kind != "constant" and d.lineno <= line <= d.end_lineno
        ]
        return max(inside, key=lambda d: d.lineno) if inside else None

    def resolve(self, d: Definition) -> Definition | None:
        """The parsed counterpart (with its real line range) of a listed definition."""
        for x in self.definitions.get(d.path, []):
            if x.qualname == d.qualname and x.kind == d.kind:
                return x
        return None

    def module_file(self, dotted: str) -> tuple[str, list[str]] | None:
        """The file of the longest module prefix of a dotted name, and the attribute parts after it.

        ``pkg.mod.Class.method`` -> (``pkg/mod.py`` or ``src/pkg/mod.py`` ..., [Class, method]).
        Single-part names (a whole package) are not resolved: they say nothing about where to look.
        """
        parts = dotted.split(".")
        for n in range(len(parts), 1, -1):
            base = "/".join(parts[:n])
            for root in ("", "src/", "lib/"):
                for candidate in (f"{root}{base}.py", f"{root}{base}/__init__.py"):
                    if candidate in self._file_set:
                        return candidate, parts[n:]
        return None

    def match_path(self, printed: str) -> str | None:
        """The repository file a printed path (absolute, site-packages, relative) refers to."""
        printed = printed.replace("\\", "/").removeprefix("./")
        if printed in self._file_set:
            return printed
        best: str | None = None
        for f in self.files:
            if printed.endswith("/" + f) and (best is None or len(f) > len(best)):
                best = f
        if best is None:
            # an installed copy: .../site-packages/pkg/mod.py matches pkg/mod.py or src/pkg/mod.py
            parts = printed.split("/")
            for n in range(len(parts) - 1, 0, -1):
                tail = "/".join(parts[-n:])
                hits = [f for f in self.files if f == tail or f.endswith("/" + tail)]
                if len(hits) == 1 and n >= 2:
                    return hits[0]
        return best
