"""Atrium for the observability scenario, in a server process of its own: the observability
plugin alone, the catalog one component, the metrics cache in this process's memory, then in
Redis when one answers, and two routes of the benchmark's own in front of the app.

Redis is ``ATRIUM_BENCH_REDIS_URL``, else 127.0.0.1:6379 if it answers; the scenario gives the
server a key prefix of its own and deletes its keys afterwards.
"""

from __future__ import annotations

import os
from typing import Any, Final

import orjson
from starlette.responses import JSONResponse

from bench.harness import BenchFailure
from bench.harness.apps import atrium, started
from bench.observability_prometheus import SERVICE
from graph.settings import Settings
from plugins.observability import ObservabilityPlugin
from plugins.observability.metrics import Observability
from plugins.observability.settings import ObservabilitySettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch

__all__ = ["CALLS", "FORGET", "drop_keys", "load_catalog", "panel_server", "redis"]

REDIS_ENV: Final = "ATRIUM_BENCH_REDIS_URL"
LOCAL_REDIS: Final = "redis://127.0.0.1:6379/0"
CACHE_NAME: Final = "observability.metrics"
FORGET: Final = "/bench/forget"
CALLS: Final = "/bench/calls"
CATALOG: Final = f"""
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: {SERVICE}, title: Checkout Service}}
spec: {{type: service, lifecycle: production, owner: team-a}}
"""


def _bench_routes(app: Any) -> Any:
    """The app, and two routes for the benchmark in front of it: ``/bench/forget`` drops the
    metrics cache (this process's and Redis's) and ``/bench/calls`` says how many queries the
    plugin sent Prometheus; each answers that count and how many requests compiled plans
    answered."""

    async def wrapped(scope: Any, receive: Any, send: Any) -> None:
        path = scope.get("path") if scope["type"] == "http" else None
        if path not in (FORGET, CALLS):
            await app(scope, receive, send)
            return
        services = app.state.services
        observability: Observability = services.extras["observability"]
        if path == FORGET:
            cache = services.caches.caches[CACHE_NAME]
            cache.l1.clear()
            redis = cache.shared.redis
            if redis is not None:
                keys = [key async for key in redis.scan_iter(match=cache.prefix + "*")]
                if keys:
                    await redis.delete(*keys)
        plans = services.assembly.plans
        counts = {"calls": observability.calls, "plans": plans.runs if plans is not None else 0}
        await JSONResponse(counts)(scope, receive, send)

    return wrapped


def panel_server(settings_json: str, observability_json: str) -> tuple[Any, str]:
    """Atrium with the observability plugin alone, the benchmark's routes in front of it (a
    ``bench.harness.serve`` factory)."""
    settings = Settings(**orjson.loads(settings_json))
    plugin = ObservabilityPlugin(ObservabilitySettings(**orjson.loads(observability_json)))
    return _bench_routes(atrium(settings, [plugin])), settings.log_level


async def load_catalog(url: str) -> None:
    settings = Settings(database_url=url, redis_url=None, log_level="WARNING")
    async with started(settings) as app:  # applies the migrations
        result = await apply_batch(app.services.database, parse_documents(CATALOG, "bench.yaml"))
        if result.errors:
            raise BenchFailure(f"the catalog did not load: {result.errors}")


async def redis() -> tuple[str | None, str]:
    """A Redis URL and what it is, or None when none answers."""
    import redis.asyncio as aioredis

    url = os.environ.get(REDIS_ENV) or LOCAL_REDIS
    client = aioredis.Redis.from_url(url, socket_connect_timeout=2)
    try:
        await client.ping()
    except Exception:
        if os.environ.get(REDIS_ENV):
            raise BenchFailure(f"${REDIS_ENV} does not answer") from None
        return None, "no Redis answers: the metrics cache is the server's memory only"
    finally:
        await client.aclose()
    where = f"${REDIS_ENV}" if os.environ.get(REDIS_ENV) else "local Redis at 127.0.0.1:6379"
    return url, f"metrics cache: the server's memory, then Redis ({where})"


async def drop_keys(url: str, prefix: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()
