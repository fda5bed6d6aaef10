"""What an issue names: file paths, traceback frames, symbols, exception types and error messages.

Pure text rules, no model. Everything found here is a *lead*; explorers confirm leads against the
repository (or, with no repository, against the candidates' own diffs) before writing them down.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

_FRAME = re.compile(r'File "(?P<path>[^"]+)", line (?P<line>\d+), in (?P<func>[\w<>.]+)')
_PATH = re.compile(
    r"(?<![\w/.-])((?:[\w.-]+/)*[\w.-]+\.(?:py|pyx|pyi|cfg|toml|ini|txt|rst|md|json|yaml|yml))\b"
)
_CODE_SPAN = re.compile(r"`([^`\n]{1,200})`")
_FENCE = re.compile(r"```[^\n]*\n(.*?)```", re.S)
_DOTTED = re.compile(r"\b([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)\b")
_CALL = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_CAMEL = re.compile(r"\b([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z]{2,}[a-z]\w*)\b")
_SNAKE = re.compile(r"\b([a-z][a-z0-9]*(?:_[a-z0-9]+)+)\b")
_EXC_NAME = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt))\b")
_EXC_LINE = re.compile(r"^\s*([A-Za-z_][\w.]*(?:Error|Exception|Warning)):\s*(.+?)\s*$", re.M)
_EXPECT_EXC = re.compile(
    r"(?:should|expected?(?:\s+to)?|ought\s+to|supposed\s+to|documented\s+to|would\s+expect\s+(?:it\s+)?to)"
    r"(?:\s+\w+){0,3}?\s+(?:raise|throw)s?\s+(?:an?\s+|the\s+)?`?([A-Z]\w*(?:Error|Exception|Warning))`?",
    re.I,
)
_INSTEAD = re.compile(
    r"`?\b([A-Z]\w*(?:Error|Exception|Warning))`?\s+instead\s+of\s+(?:an?\s+|the\s+)?`?([A-Z]\w*(?:Error|Exception|Warning))`?"
)

# names that appear in issues but never identify the code to change
_STOP = {
    "python", "pip", "pytest", "print", "len", "str", "int", "float", "list", "dict", "set", "tuple",
    "range", "isinstance", "type", "super", "self", "cls", "none", "true", "false", "return", "import",
    "from", "def", "class", "lambda", "assert", "raise", "yield", "open", "sorted", "repr", "format",
    "Traceback", "File", "NoneType", "TypeError", "ValueError", "KeyError", "IndexError",
    "AttributeError", "RuntimeError", "Exception", "AssertionError", "ImportError", "OSError",
    "NotImplementedError", "StopIteration", "ZeroDivisionError", "UnicodeDecodeError",
    "UnicodeEncodeError", "RecursionError", "OverflowError", "FileNotFoundError", "GitHub", "README",
    "e.g", "i.e", "etc", "http", "https", "www", "com", "org",
}  # fmt: skip
_BUILTIN_EXC = {
    "Exception", "ValueError", "TypeError", "KeyError", "IndexError", "AttributeError", "RuntimeError",
    "AssertionError", "ImportError", "OSError", "NotImplementedError", "LookupError", "ArithmeticError",
    "ZeroDivisionError", "OverflowError", "FileNotFoundError", "PermissionError", "UnicodeError",
    "UnicodeDecodeError", "UnicodeEncodeError", "RecursionError", "StopIteration", "TimeoutError",
    "DeprecationWarning", "UserWarning", "RuntimeWarning", "FutureWarning", "Warning",
}  # fmt: skip


@dataclass(frozen=True)
class Frame:
    """One traceback frame: the path as printed (often absolute), its line, its function."""

    path: str
    line: int
    func: str


@dataclass
class Mentions:
    """Leads found in an issue, in order of first appearance."""

    paths: list[str] = field(default_factory=list)
    frames: list[Frame] = field(default_factory=list)
    symbols: list[str] = field(default_factory=list)
    exceptions: list[str] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)
    expected_exceptions: list[str] = field(default_factory=list)
    observed_exceptions: list[str] = field(default_factory=list)

    @property
    def names(self) -> list[str]:
        """Every identifier worth locating: symbol parts and frame functions, deduplicated."""
        out: list[str] = []
        for sym in self.symbols:
            out.extend(sym.split("."))
        out.extend(f.func for f in self.frames if f.func.isidentifier())
        return _unique(n for n in out if n not in _STOP and not n.startswith("__") and len(n) > 2)


def _unique(items: object) -> list[str]:
    seen: dict[str, None] = {}
    for item in items:  # type: ignore[attr-defined]
        seen.setdefault(item, None)
    return list(seen)


def is_builtin_exception(name: str) -> bool:
    """A standard-library exception (so it needs no definition in the repository)."""
    return name in _BUILTIN_EXC


def find_mentions(issue: str) -> Mentions:
    """Extract every lead from the issue text."""
    m = Mentions()
    m.frames = [Frame(x["path"], int(x["line"]), x["func"]) for x in _FRAME.finditer(issue)]
    frame_paths = {f.path for f in m.frames}
    m.paths = _unique(
        p
        for p in _PATH.findall(issue)
        if p not in frame_paths and not p.startswith(("http", "www."))
    )
    code = " ".join(_CODE_SPAN.findall(issue)) + "\n" + "\n".join(_FENCE.findall(issue))
    symbols: list[str] = []
    for text in (code, issue):
        symbols += [d for d in _DOTTED.findall(text) if not _looks_like_file_or_number(d)]
        symbols += _CALL.findall(text)
        symbols += _CAMEL.findall(text)
        symbols += _SNAKE.findall(text)
    m.symbols = _unique(s for s in symbols if s.split(".")[-1] not in _STOP and s not in _STOP)
    m.exceptions = _unique(_EXC_NAME.findall(issue))
    m.messages = _unique(
        msg.strip("'\"") for _, msg in _EXC_LINE.findall(issue) if 4 <= len(msg.strip("'\"")) <= 200
    )
    expected = list(_EXPECT_EXC.findall(issue))
    observed: list[str] = []
    for got, wanted in _INSTEAD.findall(issue):
        expected.append(wanted)
        observed.append(got)
    m.expected_exceptions = _unique(expected)
    m.observed_exceptions = _unique(observed)
    return m


def _looks_like_file_or_number(dotted: str) -> bool:
    last = dotted.rsplit(".", 1)[-1]
    return last in {
        "py",
        "txt",
        "cfg",
        "toml",
        "ini",
        "md",
        "rst",
        "json",
        "yaml",
        "yml",
        "com",
        "org",
    }
