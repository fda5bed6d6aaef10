"""rubrics.yaml read safely: YAML turned into plain values that remember their lines, within limits.

A rubric file is untrusted (a model or a stranger wrote it). Before anything is built, one pass over
the parser's events (libyaml's when PyYAML has it: fast, and never recursive) refuses, naming the line:

- a text longer than :data:`MAX_RUBRIC_BYTES`;
- nesting deeper than :data:`MAX_DEPTH` levels (a rubric needs six);
- an alias inside the very node its anchor names (a recursive anchor);
- aliases that would expand to more than :data:`MAX_ALIAS_NODES` values in all ("billion laughs":
  ten aliases of ten aliases of ... are a few lines of YAML and billions of values).

Only then is the document composed and turned into plain values, so building it is bounded by the size
of the file plus those limits.
"""

from __future__ import annotations

from typing import Any

import yaml

from agentic_rubrics.exceptions import Problem

try:  # libyaml, when PyYAML was built with it: about ten times faster than the pure-Python reader
    from yaml import CSafeLoader as _Loader
except ImportError:  # pragma: no cover - every PyYAML wheel on PyPI carries libyaml
    from yaml import SafeLoader as _Loader  # type: ignore[assignment]

MAX_RUBRIC_BYTES = 10 * 1024 * 1024
"""The largest rubric accepted (10 MiB; 10,000 items take about 1.5 MB)."""
MAX_DEPTH = 64
"""The most collections open at once (aliases counted as expanded)."""
MAX_ALIAS_NODES = 100_000
"""The most values aliases may add to the document, all aliases together."""

Loc = tuple[str | int, ...]
_STR = "tag:yaml.org,2002:str"


def dotted_path(loc: Loc) -> str:
    """A location as a reader writes it: ``axes.runtime_rubrics[2].check``."""
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def size_problem(size: int, file: str) -> Problem | None:
    """The problem with a rubric of ``size`` bytes (or characters), if it is too large."""
    if size <= MAX_RUBRIC_BYTES:
        return None
    return Problem(
        file,
        None,
        None,
        "",
        f"the file has {size} bytes; a rubric may have at most {MAX_RUBRIC_BYTES}",
    )


def limit_problem(text: str, file: str) -> Problem | None:
    """The first place where ``text`` breaks a limit of this module, or ``None``.

    Syntax errors are left to the composer, which reports them with their line.
    """
    stack: list[list[Any]] = []  # per open collection: [anchor, values in it, deepest child]
    anchors: dict[str, tuple[int, int]] = {}  # anchor -> (values, collections deep)
    open_anchors: set[str] = set()
    added = 0

    def problem(event: yaml.Event, message: str) -> Problem:
        mark = event.start_mark
        if mark is None:
            return Problem(file, None, None, "", message)
        return Problem(file, mark.line + 1, mark.column + 1, "", message)

    def close(anchor: str | None, values: int, height: int) -> None:
        if stack:
            stack[-1][1] += values
            stack[-1][2] = max(stack[-1][2], height)
        if anchor is not None:
            anchors[anchor] = (values, height)

    try:
        for event in yaml.parse(text, Loader=_Loader):
            if isinstance(event, yaml.CollectionStartEvent):
                if len(stack) >= MAX_DEPTH:
                    return problem(event, f"nested deeper than {MAX_DEPTH} levels")
                stack.append([event.anchor, 1, 0])
                if event.anchor is not None:
                    open_anchors.add(event.anchor)
            elif isinstance(event, yaml.CollectionEndEvent):
                anchor, values, deepest = stack.pop()
                open_anchors.discard(anchor)
                close(anchor, values, deepest + 1)
            elif isinstance(event, yaml.ScalarEvent):
                close(event.anchor, 1, 0)
            elif isinstance(event, yaml.AliasEvent):
                name = event.anchor
                if name in open_anchors:
                    return problem(event, f"alias *{name} lies inside its own anchor &{name}")
                if name not in anchors:
                    continue  # an undefined alias: the composer reports it
                values, height = anchors[name]
                added += values
                if added > MAX_ALIAS_NODES:
                    return problem(
                        event, f"aliases expand to more than {MAX_ALIAS_NODES} values in all"
                    )
                if len(stack) + height > MAX_DEPTH:
                    return problem(event, f"alias *{name} nests deeper than {MAX_DEPTH} levels")
                close(None, values, height)
    except yaml.YAMLError:
        return None
    return None


class Located:
    """YAML turned into plain Python values, remembering the line and column of every key and value."""

    def __init__(self, text: str, file: str) -> None:
        self.file = file
        self.marks: dict[Loc, tuple[int, int]] = {}
        self.problems: list[Problem] = []
        self.data: Any = None
        self._constructor = yaml.SafeLoader("")
        limit = size_problem(len(text), file) or limit_problem(text, file)
        if limit is not None:
            self.problems.append(limit)
            return
        try:
            node = yaml.compose(text, Loader=_Loader)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            line, col = (mark.line + 1, mark.column + 1) if mark else (None, None)
            self.problems.append(
                Problem(file, line, col, "", f"YAML syntax error: {exc.problem or exc}")
            )
            return
        except yaml.YAMLError as exc:
            self.problems.append(Problem(file, None, None, "", f"YAML error: {exc}"))
            return
        self.data = None if node is None else self._build(node, ())

    def _value(self, node: yaml.Node, loc: Loc) -> Any:
        """A scalar's value; one the constructor cannot build (a 5000-digit int, month 13) is an
        error at its line, and its text stands in for it."""
        if node.tag == _STR and isinstance(node, yaml.ScalarNode):
            return node.value  # what SafeConstructor.construct_yaml_str returns, without its detour
        try:
            return self._constructor.construct_object(node, deep=True)
        except (ValueError, OverflowError, TypeError, yaml.YAMLError) as exc:
            line, col = node.start_mark.line + 1, node.start_mark.column + 1
            message = f"cannot read this value: {str(exc)[:200]}"
            self.problems.append(Problem(self.file, line, col, dotted_path(loc), message))
            return str(node.value) if isinstance(node, yaml.ScalarNode) else None

    def _build(self, node: yaml.Node, loc: Loc) -> Any:
        self.marks.setdefault(loc, (node.start_mark.line + 1, node.start_mark.column + 1))
        if isinstance(node, yaml.MappingNode):
            out: dict[Any, Any] = {}
            for key_node, value_node in node.value:
                key = self._value(key_node, loc)
                if not isinstance(key, str | int):
                    key = str(key)
                here = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
                if key in out:
                    self.problems.append(
                        Problem(self.file, *here, dotted_path(loc), f"duplicate key {key!r}")
                    )
                self.marks[(*loc, key)] = here
                out[key] = self._build(value_node, (*loc, key))
            return out
        if isinstance(node, yaml.SequenceNode):
            return [self._build(child, (*loc, i)) for i, child in enumerate(node.value)]
        return self._value(node, loc)

    def where(self, loc: Loc) -> tuple[int | None, int | None]:
        """Line and column of ``loc``, or of its nearest located parent."""
        for end in range(len(loc), -1, -1):
            if loc[:end] in self.marks:
                return self.marks[loc[:end]]
        return None, None

    def problem(self, loc: Loc, message: str, severity: str = "error") -> Problem:
        """A problem placed at ``loc``."""
        return Problem(self.file, *self.where(loc), dotted_path(loc), message, severity)
