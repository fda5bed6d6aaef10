"""A task's verdict rows as a digest: what its progress row records when they are written, so that the
report can say when the rows on disk no longer are the ones that were scored (a hand edit)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any

from agentic_rubrics.runfolder.rows import ProgressRow


def rows_digest(rows: Iterable[dict[str, Any]]) -> str:
    """``sha256:`` of a task's verdict rows, whatever their order: each row as canonical JSON (sorted
    keys, ASCII), the lines sorted. Rows read back from verdicts.jsonl give the digest they were
    written with, so a hand-edited row shows."""
    lines = sorted(json.dumps(r, sort_keys=True) for r in rows)
    return "sha256:" + hashlib.sha256("\n".join(lines).encode("ascii")).hexdigest()


def verdicts_changed(progress: ProgressRow, digests: dict[str, str]) -> bool:
    """Whether a finished task's verdict rows changed since they were written: its rows now
    (``digests``, by task, as :meth:`RunFolder.verdicts` gives them) no longer give the digest its
    progress row recorded, or a retry found them changed and kept them (``verdicts_changed``). A row
    written before digests were recorded says nothing."""
    if progress.verdicts_changed:
        return True
    if progress.verdicts_digest is None:
        return False
    return digests.get(progress.instance_id, rows_digest([])) != progress.verdicts_digest
