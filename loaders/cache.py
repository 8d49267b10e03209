"""The multi-level cache behind loaders: L1 in this process, L2 in Redis, shared by replicas.

A loader asks L1, then L2, then its source, and fills both. Concurrent misses on one key share
one source call (single flight). Writers name what changed (entity refs); every replica drops
those keys from L1 on a Redis pub/sub message, and the writer deletes them from L2. Without
Redis, L1 alone; with Redis down, requests go on from L1 and the source, a metric counts the
failures and a log line says so once a minute.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol

import orjson

from loaders.memory import MISSING, CacheStats, MemoryCache
from loaders.shared import SharedRedis

__all__ = ["Caches", "MultiLevelCache", "Subscriber", "json_codec"]

log = logging.getLogger("atrium.cache")


Encode = Callable[[Any], bytes]
Decode = Callable[[bytes], Any]


class MultiLevelCache:
    """One namespace of cached values (say, entities by ref), L1 then L2 then the source."""

    def __init__(
        self,
        name: str,
        l1: MemoryCache,
        *,
        shared: SharedRedis,
        ttl: float,
        encode: Encode,
        decode: Decode,
    ) -> None:
        self.name = name
        self.l1 = l1
        self.shared = shared
        self.prefix = f"{shared.prefix}:{name}:"
        self.ttl = ttl
        self.encode = encode
        self.decode = decode
        self.stats = shared.stats
        self._flights: dict[str, asyncio.Future[Any]] = {}
        # Keys that changed while being fetched: what the fetch read may predate the change,
        # so it is handed to the callers waiting for it but not kept.
        self._stale: set[str] = set()

    def peek(self, key: str) -> Any:
        """The value L1 holds for ``key`` (counted as a hit), or ``MISSING`` (not counted: the
        batch that fetches it counts the miss)."""
        value = self.l1.get(key)
        if value is not MISSING:
            self.stats.add("l1", "hit")
        return value

    async def load_many(
        self, keys: list[str], source: Callable[[list[str]], Awaitable[dict[str, Any]]]
    ) -> list[Any]:
        """Values for ``keys`` (None where the source has none), each fetched at most once
        however many callers ask for it at the same time."""
        found: dict[str, Any] = {}
        wanted: list[str] = []
        for key in dict.fromkeys(keys):
            value = self.l1.get(key)
            if value is MISSING:
                wanted.append(key)
            else:
                found[key] = value
        self.stats.add("l1", "hit", len(found))
        self.stats.add("l1", "miss", len(wanted))
        waiting = {k: self._flights[k] for k in wanted if k in self._flights}
        mine = [k for k in wanted if k not in waiting]
        if mine:
            loop = asyncio.get_running_loop()
            futures = {k: loop.create_future() for k in mine}
            self._flights.update(futures)
            try:
                fetched = await self._fetch(mine, source)
                for key, future in futures.items():
                    future.set_result(fetched.get(key))
                found.update({k: fetched.get(k) for k in mine})
            except BaseException as exc:
                for future in futures.values():
                    if not future.done():
                        future.set_exception(exc)
                        future.exception()  # retrieved here: the callers see it below
                raise
            finally:
                for key in mine:
                    self._flights.pop(key, None)
                self._stale.difference_update(mine)
        for key, future in waiting.items():
            found[key] = await asyncio.shield(future)
        return [found.get(k) for k in keys]

    async def _fetch(
        self, keys: list[str], source: Callable[[list[str]], Awaitable[dict[str, Any]]]
    ) -> dict[str, Any]:
        found: dict[str, Any] = {}
        remote = await self._l2_get(keys)
        for key, raw in zip(keys, remote, strict=True):
            if raw is not None:
                found[key] = self.decode(raw)
        self.stats.add("l2", "hit", len(found))
        missing = [k for k in keys if k not in found]
        self.stats.add("l2", "miss", len(missing))
        if missing:
            loaded = await source(missing)
            found.update(loaded)
            await self._l2_set(
                {k: v for k, v in loaded.items() if v is not None and k not in self._stale}
            )
        for key in keys:
            value = found.get(key)
            # Absence is not cached: a new entity shows at once.
            if value is not None and key not in self._stale:
                self.l1.set(key, value)
        return found

    def drop_local(self, keys: Iterable[str]) -> None:
        for key in keys:
            self.l1.discard(key)
            if key in self._flights:
                self._stale.add(key)

    async def drop_shared(self, keys: list[str]) -> None:
        """Delete these keys from Redis (L2)."""
        if keys and self.shared.usable():
            try:
                await self.shared.redis.delete(*(self.prefix + k for k in keys))
            except Exception as exc:
                self.shared.failed(exc, self.name)

    async def _l2_get(self, keys: list[str]) -> list[bytes | None]:
        if not keys or not self.shared.usable():
            return [None] * len(keys)
        try:
            values: list[bytes | None] = await self.shared.redis.mget(
                [self.prefix + k for k in keys]
            )
            return values
        except Exception as exc:
            self.shared.failed(exc, self.name)
            return [None] * len(keys)

    async def _l2_set(self, items: dict[str, Any]) -> None:
        if not items or not self.shared.usable():
            return
        try:
            async with self.shared.redis.pipeline(transaction=False) as pipe:
                for key, value in items.items():
                    pipe.set(self.prefix + key, self.encode(value), px=int(self.ttl * 1000))
                await pipe.execute()
        except Exception as exc:
            self.shared.failed(exc, self.name)


def json_codec() -> tuple[Encode, Decode]:
    return (lambda v: orjson.dumps(v)), orjson.loads


class Caches:
    """Every cache of the app, their Redis, and the invalidation channel between replicas.

    A change is dropped everywhere: here at once (L1 and Redis), in other replicas when the
    message reaches them. A replica receiving it drops its L1 and deletes the Redis keys again:
    it may have stored something it read before the change, after the writer's delete.
    """

    def __init__(
        self,
        *,
        redis: Any,
        prefix: str,
        max_entries: int,
        max_bytes: int,
        ttl: float,
    ) -> None:
        self.prefix = prefix
        self.channel = f"{prefix}:invalidate"
        self.stats = CacheStats()
        self.shared = SharedRedis(redis, prefix, self.stats)
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self.ttl = ttl
        self.caches: dict[str, MultiLevelCache] = {}
        # Other caches told of every change (the whole-response cache).
        self.subscribers: list[Subscriber] = []
        self._listener: asyncio.Task[None] | None = None
        self._listening = asyncio.Event()  # subscribed to the channel now
        self._closing = False

    @property
    def redis(self) -> Any:
        return self.shared.redis

    def cache(
        self, name: str, encode: Encode, decode: Decode, *, ttl: float | None = None
    ) -> MultiLevelCache:
        """The cache ``name`` (made at first use), its entries kept ``ttl`` seconds in both
        levels (the app's TTL unless given)."""
        if name not in self.caches:
            ttl = self.ttl if ttl is None else ttl
            l1 = MemoryCache(max_entries=self.max_entries, max_bytes=self.max_bytes, ttl=ttl)
            self.caches[name] = MultiLevelCache(
                name, l1, shared=self.shared, ttl=ttl, encode=encode, decode=decode
            )
        return self.caches[name]

    async def invalidate(self, keys: Iterable[str]) -> None:
        """Drop these keys here, from Redis, and (by a message) from every other replica."""
        keys = sorted(set(keys))
        if not keys:
            return
        await self._drop(keys)
        if self.shared.usable():
            try:
                await self.redis.publish(self.channel, orjson.dumps(keys))
            except Exception as exc:
                self.shared.failed(exc, "invalidations")

    async def _drop(self, keys: list[str]) -> None:
        # What this process holds goes first, all of it before the first await: a request
        # served meanwhile (the hot path answers from memory without yielding) finds either
        # none of the change or all of it, never a response cached from before it.
        for cache in self.caches.values():
            cache.drop_local(keys)
        for subscriber in self.subscribers:
            subscriber.drop_local(keys)
        for cache in self.caches.values():
            await cache.drop_shared(keys)
        for subscriber in self.subscribers:
            await subscriber.drop_shared(keys)

    def clear_local(self) -> None:
        """Forget everything this process holds (L1 and the subscribers' local entries)."""
        for cache in self.caches.values():
            cache.l1.clear()
        for subscriber in self.subscribers:
            subscriber.clear_local()

    async def start(self, wait: float = 2.0) -> None:
        """Listen to other replicas' changes. Returns once listening, so that a replica
        never serves what it could not hear change, or after ``wait`` seconds when Redis does
        not answer (the listener keeps trying; requests go on from L1 and the database)."""
        if self.redis is not None:
            self._listener = asyncio.create_task(self._listen(), name="cache invalidations")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._listening.wait(), wait)

    async def stop(self) -> None:
        self._closing = True
        if self._listener is not None:
            # redis-py may swallow a cancellation in the middle of a read: cancel again until
            # the listener ends, and never wait on it for more than a few seconds in all.
            for _ in range(10):
                self._listener.cancel()
                done, _ = await asyncio.wait({self._listener}, timeout=0.5)
                if done:
                    break
            else:
                log.warning("the cache invalidation listener did not stop; left behind")
        if self.redis is not None:
            await self.redis.aclose()

    async def _listen(self) -> None:
        """Drop what other replicas changed; reconnect with a pause when Redis goes away.
        A replica that missed messages while Redis was away clears its L1: it cannot know
        what changed meanwhile."""
        missed = False
        # redis-py may turn a cancellation during a command into a connection error: the flag,
        # not the cancellation alone, ends the loop.
        while not self._closing:
            try:
                async with self.redis.pubsub() as pubsub:
                    await pubsub.subscribe(self.channel)
                    if missed:
                        self.clear_local()
                        missed = False
                    async for message in pubsub.listen():
                        if message.get("type") == "subscribe":  # Redis confirms: listening
                            self._listening.set()
                        if message.get("type") != "message":
                            continue
                        await self._drop(orjson.loads(message["data"]))
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                if self._closing:
                    return
                missed = True
                self._listening.clear()
                self.stats.add("l2", "error")
                log.warning("cache invalidation channel lost; retrying", extra={"error": str(exc)})
                await asyncio.sleep(1.0)


class Subscriber(Protocol):
    """A cache that is told of changes along with the loaders' caches: first what this
    process holds (``drop_local``, never awaiting), then what it shares in Redis."""

    def drop_local(self, keys: list[str]) -> None: ...

    async def drop_shared(self, keys: list[str]) -> None: ...

    def clear_local(self) -> None: ...
