"""The multi-level cache: bounds, single flight, Redis shared by replicas, Redis going away."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from loaders.announce import publish_invalidation
from loaders.cache import MultiLevelCache, json_codec
from loaders.cache_first import CacheFirstLoader
from loaders.catalog import ENTITY_CACHE
from loaders.memory import MISSING, CacheStats, MemoryCache
from loaders.shared import SharedRedis
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client, redis_server

COMPONENT = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: cached, title: {title}}}
spec: {{type: service, lifecycle: production, owner: team-a}}
"""
TITLE = '{ entity(ref: "component:cached") { title } }'


def test_memory_cache_bounds_entries_bytes_and_age(monkeypatch: pytest.MonkeyPatch) -> None:
    cache = MemoryCache(max_entries=3, max_bytes=1000, ttl=10)
    for i in range(5):
        cache.set(f"k{i}", i, size=10)
    assert len(cache) == 3 and cache.get("k0") is not cache.get("k4")
    cache.set("big", "x", size=995)
    assert len(cache) == 1 and cache.bytes == 995
    clock = [100.0]
    monkeypatch.setattr("loaders.memory.time.monotonic", lambda: clock[0])
    cache.set("old", 1, size=1)
    clock[0] += 11
    assert cache.get("old") is not cache.get("big") and "old" not in cache._items


async def test_a_hundred_concurrent_misses_make_one_source_call() -> None:
    encode, decode = json_codec()
    cache = MultiLevelCache(
        "x",
        MemoryCache(max_entries=10, max_bytes=10_000, ttl=60),
        shared=SharedRedis(None, "t", CacheStats()),
        ttl=60,
        encode=encode,
        decode=decode,
    )
    calls: list[list[str]] = []

    async def source(keys: list[str]) -> dict[str, Any]:
        calls.append(keys)
        await asyncio.sleep(0.05)
        return {k: {"value": k} for k in keys}

    results = await asyncio.gather(*(cache.load_many(["hot"], source) for _ in range(100)))
    assert calls == [["hot"]]
    assert all(r == [{"value": "hot"}] for r in results)


async def _start(make_client: AppFactory, redis_url: str, prefix: str) -> Client:
    return await make_client(redis_url=redis_url, cache_prefix=prefix)  # type: ignore[no-any-return]


async def test_a_write_on_one_replica_is_never_served_stale_by_another(
    make_client: AppFactory, redis_url: str, cache_prefix: str
) -> None:
    a = await _start(make_client, redis_url, cache_prefix)
    b = await _start(make_client, redis_url, cache_prefix)
    await apply_batch(a.services.db, parse_documents(COMPONENT.format(title="One"), "c.yaml"))
    assert (await a.gql(TITLE))["data"]["entity"]["title"] == "One"
    assert (await b.gql(TITLE))["data"]["entity"]["title"] == "One"
    # b found it in Redis (L2), filled by a.
    assert b.services.caches.stats.counts.get(("l2", "hit"), 0) >= 1
    queries = a.services.db.queries
    assert (await a.gql(TITLE))["data"]["entity"]["title"] == "One"
    assert a.services.db.queries == queries, "served from L1 without SQL"

    token = await b.admin_token()
    mutation = 'mutation($y: String!) { applyEntities(yaml: $y, location: "c.yaml") { updated } }'
    done = await b.gql(mutation, {"y": COMPONENT.format(title="Two")}, token=token)
    assert done["data"]["applyEntities"]["updated"] == ["component:default/cached"]
    assert (await b.gql(TITLE))["data"]["entity"]["title"] == "Two"
    for _ in range(100):  # the invalidation reaches a over Redis pub/sub
        if (await a.gql(TITLE))["data"]["entity"]["title"] == "Two":
            break
        await asyncio.sleep(0.02)
    assert (await a.gql(TITLE))["data"]["entity"]["title"] == "Two"


async def test_a_change_leaves_this_process_before_anything_waits(
    make_client: AppFactory, redis_url: str, cache_prefix: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every cache and subscriber drops what this process holds before the first await (Redis's
    deletes): a request served between two awaits (the hot path answers from memory without
    yielding) finds all of a change or none of it, never a whole response cached before it."""
    client = await _start(make_client, redis_url, cache_prefix)
    caches = client.services.caches
    told: list[str] = []

    class Spy:
        def drop_local(self, keys: list[str]) -> None:
            told.append("local")

        async def drop_shared(self, keys: list[str]) -> None:
            told.append("shared")

        def clear_local(self) -> None:
            told.append("cleared")

    caches.subscribers[:0] = [Spy()]
    caches.subscribers.append(Spy())
    entities = caches.cache(ENTITY_CACHE, *json_codec())
    drop_shared = entities.drop_shared

    async def deleting(keys: list[str]) -> None:
        told.append("shared")
        await drop_shared(keys)

    monkeypatch.setattr(entities, "drop_shared", deleting)
    await caches.invalidate(["component:default/cached"])
    assert told == ["local", "local", "shared", "shared", "shared"]


async def test_other_processes_announce_their_writes(
    make_client: AppFactory, redis_url: str, cache_prefix: str
) -> None:
    a = await _start(make_client, redis_url, cache_prefix)
    await apply_batch(a.services.db, parse_documents(COMPONENT.format(title="One"), "c.yaml"))
    assert (await a.gql(TITLE))["data"]["entity"]["title"] == "One"
    await apply_batch(a.services.db, parse_documents(COMPONENT.format(title="Two"), "c.yaml"))
    await publish_invalidation(
        redis_url, cache_prefix, ["component:default/cached"]
    )  # as the CLI does
    for _ in range(100):
        if (await a.gql(TITLE))["data"]["entity"]["title"] == "Two":
            break
        await asyncio.sleep(0.02)
    assert (await a.gql(TITLE))["data"]["entity"]["title"] == "Two"


async def test_redis_going_away_mid_run(make_client: AppFactory, cache_prefix: str) -> None:
    with redis_server() as url:
        client = await _start(make_client, url, cache_prefix)
        await apply_batch(
            client.services.db, parse_documents(COMPONENT.format(title="One"), "c.yaml")
        )
        assert (await client.gql(TITLE))["data"]["entity"]["title"] == "One"
    # Redis is gone: L1 serves, the database fills in, and it is counted.
    assert (await client.gql(TITLE))["data"]["entity"]["title"] == "One"
    client.services.caches.caches[ENTITY_CACHE].l1.clear()
    assert (await client.gql(TITLE))["data"]["entity"]["title"] == "One"
    metrics = (await client.get("/metrics")).text
    assert 'atrium_cache_lookups{level="l2",outcome="error"}' in metrics
    assert 'atrium_cache_lookups{level="l1",outcome="hit"}' in metrics


async def test_without_redis_each_process_caches_alone(client: Client) -> None:
    await apply_batch(client.services.db, parse_documents(COMPONENT.format(title="One"), "c.yaml"))
    await client.gql(TITLE)
    queries = client.services.db.queries
    await client.gql(TITLE)
    assert client.services.db.queries == queries
    assert client.services.caches.redis is None


async def test_keys_the_in_process_cache_holds_are_answered_without_a_batch() -> None:
    encode, decode = json_codec()
    stats = CacheStats()
    cache = MultiLevelCache(
        "x",
        MemoryCache(max_entries=10, max_bytes=10_000, ttl=60),
        shared=SharedRedis(None, "t", stats),
        ttl=60,
        encode=encode,
        decode=decode,
    )
    batches: list[list[str]] = []
    tags: set[str] = set()

    async def source(keys: list[str]) -> dict[str, Any]:
        return {k: f"value of {k}" for k in keys if k != "absent"}

    async def load(keys: list[str]) -> list[Any]:
        batches.append(keys)
        tags.update(keys)
        return await cache.load_many(keys, source)

    def peek(key: str) -> Any:
        value = cache.peek(key)
        if value is not MISSING:
            tags.add(key)
        return value

    await cache.load_many(["warm", "also-warm"], source)
    stats.counts.clear()
    loader = CacheFirstLoader(load, peek)
    # Held: a future already done, so awaiting it does not give up the loop; no batch.
    future = loader.load("warm")
    assert isinstance(future, asyncio.Future) and future.done()
    assert await future == "value of warm" and tags == {"warm"}
    assert stats.counts == {("l1", "hit"): 1}
    many = loader.load_many(["warm", "also-warm"])
    assert isinstance(many, asyncio.Future) and many.done()
    assert await many == ["value of warm", "value of also-warm"]
    assert loader.load("warm") is future  # the request's own cache first
    # Not held: batched as DataLoader batches, the hits of the same call answered alongside.
    assert await loader.load_many(["warm", "cold", "absent"]) == [
        "value of warm",
        "value of cold",
        None,
    ]
    assert batches == [["cold", "absent"]]
    assert tags == {"warm", "also-warm", "cold", "absent"}
    # A failed load is not answered from the request's cache as a value: the failure shows.
    failing = CacheFirstLoader(_failing, lambda key: MISSING)
    with pytest.raises(RuntimeError, match="source down"):
        await failing.load_many(["a", "b"])


async def _failing(keys: list[str]) -> list[Any]:
    raise RuntimeError("source down")
