"""File-name-safe forms of instance ids: one folder per task, distinct for distinct ids."""

from __future__ import annotations

import hashlib
import re

from agentic_rubrics.surrogates import utf8_bytes

_HASHED = re.compile(r"-[0-9a-f]{8}\Z")
_NAME_MAX = 120  # characters kept from an id; file names stay far below the usual 255-byte limit


def safe_name(instance_id: str) -> str:
    """A file-name-safe form of an instance id, distinct for distinct ids.

    An id made only of ASCII letters, digits, ``.``, ``_`` and ``-`` (``django__django-11099``) stays
    as it is. Any other id — one with ``/`` or other characters, ``.`` or ``..``, longer than
    120 characters, or one that itself ends like a hashed name (``-`` and 8 hex digits) — becomes its
    cleaned, shortened form plus ``-`` and 8 hex digits of its sha256. Names that stay as they are never
    end like that, so ``a/b`` (``a_b-<hash>``) and a literal ``a_b-<hash>`` cannot share a folder.
    """
    cleaned = "".join(
        ch if ch.isascii() and (ch.isalnum() or ch in "._-") else "_" for ch in instance_id
    )
    if (
        cleaned == instance_id
        and len(instance_id) <= _NAME_MAX
        and instance_id not in ("", ".", "..")
        and _HASHED.search(instance_id) is None
    ):
        return instance_id
    digest = hashlib.sha256(utf8_bytes(instance_id)).hexdigest()[:8]
    return f"{cleaned[:_NAME_MAX]}-{digest}"
