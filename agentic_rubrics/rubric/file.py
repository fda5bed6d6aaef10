"""Read, validate, lint and write rubrics.yaml.

Validation is strict and every problem names the file, the line of the offending value and what was
expected: YAML syntax, the limits of :mod:`agentic_rubrics.rubric.safe_yaml` (size, nesting, aliases), the
schema (known axes and keys, unique ids, weight in {1, 2, 3}), and every ``check`` (known name,
argument of the right type, regex that compiles). Lint findings (:mod:`agentic_rubrics.rubric.lint`)
are warnings: the rubric still loads.
Every step takes time roughly linear in the size of the file.
"""

from __future__ import annotations

import re
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from agentic_rubrics.exceptions import Problem, RubricError
from agentic_rubrics.rubric.checks import CHECKS, check_problems
from agentic_rubrics.rubric.checks_repo import FUNCTION_RE
from agentic_rubrics.rubric.lint import lint
from agentic_rubrics.rubric.safe_yaml import Loc, Located, size_problem
from agentic_rubrics.runfolder.files import atomic_write_text
from agentic_rubrics.types import AXES, Check, Rubric

_TOP_KEYS = ("metadata", "axes")
_ITEM_KEYS = ("id", "description", "weight", "check", "gate")


def _expected_keys(loc: Loc) -> str:
    if loc == ():
        return ", ".join(_TOP_KEYS)
    if loc == ("axes",):
        return ", ".join(AXES)
    if len(loc) == 3 and loc[0] == "axes":
        return ", ".join(_ITEM_KEYS)
    return ""


def _pydantic_problems(src: Located, exc: ValidationError) -> list[Problem]:
    problems = []
    for err in exc.errors(include_url=False):
        loc: Loc = tuple(p for p in err["loc"] if isinstance(p, str | int))
        kind = err["type"]
        if kind == "missing":
            msg = f"missing required key {loc[-1]!r}"
            loc = loc[:-1]
        elif kind == "extra_forbidden":
            parent = loc[:-1]
            what = "axis" if parent == ("axes",) else "key"
            msg = f"unknown {what} {loc[-1]!r}; expected one of: {_expected_keys(parent)}"
        elif loc and loc[-1] == "weight":
            msg = f"weight must be 1, 2 or 3 (1 nice to have, 2 important, 3 must), got {err['input']!r}"
        else:
            got = err.get("input")
            shown = "" if isinstance(got, dict | list) else f" (got {got!r})"
            msg = f"{err['msg']}{shown}"
        problems.append(src.problem(loc, msg))
    return problems


MAX_ITEMS = 100
"""Items in one rubric, all axes together (the paper's rubrics hold 15-25; the static explorer's at
most about 22). A larger one is refused before any item is checked: each item's regex is probed at
validation and run on every candidate, so the count bounds both."""


def _raw_problems(src: Located) -> list[Problem]:
    """Checks pydantic cannot place on a line: the item count, duplicate ids and each check's
    vocabulary."""
    problems: list[Problem] = []
    data = src.data
    axes = data.get("axes") if isinstance(data, dict) else None
    if not isinstance(axes, dict):
        return problems
    count = sum(len(items) for items in axes.values() if isinstance(items, list))
    if count > MAX_ITEMS:
        message = f"{count} items; a rubric holds at most {MAX_ITEMS} (all axes together)"
        return [src.problem(("axes",), message)]
    first_seen: dict[str, Loc] = {}
    for axis, items in axes.items():
        if not isinstance(items, list):
            continue
        for i, item in enumerate(items):
            if not isinstance(item, dict):
                continue
            loc: Loc = ("axes", axis, i)
            item_id = item.get("id")
            if isinstance(item_id, str):
                if item_id in first_seen:
                    line, _ = src.where((*first_seen[item_id], "id"))
                    problems.append(
                        src.problem(
                            (*loc, "id"),
                            f"duplicate item id {item_id!r} (first used on line {line});"
                            " ids must be unique across all axes",
                        )
                    )
                else:
                    first_seen[item_id] = loc
            raw_check = item.get("check")
            if raw_check is None:
                continue
            if not isinstance(raw_check, dict):
                problems.append(
                    src.problem((*loc, "check"), "a check must be a mapping like {touches: PATH}")
                )
                continue
            try:
                check = Check.model_validate(raw_check)
            except ValidationError as exc:
                msg = exc.errors(include_url=False)[0]["msg"].removeprefix("Value error, ")
                problems.append(src.problem((*loc, "check"), msg))
                continue
            for key, message in check_problems(check):
                at = (*loc, "check", key) if key in raw_check else (*loc, "check")
                problems.append(src.problem(at, message))
    return problems


def parse_rubric(text: str, file: str = "<string>") -> tuple[Rubric, list[Problem]]:
    """Validate rubric text; return the rubric and its lint warnings.

    A valid text is parsed once per process: the run that writes a rubric and the report that reads
    it back share its parse; each call gets a copy of the rubric of its own (frozen models hold lists,
    and a caller that edits one must not change what another reads: a copy costs about an eighth of
    a parse) and the warnings named with its own ``file``.

    Raises:
        RubricError: with every error found, each naming file, line and what was expected.
        TypeError: ``text`` is not a str (a dict is a rubric already: ``Rubric.model_validate``).
    """
    if not isinstance(text, str):
        raise TypeError(
            f"parse_rubric takes rubrics.yaml's text (a str), got {type(text).__name__}; for a dict,"
            " validate it with rubric_to_yaml(Rubric.model_validate(d)) and parse that"
        )
    try:
        rubric, warnings = _parse_valid(text)
    except RubricError:
        return _parse(text, file)  # raises again, each problem naming this file
    return rubric.model_copy(deep=True), [replace(w, file=file) for w in warnings]


@lru_cache(maxsize=256)
def _parse_valid(text: str) -> tuple[Rubric, tuple[Problem, ...]]:
    rubric, warnings = _parse(text, "<string>")
    return rubric, tuple(warnings)


def _parse(text: str, file: str) -> tuple[Rubric, list[Problem]]:
    src = Located(text, file)
    if src.problems and src.data is None:
        raise RubricError(src.problems)
    if not isinstance(src.data, dict):
        kind = "empty" if src.data is None else type(src.data).__name__
        problem = src.problem(
            (), f"expected a mapping with keys {', '.join(_TOP_KEYS)}, got {kind}"
        )
        raise RubricError([*src.problems, problem])
    problems = list(src.problems) + _raw_problems(src)
    if any(p.field == "axes" and "a rubric holds at most" in p.message for p in problems):
        raise RubricError(problems)  # too many items: none is built, probed or linted
    rubric: Rubric | None = None
    try:
        rubric = Rubric.model_validate(src.data)
    except ValidationError as exc:
        pyd = _pydantic_problems(src, exc)
        # duplicate ids and check errors are already reported with better lines
        known = {(p.line, p.field) for p in problems}
        problems += [
            p
            for p in pyd
            if (p.line, p.field) not in known and "duplicate item id" not in p.message
        ]
    if problems or rubric is None:
        raise RubricError(sorted(problems, key=lambda p: (p.line or 0, p.column or 0)))
    return rubric, lint(rubric, src)


def load_rubric(path: Path | str) -> tuple[Rubric, list[Problem]]:
    """Read and validate a rubrics.yaml; return the rubric and its lint warnings.

    Raises:
        RubricError: the file is unreadable or invalid; every problem has file, line and expectation.
    """
    path = Path(path)
    try:
        too_large = size_problem(path.stat().st_size, str(path))  # before reading it into memory
        if too_large is not None:
            raise RubricError([too_large])
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RubricError([Problem(str(path), None, None, "", f"cannot read: {exc}")]) from exc
    return parse_rubric(text, str(path))


def rubric_to_yaml(rubric: Rubric) -> str:
    """The rubric in the paper's layout; optional keys appear only when set."""
    return dump_rubric_document(rubric_document(rubric))


def dump_rubric_document(doc: dict[str, Any]) -> str:
    """rubrics.yaml text of a :func:`rubric_document`.

    libyaml's emitter (about five times faster) where every string is printable ASCII, PyYAML's own
    emitter otherwise: the two write the same text for printable ASCII (a test holds them to it), but
    not for other characters (libyaml escapes and folds some of them differently), and what is
    written must not depend on which one ran.
    """
    options: dict[str, Any] = {"sort_keys": False, "allow_unicode": True, "width": 100}
    if _CDumper is not None and _printable_ascii(doc):
        return str(yaml.dump(doc, Dumper=_CDumper, **options))
    return str(yaml.safe_dump(doc, **options))


_CDumper: Any = getattr(yaml, "CSafeDumper", None)
_PRINTABLE_ASCII = re.compile(r"[ -~]*")


def _printable_ascii(value: Any) -> bool:
    """Whether every string in ``value`` (keys too) is printable ASCII; numbers, booleans, None pass."""
    if isinstance(value, str):
        return _PRINTABLE_ASCII.fullmatch(value) is not None
    if isinstance(value, dict):
        return all(_printable_ascii(k) and _printable_ascii(v) for k, v in value.items())
    if isinstance(value, list):
        return all(_printable_ascii(v) for v in value)
    return value is None or isinstance(value, bool | int | float)


def rubric_document(rubric: Rubric) -> dict[str, Any]:
    """The rubric as the plain values rubrics.yaml holds."""
    axes: dict[str, list[dict[str, Any]]] = {}
    for axis in AXES:
        rows = []
        for item in getattr(rubric.axes, axis):
            row: dict[str, Any] = {
                "id": item.id,
                "description": item.description,
                "weight": item.weight,
            }
            if item.check is not None:
                row["check"] = item.check.model_dump()
            if item.gate:
                row["gate"] = True
            rows.append(row)
        axes[axis] = rows
    return {"metadata": rubric.metadata.model_dump(), "axes": axes}


def write_rubric(rubric: Rubric, path: Path | str) -> None:
    """Write rubrics.yaml atomically, once it validates as :func:`load_rubric` will read it (a
    :class:`Rubric` built in Python skips the checks' validation: an unknown check or a bad argument
    would be written, then refused on load).

    Raises:
        RubricError: the rubric does not validate; nothing is written.
    """
    text = rubric_to_yaml(rubric)
    parse_rubric(text, file=str(path))
    atomic_write_text(Path(path), text)


def json_schema() -> dict[str, Any]:
    """A JSON Schema of rubrics.yaml for editors, with the check vocabulary spelled out."""
    schema = Rubric.model_json_schema(mode="validation")
    variants = []
    arg_schemas: dict[str, dict[str, Any]] = {
        "glob": {"type": "string", "minLength": 1},
        "regex": {"type": "string", "minLength": 1, "format": "regex"},
        "symbols": {
            "anyOf": [
                {"type": "string", "pattern": r"^[A-Za-z_]\w*(\.[A-Za-z_]\w*)*$"},
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
            ]
        },
        "int": {"type": "integer", "minimum": 0},
        "flag": {"const": True},
        "functions": {
            "anyOf": [
                {"type": "string", "pattern": FUNCTION_RE.pattern},
                {
                    "type": "array",
                    "items": {"type": "string", "pattern": FUNCTION_RE.pattern},
                    "minItems": 1,
                },
            ]
        },
        "globs": {
            "anyOf": [
                {"type": "string", "minLength": 1},
                {"type": "array", "items": {"type": "string"}, "minItems": 1},
            ]
        },
    }
    arg_schemas["flag_or_functions"] = {"anyOf": [{"const": True}, arg_schemas["functions"]]}
    for spec in CHECKS.values():
        arg = arg_schemas[spec.arg]
        props: dict[str, Any] = {
            spec.name: {**arg, "description": spec.doc},
            "in": {**arg_schemas["globs"], "description": "only files matching"},
            "not_in": {**arg_schemas["globs"], "description": "leave out files matching"},
        }
        variants.append(
            {
                "type": "object",
                "properties": props,
                "required": [spec.name],
                "additionalProperties": False,
                "examples": [spec.example],
            }
        )
    schema["$defs"]["Check"] = {
        "description": "A deterministic predicate over the diff; decides the item without a model.",
        "oneOf": variants,
    }
    schema["title"] = "agentic-rubrics rubrics.yaml"
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    return schema
