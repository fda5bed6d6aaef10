"""Files whose name is a word of the issue: "JUnit XML" -> junitxml.py, "blueprint" -> blueprints.py.

A weak signal that ranks files when an issue names no code at all (a feature request in prose). It is
not a lead (nothing is recorded as found or not): common words, generic file names (``utils``,
``core``) and test, documentation or vendored files are left out, and a name shared by several files
gives each a share.
"""

from __future__ import annotations

from collections import defaultdict

from agentic_rubrics.explore.codeindex import is_low_prior
from agentic_rubrics.patch import is_test_path

GENERIC_STEMS = frozenset(
    {
        "__init__",
        "core",
        "utils",
        "util",
        "base",
        "common",
        "main",
        "compat",
        "misc",
        "helpers",
        "this",
        "that",
        "with",
        "from",
        "have",
        "when",
        "what",
        "should",
        "would",
        "there",
        "which",
        "will",
        "test",
        "tests",
        "example",
        "examples",
        "file",
        "files",
        "some",
        "more",
        "like",
        "also",
        "only",
        "then",
        "than",
        "used",
        "using",
        "work",
        "works",
        "data",
        "time",
        "case",
        "cases",
        "error",
        "errors",
        "value",
        "values",
        "function",
        "functions",
        "class",
        "method",
        "methods",
        "return",
        "returns",
        "result",
        "results",
        "output",
        "input",
        "print",
        "code",
        "line",
        "lines",
        "name",
        "names",
        "type",
        "types",
        "list",
        "string",
        "number",
        "same",
        "first",
        "second",
        "other",
        "expected",
        "version",
        "issue",
        "python",
        "following",
        "instead",
        "before",
        "after",
        "because",
        "make",
        "does",
        "into",
        "each",
        "just",
        "here",
        "thing",
        "things",
        "call",
        "calls",
        "object",
        "objects",
        "module",
        "modules",
        "option",
        "options",
        "default",
        "defaults",
        "check",
        "checks",
        "setup",
        "config",
        "exceptions",
    }
)


def file_name_matches(files: list[str], words: dict[str, int]) -> dict[str, float]:
    """Points for each file whose name is a word of the issue (see the module doc)."""
    by_stem: dict[str, list[str]] = defaultdict(list)
    out: dict[str, float] = defaultdict(float)
    for path in files:
        if is_test_path(path) or is_low_prior(path):
            continue
        stem = path.rsplit("/", 1)[-1].removesuffix(".py").lower().strip("_")
        if len(stem) >= 4 and stem not in GENERIC_STEMS:
            by_stem[stem].append(path)
    for stem, paths in by_stem.items():
        variants = (stem, stem + "s", stem + "r", stem.removesuffix("s"))
        count = max((words.get(v, 0) for v in variants), default=0)
        if not count:
            continue
        points = min(1.5, 0.5 * count) / len(paths)
        for path in paths:
            parent = path.rsplit("/", 2)[-2].lower() if "/" in path else ""
            bonus = 1.5 if parent and words.get(parent) else 1.0
            out[path] += points * bonus
    return dict(out)
