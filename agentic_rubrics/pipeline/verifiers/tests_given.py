"""The tests verifier's given scripts (``--tests DIR``): which files a task's folder may hold, read
safely, and the hash its status records."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from agentic_rubrics.pipeline.verifiers.artifacts import given_names

FILE_NAME = re.compile(r"^(test_[\w-]*|[\w-]*_test|conftest)\.py$")
"""The files a test artifact may hold (pytest's own file names; nothing else is copied)."""


def files_hash(files: dict[str, str]) -> str:
    """``sha256:`` over the files' names and contents (what the status records)."""
    blob = json.dumps(sorted(files.items()), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(blob.encode("utf-8", "surrogateescape")).hexdigest()


def given_tests(root: Path, instance_id: str, config: Any) -> tuple[dict[str, str], str]:
    """The test files ``--tests DIR`` holds for a task (``DIR/<safe name>/`` first, then
    ``DIR/<instance_id>/`` for a plain relative id, never outside ``DIR``), or why there are none."""
    base = root.resolve()
    for name in given_names(instance_id):
        try:
            folder = (root / name).resolve()
            if not folder.is_relative_to(base) or not folder.is_dir():
                continue
            entries = sorted(folder.iterdir())
        except (OSError, ValueError):
            continue
        files: dict[str, str] = {}
        for entry in entries:
            if not FILE_NAME.match(entry.name) or entry.is_symlink() or not entry.is_file():
                continue
            if len(files) >= config.max_files or entry.stat().st_size > config.max_file_bytes:
                return {}, "tests_too_large"
            try:
                files[entry.name] = entry.read_bytes().decode("utf-8")
            except (OSError, UnicodeDecodeError):
                return {}, "tests_unreadable"
        return (files, "") if files else ({}, "tests_not_found")
    return {}, "tests_not_found"
