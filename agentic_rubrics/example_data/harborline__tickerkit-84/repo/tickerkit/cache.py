"""A small in-memory store whose entries expire after a fixed time-to-live."""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Any

from tickerkit.constants import DEFAULT_MAXSIZE


@dataclass(frozen=True)
class CacheInfo:
    """Counters reported by :meth:`TTLCache.info`."""

    hits: int
    misses: int
    size: int
    maxsize: int


class TTLCache:
    """A mapping-like store with per-entry expiry and least-recently-used eviction.

    Args:
        ttl: seconds an entry stays valid after it was stored.
        maxsize: the most entries kept; storing one more evicts the least recently used.
        clock: a zero-argument callable returning seconds; ``time.monotonic`` by default.
    """

    def __init__(
        self,
        ttl: float,
        maxsize: int = DEFAULT_MAXSIZE,
        clock: Callable[[], float] | None = None,
    ) -> None:
        if ttl <= 0:
            raise ValueError("ttl must be positive")
        if maxsize < 1:
            raise ValueError("maxsize must be at least 1")
        self.ttl = float(ttl)
        self.maxsize = maxsize
        self._clock = clock or time.monotonic
        self._data: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()
        self.hits = 0
        self.misses = 0

    def __len__(self) -> int:
        self._expire()
        return len(self._data)

    def __contains__(self, key: Hashable) -> bool:
        entry = self._data.get(key)
        return entry is not None and entry[0] > self._clock()

    def __repr__(self) -> str:
        return f"TTLCache(ttl={self.ttl}, maxsize={self.maxsize}, size={len(self)})"

    def get(self, key: Hashable, default: Any = None) -> Any:
        """The live value stored under ``key``, or ``default``; counts a hit or a miss."""
        entry = self._data.get(key)
        if entry is not None:
            expires, value = entry
            if expires > self._clock():
                self._data.move_to_end(key)
                self.hits += 1
                return value
            del self._data[key]
        self.misses += 1
        return default

    def set(self, key: Hashable, value: Any) -> None:
        """Store ``value`` under ``key`` for ``ttl`` seconds, evicting the oldest entry if full."""
        self._data[key] = (self._clock() + self.ttl, value)
        self._data.move_to_end(key)
        while len(self._data) > self.maxsize:
            self._data.popitem(last=False)

    def pop(self, key: Hashable, default: Any = None) -> Any:
        """Remove ``key`` and return its value (expired or not), or ``default``."""
        entry = self._data.pop(key, None)
        return default if entry is None else entry[1]

    def clear(self) -> None:
        """Drop every entry and reset the counters."""
        self._data.clear()
        self.hits = 0
        self.misses = 0

    def info(self) -> CacheInfo:
        """Hit and miss counters and the current size."""
        return CacheInfo(self.hits, self.misses, len(self), self.maxsize)

    def _expire(self) -> None:
        now = self._clock()
        stale = [key for key, (expires, _) in self._data.items() if expires <= now]
        for key in stale:
            del self._data[key]
