"""What in a candidate patch is test infrastructure, decided from the diff alone.

Test infrastructure is a file pytest or Python reads at start-up, or a setting that changes which
plugins, options or hooks load: not the code under test. A candidate that changes it can make tests
pass that its code fails (a root ``conftest.py`` whose hook replaces every test's ``runtest``; a
``pytest.ini`` whose ``addopts`` loads such a hook from a module; a conftest that skips everything), so
the tests verifier puts what a candidate changed there back to the base version before the tests run
(:func:`neutralised_paths`), and refuses a candidate that touches the graded folder.

The kinds (:data:`InfraKind`):

- ``graded_folder``: any path under one of :data:`GRADED_FOLDERS` (:data:`GRADED_FOLDER` at the
  root, or where a repository's runner finds tests: ``tests/agentic_rubrics_tests/`` for Django,
  ``sympy/agentic_rubrics_tests/`` for sympy), where the graded tests are copied;
- ``conftest``: a ``conftest.py`` added, changed, deleted or renamed (either side), anywhere;
- ``pytest_config``: ``pytest.ini``, ``.pytest.ini``, ``pytest.toml``, ``.pytest.toml`` anywhere; in
  ``tox.ini``, ``setup.cfg`` and ``pyproject.toml``, a change inside pytest's section (``[pytest]``,
  ``[tool:pytest]``, ``[tool.pytest.ini_options]``, ``[tool.pytest]``), or one adding or removing such a
  header; a hunk whose section is unknown (no base file to read, no header before the change in the
  hunk) counts as inside one;
- ``startup_hook``: ``sitecustomize.py``, ``usercustomize.py``, any ``*.pth``; and a new top-level
  module of the tree named as one of the standard library or of pytest's own (``inspect.py``,
  ``pluggy/__init__.py``): the tree's root is first on ``sys.path`` when tests run as ``python -m
  pytest``, so such a file replaces what the runner imports;
- ``plugin``: an added line assigning ``pytest_plugins``; a change to a ``pytest11`` entry point in
  ``setup.py``, ``setup.cfg`` or ``pyproject.toml``;
- ``env_override``: an added line, in any file, that sets one of :data:`PYTEST_ENV`;
- ``framework_patch``: an added line in a program module (not a test, not the test framework's own
  source) that imports pytest, ``_pytest`` or pluggy: code the tests import runs inside the test process
  and could rewrite how tests run (``_pytest.runner.pytest_runtest_call = …``); no runner can put the
  code under test back, so it is recorded (and held against the candidate), not reverted.

Hunks are read as ``git apply`` reads them (:func:`~agentic_rubrics.patch.walk_hunks`: a hunk holds
the lines its header counts), paths as it reads them with ``-p1``. Hook definitions in ordinary
modules are not infrastructure: pytest's own source (``src/_pytest/*.py``) defines hooks, and that is
the product under test there.
"""

from __future__ import annotations

import posixpath
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Literal, get_args

from agentic_rubrics.config_sections import Hunk, config_kinds
from agentic_rubrics.patch import is_test_path, unquote_path, walk_hunks

GRADED_FOLDER = "agentic_rubrics_tests"
"""Where the graded test files are copied in a candidate's tree (a candidate touching it is refused)."""
GRADED_FOLDERS = (GRADED_FOLDER, f"tests/{GRADED_FOLDER}", f"sympy/{GRADED_FOLDER}")
"""Every folder a runner's layout puts the graded tests in (:mod:`agentic_rubrics.sandbox.testlayout`),
the root's first; a candidate touching any of them is refused."""
InfraKind = Literal[
    "graded_folder",
    "conftest",
    "pytest_config",
    "startup_hook",
    "plugin",
    "env_override",
    "framework_patch",
]
INFRA_KINDS: tuple[InfraKind, ...] = get_args(InfraKind)
"""Every kind, in the order reports list them."""
PYTEST_ENV: tuple[str, ...] = (
    "PYTEST_ADDOPTS",
    "PYTEST_PLUGINS",
    "PYTEST_DISABLE_PLUGIN_AUTOLOAD",
    "PYTEST_DEBUG",
    "PY_IGNORE_IMPORTMISMATCH",
)
"""The environment variables pytest reads to choose its options, plugins and hooks (and how it
imports test modules): unset in every test run (autoload is then turned off again)."""

START_UP_NAMES: tuple[str, ...] = (
    "conftest.py",
    "pytest.ini",
    ".pytest.ini",
    "pytest.toml",
    ".pytest.toml",
    "tox.ini",
    "setup.cfg",
    "pyproject.toml",
    "sitecustomize.py",
    "usercustomize.py",
    "*.pth",
)
"""The file names (globs) pytest or Python may read at start-up, wherever they are: what a run
checks the candidate's apply left as the diff says (a diff read otherwise by ``patch``'s fallback)."""

_CONFIG_NAMES = frozenset({"pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml"})
_SECTIONED = {"tox.ini": "ini", "setup.cfg": "ini", "pyproject.toml": "toml"}
_STARTUP_NAMES = frozenset({"sitecustomize.py", "usercustomize.py"})
_ENTRY_POINT_FILES = frozenset({"setup.py", "setup.cfg", "pyproject.toml"})
# the runner's own imports a new top-level module could stand in for: the interpreter's library and
# pytest's (pytest, its plugin manager and the packages it imports at start-up)
_RUNNER_IMPORTS = ("pytest", "_pytest", "pluggy", "py", "iniconfig", "packaging", "exceptiongroup")
_SHADOWED = frozenset(sys.stdlib_module_names) | frozenset((*_RUNNER_IMPORTS, "tomli", "colorama"))
_MODULE_FILE = re.compile(r"^([A-Za-z_]\w*)(?:\.[\w-]+)*\.(?:py|pyc|pyw|so|pyd)$")
_PLUGINS = re.compile(
    r"^\s*pytest_plugins\s*(?::[^=]*)?[+|]?=(?!=)"
    r"|setattr\s*\([^,]*,\s*['\"]pytest_plugins['\"]"
    r"|\[\s*['\"]pytest_plugins['\"]\s*\]\s*[+|]?=(?!=)"
)
_NAMES = "|".join(PYTEST_ENV)
_SETS_IN_CODE = re.compile(
    rf"environ\s*\[\s*['\"](?:{_NAMES})['\"]\s*\]\s*=(?!=)"
    rf"|(?:setdefault|putenv)\s*\(\s*['\"](?:{_NAMES})['\"]"
    rf"|['\"](?:{_NAMES})['\"]\s*:"
)
_SETS_IN_CONFIG = re.compile(
    rf"\b(?:{_NAMES})\b['\"]?\s*(?::|=(?!=))|\b(?:export|setenv|set)\s+['\"]?(?:{_NAMES})\b"
)
_HUNK_HEAD = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
_FRAMEWORK = ("pytest", "_pytest", "pluggy")
_FRAMEWORK_IMPORT = re.compile(
    r"^\s*+(?:import\s++(?:[\w.]++\s*+(?:as\s++\w++\s*+)?,\s*+)*?|from\s++)"
    r"(?:pytest|_pytest|pluggy)\b"
    r"|__import__\(\s*+['\"](?:pytest|_pytest|pluggy)\b|import_module\(\s*+['\"](?:pytest|_pytest|pluggy)\b"
)


@dataclass(frozen=True)
class InfraChange:
    """One path of a patch that is test infrastructure, and which kind."""

    path: str
    """The path (repository-relative, as ``git apply -p1`` reads it)."""
    kind: InfraKind
    """What it is (module docstring)."""


@dataclass
class _File:
    old: str | None = None
    new: str | None = None
    created: bool = False
    deleted: bool = False
    hunks: list[Hunk] = field(default_factory=list)
    headers: int = 0  # "---" / "+++" lines seen


def _clean(path: str | None) -> str | None:
    """A repository-relative path, or ``None`` for ``/dev/null`` and a path git apply refuses."""
    if path is None:
        return None
    path = posixpath.normpath(path)
    if path in (".", "..") or path.startswith(("/", "../")):
        return None
    return path


def _header_name(text: str, strip: bool) -> str | None:
    """The path of a ``---``/``+++`` line (the part before a tab), ``-p1`` applied when ``strip``."""
    name = text[4:].split("\t", 1)[0].rstrip()
    name = unquote_path(name)
    if name == "/dev/null" or not name:
        return None
    return _strip_one(name) if strip else _clean(name)


def _strip_one(name: str) -> str | None:
    """``-p1``: the name without its first component (``a/``, ``b/``)."""
    return _clean(name.split("/", 1)[1] if "/" in name else name)


def _git_names(text: str) -> tuple[str | None, str | None]:
    """The two paths of a ``diff --git a/X b/Y`` line (renames name them again in their own lines)."""
    rest = text[len("diff --git ") :]
    quoted = re.findall(r'"(?:[^"\\]|\\.)*"|\S+', rest)
    if len(quoted) == 2:
        a, b = unquote_path(quoted[0]), unquote_path(quoted[1])
    else:  # unquoted names with spaces: "a/N b/N" with the same N on both sides
        half = (len(rest) - 1) // 2
        a, b = rest[:half], rest[half + 1 :]
    return _strip_one(a), _strip_one(b)


def _files(patch: str) -> list[_File]:
    """The patch's files with their hunks, read as ``git apply`` reads them."""
    files: list[_File] = []
    current: _File | None = None
    hunk: Hunk | None = None
    for kind, line in walk_hunks(patch):
        if kind in ("added", "removed", "context"):
            if hunk is not None:
                tag = {"added": "+", "removed": "-", "context": " "}[kind]
                hunk.lines.append((tag, line[1:]))
            continue
        if kind != "outside":
            continue
        if line.startswith("diff --git "):
            current, hunk = _File(), None
            current.old, current.new = _git_names(line)
            files.append(current)
        elif line.startswith("--- ") and (current is None or current.hunks or current.headers):
            current, hunk = _File(), None  # a traditional diff's next file
            current.old, current.headers = _header_name(line, True), 1
            files.append(current)
        elif current is None:
            continue
        elif line.startswith("--- "):
            current.old, current.headers = _header_name(line, True), 1
        elif line.startswith("+++ ") and not current.hunks:
            current.new, current.headers = _header_name(line, True), current.headers + 1
        elif line.startswith(("rename from ", "copy from ")):
            current.old = _clean(unquote_path(line.split(" ", 2)[2]))
        elif line.startswith(("rename to ", "copy to ")):
            current.new = _clean(unquote_path(line.split(" ", 2)[2]))
        elif line.startswith("new file mode"):
            current.created = True
        elif line.startswith("deleted file mode"):
            current.deleted = True
        elif match := _HUNK_HEAD.match(line):
            count = 1 if match.group(2) is None else int(match.group(2))
            hunk = Hunk(int(match.group(1)), count)
            current.hunks.append(hunk)
    for f in files:
        if f.old is None and f.new is None:
            continue  # no path inside the tree (git apply refuses such a file)
        if f.created or (f.old is None and f.headers):
            f.old, f.created = None, True
        if f.deleted or (f.new is None and f.headers):
            f.new, f.deleted = None, True
    return [f for f in files if f.old is not None or f.new is not None]


def _shadows(path: str) -> bool:
    """A top-level module or package of the tree named as one the runner imports from elsewhere."""
    parts = path.split("/")
    if len(parts) == 1:
        match = _MODULE_FILE.match(parts[0])
        return match is not None and match.group(1) in _SHADOWED
    return (
        len(parts) == 2
        and parts[0] in _SHADOWED
        and (match := _MODULE_FILE.match(parts[1])) is not None
        and match.group(1) == "__init__"
    )


def _path_kinds(f: _File) -> Iterator[InfraChange]:
    """The kinds a file's paths alone decide (either side of a rename)."""
    for path in dict.fromkeys(p for p in (f.old, f.new) if p is not None):
        name = posixpath.basename(path)
        if any(path == f or path.startswith(f + "/") for f in GRADED_FOLDERS):
            yield InfraChange(path, "graded_folder")
        if name == "conftest.py":
            yield InfraChange(path, "conftest")
        if name in _CONFIG_NAMES:
            yield InfraChange(path, "pytest_config")
        arrives = path == f.new and (f.created or f.old != f.new)
        if name in _STARTUP_NAMES or name.endswith(".pth") or (arrives and _shadows(path)):
            yield InfraChange(path, "startup_hook")
        if name in _SECTIONED and f.old != f.new and not f.created and not f.deleted:
            yield InfraChange(path, "pytest_config")  # a config file moved: its sections go too


def _content_kinds(
    f: _File, read_base: Callable[[str], str | None] | None
) -> Iterator[InfraChange]:
    """The kinds a file's changed lines decide."""
    path = f.new or f.old
    assert path is not None
    name = posixpath.basename(path)
    added = [text for h in f.hunks for tag, text in h.lines if tag == "+"]
    if name in _SECTIONED and f.hunks:
        base = None
        if f.old is not None and read_base is not None and not f.created:
            base = read_base(f.old)
        for kind in sorted(config_kinds(_SECTIONED[name], base, f.hunks)):
            yield InfraChange(path, kind)
    elif name in _ENTRY_POINT_FILES and any(
        any(tag != " " for tag, _ in h.lines) and any("pytest11" in t for _, t in h.lines)
        for h in f.hunks
    ):
        yield InfraChange(path, "plugin")
    code = name.endswith((".py", ".pyw"))
    if code and any(_PLUGINS.search(text) for text in added):
        yield InfraChange(path, "plugin")
    sets = _SETS_IN_CODE if code else _SETS_IN_CONFIG
    if any(sets.search(text) for text in added):
        yield InfraChange(path, "env_override")
    if code and _program_module(path) and any(_FRAMEWORK_IMPORT.search(t) for t in added):
        yield InfraChange(path, "framework_patch")


def _program_module(path: str) -> bool:
    """A module of a package under test: not a test file, not a script at the tree's root (nothing
    imports an agent's ``reproduce.py`` unless a conftest or a plugin setting does, each flagged on
    its own) and not the test framework's own source (pytest's repository imports ``_pytest``
    everywhere: that is its product)."""
    parts = path.split("/")
    own = parts[1:2] if parts[0] == "src" else parts[:1]
    return len(parts) > 1 and not is_test_path(path) and not any(p in _FRAMEWORK for p in own)


def infra_changes(
    patch: str, read_base: Callable[[str], str | None] | None = None
) -> tuple[InfraChange, ...]:
    """Every path of ``patch`` that is test infrastructure, with its kind, in the patch's order
    (``read_base``: a base-tree file's text by path, or ``None``; it places a config file's hunks in
    their sections, and without it a hunk whose section the hunk does not show counts as pytest's)."""
    found: dict[InfraChange, None] = {}
    for f in _files(patch):
        for change in (*_path_kinds(f), *_content_kinds(f, read_base)):
            found[change] = None
    return tuple(found)


def touched_paths(patch: str) -> list[str]:
    """Every path a patch names inside the tree (both sides of a rename), in its order."""
    seen: dict[str, None] = {}
    for f in _files(patch):
        for path in (f.old, f.new):
            if path is not None:
                seen[path] = None
    return list(seen)


def neutralised_paths(changes: Iterable[InfraChange]) -> list[str]:
    """The files to put back to their base version (removed when the base has none) before tests run.

    Every infrastructure path, but for a ``plugin`` or ``env_override`` line in an ordinary Python
    module (not a conftest, not a start-up file): pytest reads ``pytest_plugins`` only in conftests and
    collected test modules (the graded ones are the verifier's own, a test patch's files are put back),
    and an environment set after start-up is read by no runner here; putting such a module back would
    undo the code under test. Those stay recorded, not reverted."""
    out: dict[str, None] = {}
    for change in changes:
        name = posixpath.basename(change.path)
        inert = change.kind in ("plugin", "env_override", "framework_patch") and name.endswith(
            (".py", ".pyw")
        )
        if inert and name != "conftest.py" and name not in _STARTUP_NAMES:
            continue
        out[change.path] = None
    return sorted(out)


def kinds_of(changes: Iterable[InfraChange]) -> list[InfraKind]:
    """The distinct kinds among ``changes``, in :data:`INFRA_KINDS` order (what rows record)."""
    seen = {c.kind for c in changes}
    return [k for k in INFRA_KINDS if k in seen]
