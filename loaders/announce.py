"""Announcing changes from a process without caches of its own (the CLI): the shared entries
go from Redis, and the serving replicas hear of it on the invalidation channel."""

from __future__ import annotations

import logging
from collections.abc import Iterable

import orjson

from loaders.catalog import ENTITY_CACHE
from loaders.responses import drop_shared_responses

__all__ = ["publish_invalidation"]

log = logging.getLogger("atrium.cache")


async def publish_invalidation(redis_url: str | None, prefix: str, keys: Iterable[str]) -> None:
    """For processes without caches of their own (the CLI): drop the shared entries and tell
    the serving replicas."""
    keys = sorted(set(keys))
    if not redis_url or not keys:
        return
    import redis.asyncio as aioredis

    client = aioredis.from_url(redis_url, socket_timeout=2, socket_connect_timeout=2)
    try:
        await client.delete(*(f"{prefix}:{ENTITY_CACHE}:{k}" for k in keys))
        await drop_shared_responses(client, prefix, keys)
        await client.publish(f"{prefix}:invalidate", orjson.dumps(keys))
    except Exception as exc:
        log.warning("could not announce changes to the caches", extra={"error": str(exc)})
    finally:
        await client.aclose()
