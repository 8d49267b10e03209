"""The in-process level of Atrium's caches: a bounded LRU with a TTL per entry, and the
hit and miss counts every level keeps for /metrics."""

from __future__ import annotations

import sys
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any, Final

__all__ = ["MISSING", "CacheStats", "MemoryCache"]

# What a lookup returns for a key it does not hold (None is a value like any other).
MISSING: Final = object()


@dataclass(slots=True)
class CacheStats:
    """Hits and misses per level, for /metrics."""

    counts: dict[tuple[str, str], int] = field(default_factory=dict)

    def add(self, level: str, outcome: str, n: int = 1) -> None:
        if n:
            self.counts[level, outcome] = self.counts.get((level, outcome), 0) + n


class MemoryCache:
    """L1: an LRU bounded by entries and by (approximate) bytes, each entry with a TTL."""

    def __init__(
        self,
        *,
        max_entries: int,
        max_bytes: int,
        ttl: float,
        on_drop: Callable[[Hashable], None] | None = None,
    ) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl = ttl
        self.on_drop = on_drop  # told of every key that leaves, however it leaves
        self.bytes = 0
        self._items: OrderedDict[Hashable, tuple[float, int, Any]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._items)

    def get(self, key: Hashable) -> Any:
        item = self._items.get(key)
        if item is None:
            return MISSING
        expires, _, value = item
        if expires < time.monotonic():
            self.discard(key)
            return MISSING
        self._items.move_to_end(key)
        return value

    def peek(self, key: Hashable) -> Any:
        """What ``key`` holds, expired or not, without making it recently used."""
        item = self._items.get(key)
        return MISSING if item is None else item[2]

    def touch(self, key: Hashable) -> None:
        """Make ``key`` recently used, as a lookup would, if it is held."""
        if key in self._items:
            self._items.move_to_end(key)

    def set(
        self, key: Hashable, value: Any, size: int | None = None, ttl: float | None = None
    ) -> None:
        self.discard(key)
        size = size if size is not None else sys.getsizeof(value)
        self._items[key] = (time.monotonic() + (self.ttl if ttl is None else ttl), size, value)
        self.bytes += size
        while self._items and (len(self._items) > self.max_entries or self.bytes > self.max_bytes):
            dropped_key, (_, dropped, _) = self._items.popitem(last=False)
            self.bytes -= dropped
            if self.on_drop is not None:
                self.on_drop(dropped_key)

    def discard(self, key: Hashable) -> None:
        item = self._items.pop(key, None)
        if item is not None:
            self.bytes -= item[1]
            if self.on_drop is not None:
                self.on_drop(key)

    def clear(self) -> None:
        if self.on_drop is not None:
            for key in self._items:
                self.on_drop(key)
        self._items.clear()
        self.bytes = 0
