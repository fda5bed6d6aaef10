"""What a SWE-bench instance says about its own tests: the test patch, FAIL_TO_PASS, PASS_TO_PASS.

Read from the same files :mod:`~agentic_rubrics.datasets.swebench` reads (dataset rows, or the combined
candidates format), for ``env-check`` only: none of it reaches scoring. The harness's rows spell the
lists ``FAIL_TO_PASS`` / ``PASS_TO_PASS`` as JSON text; the combined format ``fail_to_pass`` /
``pass_to_pass`` as lists: both are read, and anything else is an error naming file, line and field.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentic_rubrics.datasets.swebench import read_records
from agentic_rubrics.exceptions import DataError


@dataclass(frozen=True)
class TestedInstance:
    """An instance with its tests: the gold patch, the test patch and which tests it decides on."""

    instance_id: str
    repo: str
    base_commit: str
    version: str
    gold_patch: str
    test_patch: str
    fail_to_pass: list[str] = field(default_factory=list)
    pass_to_pass: list[str] = field(default_factory=list)


def _text(path: Path, line: int, record: dict[str, Any], name: str, *, required: bool) -> str:
    value = record.get(name)
    if value is None:
        if required:
            raise DataError(f"{path}:{line}: {name}: missing required field")
        return ""
    if not isinstance(value, (str, int, float)) or isinstance(value, bool):
        raise DataError(f"{path}:{line}: {name}: expected text, got {type(value).__name__}")
    return str(value)


def _names(path: Path, line: int, record: dict[str, Any], upper: str) -> list[str]:
    name = upper if upper in record else upper.lower()
    value = record.get(name)
    if value is None:
        raise DataError(f"{path}:{line}: {upper}: missing required field")
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise DataError(f"{path}:{line}: {name}: not a JSON list ({exc.msg})") from None
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise DataError(f"{path}:{line}: {name}: expected a list of test names")
    return list(value)


def load_tested_instances(path: Path) -> list[TestedInstance]:
    """Every instance of a SWE-bench file, with its tests (file order; a repeated id: the last)."""
    out: dict[str, TestedInstance] = {}
    for line, r in read_records(path):
        instance_id = _text(path, line, r, "instance_id", required=True)
        gold = "patch" if r.get("patch") is not None else "gold_patch"
        out[instance_id] = TestedInstance(
            instance_id=instance_id,
            repo=_text(path, line, r, "repo", required=True),
            base_commit=_text(path, line, r, "base_commit", required=True),
            version=_text(path, line, r, "version", required=False),
            gold_patch=_text(path, line, r, gold, required=True),
            test_patch=_text(path, line, r, "test_patch", required=True),
            fail_to_pass=_names(path, line, r, "FAIL_TO_PASS"),
            pass_to_pass=_names(path, line, r, "PASS_TO_PASS"),
        )
    return list(out.values())
