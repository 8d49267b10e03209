"""Whole answers of persisted queries, kept while their cache policy allows and dropped when
anything they were made of changes.

An answer is stored with the tags of what it read (entity refs, ``kind:<kind>`` for lists of a
kind, ``catalog`` for anything wider, plugins' own keys). A change to an entity ref drops the
answers tagged with that ref, with its kind and with ``catalog``; any other key drops the
answers tagged with it alone (the rules: loaders.change_keys). L1 is in this process, indexed
by tag; L2 is Redis, where each tag is a set of the answers' keys.

An answer computed while a change it depends on was being written could hold the old data:
each replica numbers the changes it hears of, and an answer whose tags changed after its
execution began is served but not kept.
"""

from __future__ import annotations

import hashlib
import time
from collections import deque
from collections.abc import Callable, Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from loaders.change_keys import tags_changed_by
from loaders.memory import MISSING, CacheStats, MemoryCache
from loaders.shared import SharedRedis
from sources.auth import Viewer

__all__ = [
    "CachedAnswer",
    "ResponseCache",
    "answer_keys",
    "drop_shared_responses",
    "etag_of",
    "shared_answer_key",
    "tags_changed_by",
    "viewer_answer_key",
]

# The wall clock answers are aged by: one name, so that tests can hold time still.
clock: Callable[[], float] = time.time
# How many recent changes a replica remembers to check answers being computed against.
_RECENT_CHANGES = 1024


@dataclass(frozen=True, slots=True)
class CachedAnswer:
    body: bytes
    etag: str
    max_age: int
    private: bool
    stored_at: float  # wall clock, so replicas sharing L2 agree on an answer's age

    @property
    def age(self) -> int:
        return max(0, int(clock() - self.stored_at))

    @property
    def remaining(self) -> float:
        return self.max_age - (clock() - self.stored_at)

    def encode(self, tags: frozenset[str]) -> bytes:
        return orjson.dumps(
            [
                self.body.decode(),
                self.etag,
                self.max_age,
                self.private,
                self.stored_at,
                sorted(tags),
            ]
        )

    @classmethod
    def decode(cls, raw: bytes) -> tuple[CachedAnswer, frozenset[str]]:
        body, etag, max_age, private, stored_at, tags = orjson.loads(raw)
        return cls(body.encode(), etag, max_age, private, stored_at), frozenset(tags)


def etag_of(body: bytes) -> str:
    return '"' + hashlib.blake2b(body, digest_size=16).hexdigest() + '"'


def answer_keys(
    digest: str, operation_name: str | None, variables: str, viewer: Viewer
) -> tuple[str, str]:
    """The keys an answer may be kept under: the one everyone shares (every field it read
    is public), and the viewer's own. ``variables`` is their canonical JSON."""
    shared = shared_answer_key(digest, operation_name, variables)
    return shared, viewer_answer_key(shared, viewer)


def shared_answer_key(digest: str, operation_name: str | None, variables: str) -> str:
    return f"public|{digest}|{operation_name or ''}|{variables}"


def viewer_answer_key(shared: str, viewer: Viewer) -> str:
    return f"viewer|{viewer.via}|{viewer.ref}|{viewer.token_name}|{shared[7:]}"


async def drop_shared_responses(redis: Any, prefix: str, keys: Iterable[str]) -> None:
    """Delete from Redis the answers tagged with anything these keys change."""
    tag_keys = [f"{prefix}:rtag:{tag}" for tag in sorted(tags_changed_by(keys))]
    if not tag_keys:
        return
    async with redis.pipeline(transaction=False) as pipe:
        for tag_key in tag_keys:
            pipe.smembers(tag_key)
        members = await pipe.execute()
    doomed = {m for found in members for m in found}
    await redis.delete(*doomed, *tag_keys)


class ResponseCache:
    """Answers by key, L1 then Redis; see the module's docstring."""

    def __init__(self, *, max_entries: int, max_bytes: int, shared: SharedRedis) -> None:
        self.shared = shared
        self.prefix = f"{shared.prefix}:response:"
        self.stats: CacheStats = shared.stats
        self.l1 = MemoryCache(
            max_entries=max_entries, max_bytes=max_bytes, ttl=0, on_drop=self._forget
        )
        self._by_tag: dict[str, set[str]] = {}
        self._tags_of: dict[Hashable, frozenset[str]] = {}
        self._sequence = 0
        self._recent: deque[tuple[int, frozenset[str]]] = deque(maxlen=_RECENT_CHANGES)
        # Told of every key L1 lets go of, however it goes (graph.hot_answers listens).
        self.on_forget: Callable[[Hashable], None] | None = None

    # Reading

    async def get(self, *keys: str) -> CachedAnswer | None:
        """The first answer found under these keys (most shared first)."""
        for key in keys:
            found = self.l1.get(key)
            if found is not MISSING:
                self.stats.add("response", "hit")
                return found  # type: ignore[no-any-return]
        self.stats.add("response", "miss")
        if not self.shared.usable():
            return None
        try:
            raws = await self.shared.redis.mget([self._l2_key(k) for k in keys])
        except Exception as exc:
            self.shared.failed(exc, "response")
            return None
        for key, raw in zip(keys, raws, strict=True):
            if raw is None:
                continue
            answer, tags = CachedAnswer.decode(raw)
            remaining = answer.remaining
            if remaining <= 0:
                continue
            self.stats.add("response-l2", "hit")
            self._keep_local(key, answer, tags, remaining)
            return answer
        self.stats.add("response-l2", "miss")
        return None

    def holds(self, key: str, answer: CachedAnswer) -> bool:
        """Whether L1 holds this very answer under ``key`` now."""
        return self.l1.peek(key) is answer

    def touch(self, keys: Iterable[str]) -> None:
        """Count answers given without a lookup (graph.hot_answers) as recently used."""
        for key in keys:
            self.l1.touch(key)

    # Writing

    def begin(self) -> int:
        """Mark the start of an execution whose answer may be kept."""
        return self._sequence

    async def put(self, key: str, answer: CachedAnswer, tags: Iterable[str], since: int) -> bool:
        """Keep an answer, unless something it read changed since ``since``."""
        tags = frozenset(tags)
        if answer.max_age <= 0 or self._changed_since(since, tags):
            return False
        self._keep_local(key, answer, tags, answer.max_age)
        if self.shared.usable():
            l2_key = self._l2_key(key)
            ttl_ms = answer.max_age * 1000
            try:
                async with self.shared.redis.pipeline(transaction=False) as pipe:
                    pipe.set(l2_key, answer.encode(tags), px=ttl_ms)
                    for tag in tags:
                        tag_key = f"{self.shared.prefix}:rtag:{tag}"
                        pipe.sadd(tag_key, l2_key)
                        pipe.pexpire(tag_key, ttl_ms + 60_000, gt=True)
                        pipe.pexpire(tag_key, ttl_ms + 60_000, nx=True)
                    await pipe.execute()
            except Exception as exc:
                self.shared.failed(exc, "response")
        return True

    def _changed_since(self, since: int, tags: frozenset[str]) -> bool:
        if since == self._sequence:
            return False
        if not self._recent or self._recent[0][0] > since + 1:
            return True  # more changes than remembered: assume the worst
        return any(seq > since and not changed.isdisjoint(tags) for seq, changed in self._recent)

    def _keep_local(self, key: str, answer: CachedAnswer, tags: frozenset[str], ttl: float) -> None:
        self.l1.set(key, answer, size=len(answer.body) + 200, ttl=ttl)
        self._tags_of[key] = tags
        for tag in tags:
            self._by_tag.setdefault(tag, set()).add(key)

    def _forget(self, key: Hashable) -> None:
        if self.on_forget is not None:
            self.on_forget(key)
        for tag in self._tags_of.pop(key, ()):
            keys = self._by_tag.get(tag)
            if keys is not None:
                keys.discard(key)
                if not keys:
                    del self._by_tag[tag]

    def _l2_key(self, key: str) -> str:
        return self.prefix + hashlib.blake2b(key.encode(), digest_size=20).hexdigest()

    # Changes (the Caches' subscriber protocol)

    def drop_local(self, keys: list[str]) -> None:
        tags = tags_changed_by(keys)
        self._sequence += 1
        self._recent.append((self._sequence, frozenset(tags)))
        for tag in tags:
            for key in list(self._by_tag.get(tag, ())):
                self.l1.discard(key)

    async def drop_shared(self, keys: list[str]) -> None:
        if self.shared.usable():
            try:
                await drop_shared_responses(self.shared.redis, self.shared.prefix, keys)
            except Exception as exc:
                self.shared.failed(exc, "response")

    def clear_local(self) -> None:
        self._sequence += 1
        self._recent.clear()  # every answer being computed now is suspect
        self.l1.clear()
