"""Python definitions of a repository, read through a sandbox and parsed with ``ast`` (never run)."""

from __future__ import annotations

import ast
import shlex
from dataclasses import dataclass, field

from agentic_rubrics import Sandbox
from agentic_rubrics.checks import path_matches

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


def is_test_path(path: str) -> bool:
    """A test file or a file under a tests folder."""
    return any(path_matches(path, g) for g in TEST_GLOBS)


@dataclass(frozen=True)
class Definition:
    """A class or function with its qualified name and line range in one file."""

    path: str
    qualname: str
    kind: str  # "class" or "function"
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
    """Files and definitions seen so far; grows as the explorer reads more of the repository."""

    sandbox: Sandbox
    files: list[str] = field(default_factory=list)
    definitions: dict[str, list[Definition]] = field(default_factory=dict)
    sources: dict[str, str] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)

    async def sh(self, command: str, *, timeout: float = 60.0, max_output: int = 2_000_000) -> str:
        """Run a read-only command in the sandbox and record it."""
        result = await self.sandbox.run(command, timeout=timeout, max_output=max_output)
        self.steps.append(
            Step("bash", command, result.exit_code, len(result.output), result.truncated)
        )
        return result.output

    async def list_files(self) -> list[str]:
        """Every Python file of the repository (hidden folders left out), sorted."""
        out = await self.sh(
            "find . -type f -name '*.py' -not -path '*/.*' -not -path '*/node_modules/*' | sort"
        )
        self.files = [
            ln[2:] if ln.startswith("./") else ln for ln in out.splitlines() if ln.strip()
        ]
        return self.files

    async def grep_definitions(self, names: list[str]) -> list[str]:
        """Files that define a function or class with one of these names."""
        if not names:
            return []
        pattern = r"^\s*(async\s+)?(def|class)\s+(" + "|".join(names) + r")\b"
        out = await self.sh(f"grep -rlE --include='*.py' {shlex.quote(pattern)} . | sort")
        return [ln.removeprefix("./") for ln in out.splitlines() if ln.strip()]

    async def grep_fixed(self, text: str) -> list[tuple[str, int]]:
        """(file, line) of each Python line containing ``text`` literally."""
        out = await self.sh(f"grep -rnF --include='*.py' -e {shlex.quote(text)} . | head -200")
        hits = []
        for ln in out.splitlines():
            path, _, rest = ln.removeprefix("./").partition(":")
            number, _, _ = rest.partition(":")
            if number.isdigit():
                hits.append((path, int(number)))
        return hits

    async def parse(self, path: str) -> list[Definition]:
        """Definitions of one file (cached); a file that does not parse has none."""
        if path in self.definitions:
            return self.definitions[path]
        source = await self.sandbox.read_file(path, max_bytes=2_000_000)
        self.steps.append(Step("read_file", path, 0, len(source), False))
        self.sources[path] = source
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
            self.definitions[path] = []
            return []
        defs: list[Definition] = []

        def visit(node: ast.AST, prefix: str) -> None:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                    qual = f"{prefix}.{child.name}" if prefix else child.name
                    kind = "class" if isinstance(child, ast.ClassDef) else "function"
                    end = child.end_lineno or child.lineno
                    start = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                    defs.append(Definition(path, qual, kind, start, end))
                    visit(child, qual)

        visit(tree, "")
        self.definitions[path] = defs
        return defs

    def callees(self, d: Definition) -> list[str]:
        """Names a function calls or is decorated with (``f(...)``, ``obj.f(...)``, ``@f``), in order."""
        source = self.sources.get(d.path)
        if source is None or d.kind != "function":
            return []
        try:
            tree = ast.parse(source)
        except (SyntaxError, ValueError):
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
        """The innermost definition of ``path`` containing ``line`` (the file must be parsed)."""
        inside = [d for d in self.definitions.get(path, []) if d.lineno <= line <= d.end_lineno]
        return max(inside, key=lambda d: d.lineno) if inside else None

    def match_path(self, printed: str) -> str | None:
        """The repository file a printed path (absolute, site-packages, relative) refers to."""
        printed = printed.replace("\\", "/")
        best: str | None = None
        for f in self.files:
            if (printed == f or printed.endswith("/" + f)) and (best is None or len(f) > len(best)):
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
