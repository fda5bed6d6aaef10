"""recordkit: small helpers for cleaning and reshaping lists of dict records."""

from .io import read_csv, read_jsonl, write_csv, write_jsonl
from .records import drop, flatten, get_path, merge, pick, rename, set_path, unflatten
from .schema import Field, Schema, SchemaError
from .transform import (
    apply_defaults,
    dedupe,
    group_by,
    index_by,
    normalise_keys,
    snake_case,
    sort_records,
)

__all__ = [
    "Field",
    "Schema",
    "SchemaError",
    "apply_defaults",
    "dedupe",
    "drop",
    "flatten",
    "get_path",
    "group_by",
    "index_by",
    "merge",
    "normalise_keys",
    "pick",
    "read_csv",
    "read_jsonl",
    "rename",
    "set_path",
    "snake_case",
    "sort_records",
    "unflatten",
    "write_csv",
    "write_jsonl",
]

__version__ = "1.3.0"
