"""What an issue names: file paths, traceback frames, symbols, exception types and error messages.

Pure text rules, no model. Everything found here is a *lead*; explorers confirm leads against the
repository (or, with no repository, against the candidates' own diffs) before writing them down.
Besides the fields the issue-only rubric reads, the grounded explorer reads the module paths and
imports the issue's code uses, upper-case constants, option-like strings (``--flag``, a directive's
``:option:``, ``.. directive::``, ``:role:``), error and warning lines anywhere in the text, and the
names the issue's own code defines (which are the reporter's, not the repository's).
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

_MAX_TEXT = 200_000  # an issue longer than this is read from its start only
_ERROR_ANYWHERE = re.compile(
    r"(?<![\w.])([A-Za-z_][\w.]{0,80}(?:Error|Exception|Warning)):[ \t]++([^\n]{4,300})"
)
_CONSTANT = re.compile(r"\b([A-Z][A-Z0-9]*+(?:_[A-Z0-9]++)++)\b")
_CAPS = re.compile(r"^[A-Z][A-Z0-9]{3,}$")
_CLI_FLAG = re.compile(r"(?<![\w-])(--[a-z][a-z0-9]*+(?:[-_][a-z0-9]++)*+)")
_DIRECTIVE = re.compile(r"^[ \t>]*\.\.[ \t]++([a-z][a-z0-9_-]*+)::", re.M)
_FIELD = re.compile(r"^[ \t>]+:([a-z][a-z0-9_-]*+):(?:[ \t]|$)", re.M)
_PROSE_FIELD = re.compile(r"(?<![\w:`]):([a-z][a-z0-9_]*+(?:-[a-z0-9_]++)++):(?![\w`])")
_ROLE = re.compile(r"(?<![\w:]):([a-z][a-z0-9_-]*+):`")
_IMPORT_FROM = re.compile(
    r"^[ \t>.]*from[ \t]++([A-Za-z_][\w.]*+)[ \t]++import[ \t]++\(?([\w, \t]+)", re.M
)
_IMPORT = re.compile(
    r"^[ \t>.]*import[ \t]++([A-Za-z_][\w.]*+(?:[ \t]*+,[ \t]*+[A-Za-z_][\w.]*+)*)", re.M
)
_USER_DEF = re.compile(r"^[ \t>.]*(?:async[ \t]++)?(?:def|class)[ \t]++([A-Za-z_]\w*+)", re.M)
_USER_ASSIGN = re.compile(r"^[ \t>.]*([A-Za-z_]\w*+)[ \t]*+(?::[^=\n]*+)?=(?!=)", re.M)

# names that appear in issues but never identify the code to change
_STOP = {
    "python",
    "pip",
    "pytest",
    "print",
    "len",
    "str",
    "int",
    "float",
    "list",
    "dict",
    "set",
    "tuple",
    "range",
    "isinstance",
    "type",
    "super",
    "self",
    "cls",
    "none",
    "true",
    "false",
    "return",
    "import",
    "from",
    "def",
    "class",
    "lambda",
    "assert",
    "raise",
    "yield",
    "open",
    "sorted",
    "repr",
    "format",
    "Traceback",
    "File",
    "NoneType",
    "TypeError",
    "ValueError",
    "KeyError",
    "IndexError",
    "AttributeError",
    "RuntimeError",
    "Exception",
    "AssertionError",
    "ImportError",
    "OSError",
    "NotImplementedError",
    "StopIteration",
    "ZeroDivisionError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "RecursionError",
    "OverflowError",
    "FileNotFoundError",
    "GitHub",
    "README",
    "e.g",
    "i.e",
    "etc",
    "http",
    "https",
    "www",
    "com",
    "org",
}
_BUILTIN_EXC = {
    "Exception",
    "ValueError",
    "TypeError",
    "KeyError",
    "IndexError",
    "AttributeError",
    "RuntimeError",
    "AssertionError",
    "ImportError",
    "OSError",
    "NotImplementedError",
    "LookupError",
    "ArithmeticError",
    "ZeroDivisionError",
    "OverflowError",
    "FileNotFoundError",
    "PermissionError",
    "UnicodeError",
    "UnicodeDecodeError",
    "UnicodeEncodeError",
    "RecursionError",
    "StopIteration",
    "TimeoutError",
    "DeprecationWarning",
    "UserWarning",
    "RuntimeWarning",
    "FutureWarning",
    "Warning",
}


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
    # read by the grounded explorer only (the issue-only rubric keeps the fields above)
    title: str = ""
    dotted: list[str] = field(default_factory=list)
    """Dotted names (``pkg.mod.Class.method``): a module path, a qualified name, or both."""
    imports: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    """``(module, names)`` of the issue code's import statements (``import a.b``: no names)."""
    constants: list[str] = field(default_factory=list)
    """UPPER_CASE names (with an underscore anywhere, or at least four letters in code)."""
    options: list[str] = field(default_factory=list)
    """Option-like strings a repository registers literally: ``--flag``, ``:field:``, directives."""
    error_lines: list[str] = field(default_factory=list)
    """Messages of ``SomeError: message`` found anywhere in the text (quoted, prefixed ...)."""
    user_defined: set[str] = field(default_factory=set)
    """Functions and classes the issue's own code defines: the reporter's, not leads."""
    user_assigned: set[str] = field(default_factory=set)
    """Names the issue's own code assigns (variables, or a configuration file's settings)."""
    counts: dict[str, int] = field(default_factory=dict)
    """How often each identifier occurs in the text (title occurrences count three times)."""
    words: dict[str, int] = field(default_factory=dict)
    """Lower-case words (identifiers split at ``_`` and case changes, and two adjacent words
    joined: "man page" -> ``manpage``) with their counts (title occurrences count three times)."""

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
    _grounding_leads(m, issue[:_MAX_TEXT].replace("\r\n", "\n"), code)
    return m


def _grounding_leads(m: Mentions, issue: str, code: str) -> None:
    """The leads only the grounded explorer reads (see the module doc)."""
    m.title = issue.strip().splitlines()[0][:300] if issue.strip() else ""
    fenced = "\n".join(_FENCE.findall(issue))
    m.dotted = _unique(
        d for d in _DOTTED.findall(code + "\n" + issue) if not _looks_like_file_or_number(d)
    )
    imports: dict[tuple[str, tuple[str, ...]], None] = {}
    for module, names in _IMPORT_FROM.findall(fenced + "\n" + code):
        parts = tuple(n.split()[0] for n in names.split(",") if n.split() and n.split()[0] != "*")
        imports.setdefault((module, tuple(p for p in parts if p.isidentifier())), None)
    for group in _IMPORT.findall(fenced):
        for module in group.split(","):
            imports.setdefault((module.strip(), ()), None)
    m.imports = list(imports)
    caps = [
        c for c in _CODE_SPAN.findall(issue) + fenced.split() if _CAPS.match(c.strip("`()[]:,"))
    ]
    m.constants = _unique([*_CONSTANT.findall(issue), *(c.strip("`()[]:,") for c in caps)])
    m.options = _unique(
        o
        for o in [
            *_CLI_FLAG.findall(issue),
            *_DIRECTIVE.findall(issue),
            *_FIELD.findall(issue),
            *_PROSE_FIELD.findall(issue),
            *_ROLE.findall(issue),
        ]
        if o not in ("--help", "--version", "--verbose", "-v")
    )
    m.error_lines = _unique(
        msg.strip().strip("'\"`").strip()
        for _, msg in _ERROR_ANYWHERE.findall(issue)
        if 4 <= len(msg.strip().strip("'\"`").strip()) <= 200
    )
    m.user_defined = set(_USER_DEF.findall(fenced))
    m.user_assigned = set(_USER_ASSIGN.findall(fenced))
    counts: dict[str, int] = {}
    for word in re.findall(r"[A-Za-z_]\w*", issue):
        counts[word] = counts.get(word, 0) + 1
    for word in re.findall(r"[A-Za-z_]\w*", m.title):
        counts[word] = counts.get(word, 0) + 2
    m.counts = counts
    words: dict[str, int] = {}
    for text, extra in ((issue, 0), (m.title, 2)):
        tokens = [t.lower() for w in re.findall(r"[A-Za-z][A-Za-z0-9]*", text) for t in _split(w)]
        for n, token in enumerate(tokens):
            for word in (token, token + tokens[n + 1] if n + 1 < len(tokens) else ""):
                if len(word) >= 4:
                    words[word] = words.get(word, 0) + 1 + extra
    m.words = words


_WORD_PART = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def _split(identifier: str) -> list[str]:
    """``autodoc_typehints`` -> autodoc, typehints; ``JUnitXML`` -> J, Unit, XML."""
    return [p for part in identifier.split("_") for p in _WORD_PART.findall(part)]


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
