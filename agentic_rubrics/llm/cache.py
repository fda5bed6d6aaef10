"""The response cache of the LLM door: completions on disk, content-addressed."""

from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from agentic_rubrics.protocols import Completion
from agentic_rubrics.surrogates import utf8_bytes
from agentic_rubrics.types import SCHEMA


class ResponseCache:
    """Completions on disk, content-addressed, in append-only JSONL segments (one per writer).

    Only successful completions are stored. Appending a line is far cheaper than a file per entry;
    a write cut short leaves a torn last line, which loading skips (that answer is simply asked
    again). Segments written by other processes are read when the cache is first used.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._index: dict[str, dict[str, Any]] | None = None
        self._segment: Any = None

    @staticmethod
    def key(
        model: str,
        messages: list[dict[str, Any]],
        params: dict[str, Any],
        repeat: int,
        api_base: str | None = None,
    ) -> str:
        """Everything that changes the answer: the model, the server it is asked on, the messages,
        the sampling parameters and the repeat index."""
        blob = json.dumps(
            {
                "model": model,
                "api_base": api_base,
                "messages": messages,
                "params": params,
                "repeat": repeat,
            },
            sort_keys=True,
            ensure_ascii=False,
        )
        return hashlib.sha256(utf8_bytes(blob)).hexdigest()

    def _load(self) -> dict[str, dict[str, Any]]:
        if self._index is None:
            index: dict[str, dict[str, Any]] = {}
            for segment in sorted(self.root.glob("*.jsonl")):
                for line in segment.read_text(encoding="utf-8", errors="replace").split("\n"):
                    try:
                        row = json.loads(line)
                        index[row["key"]] = row["completion"]
                    except (ValueError, KeyError, TypeError, RecursionError):
                        continue  # a torn, blank or otherwise unreadable line
            self._index = index
        return self._index

    def get(self, key: str) -> Completion | None:
        """The cached completion for ``key``, if any."""
        found = self._load().get(key)
        if found is None:
            return None
        try:
            return Completion.model_validate(found)
        except ValidationError:
            return None  # a line that is JSON but not a completion: ask again rather than crash

    def put(self, key: str, completion: Completion) -> None:
        """Append one completion (flushed, not fsynced: losing it only costs one request again)."""
        index = self._load()
        doc = completion.model_dump(mode="json")
        if self._segment is None:
            self.root.mkdir(parents=True, exist_ok=True)
            name = f"{os.getpid()}-{time.time_ns()}-{os.urandom(3).hex()}.jsonl"
            # a lone surrogate can only sit inside a JSON string: written as its \\u escape, it reads back
            self._segment = (self.root / name).open(
                "a", encoding="utf-8", errors="backslashreplace"
            )
        row = {"schema": SCHEMA, "key": key, "completion": doc}
        self._segment.write(json.dumps(row, ensure_ascii=False) + "\n")
        self._segment.flush()
        index[key] = doc

    def close(self) -> None:
        """Close this writer's segment."""
        if self._segment is not None:
            self._segment.close()
            self._segment = None
