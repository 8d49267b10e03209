"""``make bench --only observability``: a component's metrics panel (``Component.metrics``,
five PromQL series over the last hour) answered by Atrium, uncached and from its metrics cache,
against Prometheus's own answer time for the same five range queries, in the same run.

Prometheus is Debian's (``prometheus`` and ``promtool`` on the PATH, as ``make test`` installs
them), its history backfilled: one service over the last 24 hours (2 with ``short``) at 15 s
resolution (``bench.observability_prometheus``).

Atrium runs under uvicorn in a process of its own, as ``atrium serve`` runs a worker, with the
observability plugin alone, the catalog one component in a scratch database, and Redis when one
answers (``ATRIUM_BENCH_REDIS_URL``, else 127.0.0.1:6379), under a key prefix of its own deleted
afterwards: the metrics cache is then this process's memory, then Redis, as in production. The
panel is asked as a POST of the query's text (no persisted query: the whole-response cache never
answers it, and the generic executor runs it), and, from the warm metrics cache, also as the
console asks it: a persisted POST, run on its compiled plan (the response cache is off, so the
plan runs every time; the server's count of plan runs checks that it did). Before each uncached
request the server drops the metrics cache, both levels, through a route wrapped around the app
(``/bench/forget``, in ``bench.observability_server``; outside the timed request); the cached
requests follow it in the same step-aligned window, so they find the answers the uncached one
kept.

Prometheus's own figure is the five ``/api/v1/query_range`` GETs the panel makes (the queries
from ``Observability.queries``, the window from ``metrics.window`` at that moment), from the
same kind of httpx client, one after another as the resolver awaits them (fields.py), and, for
comparison, all five at once. The body is read, not parsed (Atrium's parsing is part of its
cost). Rounds alternate the order of Prometheus and Atrium so the machine's drift hits both.
Printed: median and p95, each as a ratio to Prometheus answering the five queries one after
another, and the queries Prometheus was sent while the cache was warm (from the plugin's own
count, checked against Prometheus's query log).
"""

from __future__ import annotations

import asyncio
import os
import secrets
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import httpx
import orjson

from bench.harness.database import scratch_database
from bench.harness.persisted import extensions
from bench.harness.servers import Server, running_servers
from bench.harness.timing import percentile
from bench.observability_prometheus import (
    RESOLUTION,
    SERVICE,
    RunningPrometheus,
    history,
    running_prometheus,
)
from bench.observability_server import CALLS, FORGET, drop_keys, load_catalog, panel_server, redis
from plugins.observability.metrics import COMPONENT_SERIES, Observability, window
from plugins.observability.settings import ObservabilitySettings

__all__ = ["run_observability"]

REF: Final = f"component:{SERVICE}"
SINCE: Final = 3600  # the panel's default range
MARGIN_S: Final = 1.0  # a round starts at least this long before the window moves on
PANEL: Final = (
    f'{{ entity(ref: "{REF}") {{ ... on Component {{ metrics(since: {SINCE}) '
    "{ name labels query points } } } }"
)
LABELS: Final = {
    "prometheus": "Prometheus: the 5 range queries, one after another",
    "prometheus_concurrent": "Prometheus: the 5 range queries at once",
    "uncached": "Atrium: metrics panel, uncached",
    "cached": "Atrium: metrics panel, metrics cache warm",
    "compiled": "Atrium: the same, persisted (its compiled plan)",
}


# --- Measuring. -----------------------------------------------------------------------------


@dataclass(slots=True)
class Panel:
    """What the panel asks Prometheus and how Atrium answers it."""

    queries: list[str]
    settings: ObservabilitySettings
    points: int = 0
    bytes: int = 0


async def _timed(samples: list[float], call: Callable[[], Awaitable[None]]) -> None:
    started = time.perf_counter()
    await call()
    samples.append((time.perf_counter() - started) * 1000)


def _check_panel(server: Server, response: httpx.Response, panel: Panel) -> None:
    """The first answer in full: five series, a point per step, the request rate plausible."""
    body: Any = orjson.loads(response.content)
    if response.status_code != 200 or body.get("errors"):
        raise server.failure(f"HTTP {response.status_code}: {response.content[:600]!r}")
    series = body["data"]["entity"]["metrics"]
    names = [s["name"] for s in series]
    if names != list(COMPONENT_SERIES):
        raise server.failure(f"the panel has series {names}, not {list(COMPONENT_SERIES)}")
    span = window(SINCE, None, panel.settings, time.time())
    points = {len(s["points"]) for s in series}
    if points - {SINCE // span.step, SINCE // span.step + 1}:
        raise server.failure(f"series of {points} points, not one per {span.step} s")
    rates = [v for _, v in series[0]["points"] if v is not None]
    if not rates or not all(5 < v < 200 for v in rates):
        raise server.failure(f"implausible request rates: {rates[:10]}")
    asked = [s["query"] for s in series]
    if asked != panel.queries:
        raise server.failure(f"the panel asked {asked}, not the plugin's {panel.queries}")
    panel.points, panel.bytes = sum(len(s["points"]) for s in series), len(response.content)


async def _measure(
    server: Server, prometheus: RunningPrometheus, panel: Panel, *, rounds: int, warmup: int
) -> tuple[dict[str, list[float]], int, int]:
    """Samples (ms) by figure; queries Prometheus was sent while the cache was warm, by the
    plugin's count and by Prometheus's query log."""
    samples: dict[str, list[float]] = {name: [] for name in LABELS}
    graphql = f"http://127.0.0.1:{server.port}/graphql"
    bench = f"http://127.0.0.1:{server.port}"
    payload = orjson.dumps({"query": PANEL})
    # The console's way: the document registered once by its hash, then asked by the hash.
    persisted = extensions(PANEL)
    by_hash = orjson.dumps({"extensions": persisted})
    headers = {"content-type": "application/json"}
    query_range = f"{prometheus.url}/api/v1/query_range"
    warm_calls = warm_logged = planned = 0
    # Keep-alive clients, as the plugin's own: one for Prometheus, one for Atrium.
    async with httpx.AsyncClient(timeout=30) as prom, httpx.AsyncClient(timeout=30) as atrium:

        async def ask(query: str, params: dict[str, Any]) -> None:
            response = await prom.get(query_range, params={"query": query, **params})
            if response.status_code != 200:
                raise prometheus.failure(f"HTTP {response.status_code}: {response.text[:300]}")

        def params() -> dict[str, Any]:
            span = window(SINCE, None, panel.settings, time.time())
            return {"start": span.start, "end": span.end, "step": span.step}

        async def sequential() -> None:
            at = params()
            for query in panel.queries:
                await ask(query, at)

        async def concurrent() -> None:
            at = params()
            await asyncio.gather(*(ask(query, at) for query in panel.queries))

        async def post(content: bytes = payload) -> None:
            response = await atrium.post(graphql, content=content, headers=headers)
            if response.status_code != 200 or b'"errors"' in response.content:
                raise server.failure(f"HTTP {response.status_code}: {response.content[:600]!r}")

        async def post_persisted() -> None:
            await post(by_hash)

        async def counts(path: str) -> dict[str, int]:
            answer: dict[str, int] = (await atrium.post(bench + path)).json()
            return answer

        async def atrium_pair(mine: dict[str, list[float]], round_: int) -> None:
            nonlocal warm_calls, warm_logged, planned
            await counts(FORGET)
            await _timed(mine["uncached"], post)
            before, logged = await counts(CALLS), prometheus.queries()
            warm = [("cached", post), ("compiled", post_persisted)]
            for name, call in warm[:: 1 if round_ % 2 else -1]:
                await _timed(mine[name], call)
            after = await counts(CALLS)
            warm_calls += after["calls"] - before["calls"]
            planned += after["plans"] - before["plans"]
            await asyncio.sleep(0.05)  # the query log is written as queries end
            warm_logged += prometheus.queries() - logged

        async def prometheus_pair(mine: dict[str, list[float]]) -> None:
            await _timed(mine["prometheus"], sequential)
            await _timed(mine["prometheus_concurrent"], concurrent)

        await counts(FORGET)
        _check_panel(server, await atrium.post(graphql, content=payload, headers=headers), panel)
        register = orjson.dumps({"query": PANEL, "extensions": persisted})
        _check_panel(server, await atrium.post(graphql, content=register, headers=headers), panel)
        # Its first run by the hash builds the plan; every one after runs on it.
        _check_panel(server, await atrium.post(graphql, content=by_hash, headers=headers), panel)
        step = window(SINCE, None, panel.settings, time.time()).step
        for round_ in range(-warmup, rounds):
            # Uncached then cached in one window: wait out a window about to move on.
            left = step - time.time() % step
            if left < MARGIN_S:
                await asyncio.sleep(left + 0.05)
            mine: dict[str, list[float]] = {name: [] for name in LABELS}
            if round_ % 2:
                await atrium_pair(mine, round_)
                await prometheus_pair(mine)
            else:
                await prometheus_pair(mine)
                await atrium_pair(mine, round_)
            if round_ >= 0:
                for name, values in mine.items():
                    samples[name] += values
    if planned != warmup + rounds:
        raise server.failure(
            f"compiled plans answered {planned} of the {warmup + rounds} persisted panels"
        )
    return samples, warm_calls, warm_logged


def _print(
    samples: dict[str, list[float]], panel: Panel, rounds: int, warm_calls: int, warm_logged: int
) -> None:
    base = statistics.median(samples["prometheus"])
    print(
        f"\na component's metrics panel ({len(panel.queries)} series, {panel.points} points, "
        f"{panel.bytes / 1024:.0f} KB of JSON) against Prometheus answering the same PromQL, "
        f"median of {rounds} rounds"
    )
    print(f"{'':54}{'median ms':>10}{'p95 ms':>9}{'vs Prometheus':>15}")
    for name, label in LABELS.items():
        values = samples[name]
        median = statistics.median(values)
        p95 = percentile(values, 95)
        print(f"  {label:52}{median:10.2f}{p95:9.2f}{median / base:14.2f}x")
    uncached = statistics.median(samples["uncached"])
    cached = statistics.median(samples["cached"])
    compiled = statistics.median(samples["compiled"])
    print(
        f"  the uncached panel minus Prometheus's own time: {uncached - base:.2f} ms "
        f"(the cached panel takes {cached:.2f} ms)"
    )
    print(
        f"uncached / Prometheus: {uncached / base:.2f}x; cached / Prometheus: {cached / base:.2f}x"
        f"; cached on the compiled plan / Prometheus: {compiled / base:.2f}x "
        f"({cached / compiled:.2f}x faster than the generic executor)"
    )
    print(
        f"queries sent to Prometheus by the cached requests: {warm_calls} "
        f"(Prometheus's query log: {warm_logged})"
    )


async def run_observability(
    *, short: bool, rounds: int | None = None, seed: int = 7, smoke: bool = False
) -> None:
    """``rounds``: timed rounds, each every figure once (default 200, 20 with ``short``, 1
    after 1 warm-up round with ``smoke``)."""
    begun = time.perf_counter()
    rounds = rounds or (1 if smoke else 20 if short else 200)
    warmup = 1 if smoke else 3 if short else 10
    span = 2 * 3600 if short else 86_400
    with tempfile.TemporaryDirectory(prefix="atrium-bench-prometheus-") as tmp:
        clock = time.perf_counter()
        openmetrics, count = history(span, seed, int(time.time()))
        async with running_prometheus(Path(tmp), openmetrics) as prometheus:
            backfill = time.perf_counter() - clock
            print(
                f"\nobservability: Prometheus {prometheus.url}, {span // 3600} h of one service "
                f"at {RESOLUTION} s ({count:,} samples) backfilled and started "
                f"in {backfill:.1f} s"
            )
            redis_url, redis_said = await redis()
            prefix = f"atrium-bench-{os.getpid()}-{secrets.token_hex(4)}"
            observability = {"prometheus_url": prometheus.url, "observability_timeout": 10.0}
            settings = ObservabilitySettings(**observability)  # type: ignore[arg-type]
            # The plugin's own PromQL for the service (queries() reads the settings alone).
            queries = Observability(settings, None, None, cast(Any, None)).queries(SERVICE)
            panel = Panel(list(queries.values()), settings)
            try:
                async with scratch_database() as scratch, running_servers() as servers:
                    print(f"observability: {scratch}")
                    print(f"observability: {redis_said}")
                    await load_catalog(scratch.url)
                    common: dict[str, Any] = {"database_url": scratch.url, "redis_url": redis_url}
                    common |= {"cache_prefix": prefix, "log_level": "INFO"}
                    common |= {"response_cache": False, "compiled_plans": True}
                    server = await servers.start(
                        "atrium",
                        panel_server,
                        orjson.dumps(common).decode(),
                        orjson.dumps(observability).decode(),
                    )
                    samples, warm_calls, warm_logged = await _measure(
                        server, prometheus, panel, rounds=rounds, warmup=warmup
                    )
            finally:  # once the server has stopped: it writes nothing more
                if redis_url is not None:
                    await drop_keys(redis_url, prefix)
    _print(samples, panel, rounds, warm_calls, warm_logged)
    keys = ", its Redis keys deleted" if redis_url is not None else ""
    print(
        f"\nobservability took {time.perf_counter() - begun:.0f} s; Prometheus and the server "
        f"stopped, scratch database dropped{keys}"
    )
