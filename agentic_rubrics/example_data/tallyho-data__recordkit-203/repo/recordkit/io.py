"""Reading and writing records as JSON lines and CSV."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .records import flatten, unflatten


def read_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """One record per non-blank line of a JSON-lines file."""
    records = []
    with open(path, encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            record = json.loads(line)
            if not isinstance(record, dict):
                raise ValueError(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
            records.append(record)
    return records


def write_jsonl(records: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write one JSON object per line; returns the number of records written."""
    count = 0
    with open(path, "w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False, sort_keys=False) + "\n")
            count += 1
    return count


def read_csv(path: str | Path, *, nested: bool = True) -> list[dict[str, Any]]:
    """Records from a CSV file with a header row; dotted column names become nested dicts.

    Empty cells become ``None``. Pass ``nested=False`` to keep dotted names as they are.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        rows = [{k: (v if v != "" else None) for k, v in row.items()} for row in csv.DictReader(handle)]
    return [unflatten(row) for row in rows] if nested else rows


def write_csv(
    records: Iterable[Mapping[str, Any]], path: str | Path, *, columns: list[str] | None = None
) -> int:
    """Write records as CSV, nested dicts flattened to dotted columns; returns the row count.

    Without ``columns``, the columns are every flattened name in order of first appearance.
    """
    rows = [flatten(record) for record in records]
    if columns is None:
        columns = list(dict.fromkeys(name for row in rows for name in row))
    with open(path, "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns, extrasaction="ignore")
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return len(rows)
