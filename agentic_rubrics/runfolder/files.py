"""Files on disk: atomic writes, JSONL records, a JSON document read with a located error.

Every write goes to a temporary file in the same folder and is renamed over the target, so a killed
run leaves either the old file or the new one, never half of one.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from agentic_rubrics.exceptions import AgenticRubricsError, DataError


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    """Write ``text`` to ``path`` atomically (temp file in the same folder, fsync, rename).

    ``durable=False`` skips the fsync: still never half-written, but a power cut may lose the file
    (right for caches, whose loss only costs a recomputation). A lone surrogate, the only thing UTF-8
    cannot encode, is written as its ``\\udXXX`` escape (inside a JSON string, exactly its JSON form).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors="backslashreplace", newline="\n") as fh:
            fh.write(text)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_json(path: Path, obj: Any) -> None:
    """Write one JSON document atomically, keys sorted, human-readable."""
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def append_jsonl(path: Path, rows: Iterable[dict[str, Any]]) -> None:
    """Append rows to a JSONL file as one write followed by fsync.

    A crash can leave at most a torn last line, which :func:`read_jsonl` with ``tolerate_torn_tail``
    drops; resumable writers rely on that.
    """
    blob = "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n" for r in rows)
    if not blob:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8", errors="backslashreplace", newline="\n") as fh:
        fh.write(blob)
        fh.flush()
        os.fsync(fh.fileno())


def read_jsonl(
    path: Path, *, tolerate_torn_tail: bool = False
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield ``(line_number, record)`` for each non-blank line; malformed lines raise ``DataError``.

    With ``tolerate_torn_tail``, a malformed *last* line without a newline (a write cut short) is
    skipped instead. Bytes that are not UTF-8 are read as lone surrogates (``surrogateescape``), so one
    bad patch does not make the whole file unreadable: what each field makes of them is decided where
    the record is validated (see :mod:`agentic_rubrics.surrogates`).
    """
    try:
        data = path.read_bytes()
    except FileNotFoundError as exc:
        raise DataError(f"{path}: file not found") from exc
    if data[:2] == b"\x1f\x8b":  # gzip's magic number: say so, not "invalid JSON" on line 1
        raise DataError(f"{path}: a gzip-compressed file; expected JSON lines (gunzip it first)")
    text = data.decode("utf-8", "surrogateescape")
    lines = text.split("\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            is_tail = number == len(lines)  # no newline after it
            if tolerate_torn_tail and is_tail:
                return
            raise DataError(f"{path}:{number}: invalid JSON ({exc.msg})") from exc
        except RecursionError as exc:  # thousands of nested brackets: no record is that deep
            raise DataError(f"{path}:{number}: JSON nested too deeply") from exc
        if not isinstance(record, dict):
            raise DataError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        yield number, record


def parse_json(
    data: str | bytes, where: object, error: type[AgenticRubricsError] = DataError
) -> Any:
    """The JSON document in ``data`` (read from ``where``, which the error names): ``error`` when it is
    not UTF-8, not JSON (line and column), or nested deeper than the decoder goes — a hostile file of
    100,000 nested lists is a located error, never a RecursionError."""
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
    except UnicodeDecodeError as exc:
        raise error(f"{where}: not UTF-8 ({exc.reason} at byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise error(
            f"{where}: not JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
        ) from None
    except RecursionError:
        raise error(f"{where}: JSON nested too deeply") from None


def read_json(
    path: Path, error: type[AgenticRubricsError] = DataError, *, what: str | None = None
) -> Any:
    """The JSON document in the file ``path`` (:func:`parse_json`; ``error`` also when the file cannot
    be read). ``what`` comes after the path in the message (``not a content weights file``)."""
    where = f"{path}: {what}" if what else str(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise error(f"{where}: file not found") from None
    except OSError as exc:
        raise error(f"{where}: cannot be read ({exc.strerror or exc})") from None
    return parse_json(data, where, error)
