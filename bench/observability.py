"""``make bench --only observability``: a component's metrics panel (``Component.metrics``,
five PromQL series over the last hour) answered by Atrium, uncached and from its metrics cache,
against Prometheus's own answer time for the same five range queries, in the same run.

Prometheus is Debian's (``prometheus`` and ``promtool`` on the PATH, as ``make test`` installs
them), its history backfilled with ``promtool tsdb create-blocks-from openmetrics``: one service
over the last 24 hours (2 with ``short``) at 15 s resolution, ``http_requests_total{service,code}``
for 200 and 500 and ``http_request_duration_seconds_bucket{service,le}``, Prometheus's default
buckets and +Inf as cumulative counters; the rate follows the day, errors and latency rise in
an incident. The same recipe as the tests' server (tests/prometheus.py), kept here because the
benchmark does not import from tests/.

Atrium runs under uvicorn in a process of its own, as ``atrium serve`` runs a worker, with the
observability plugin alone, the catalog one component in a scratch database, and Redis when one
answers (``ATRIUM_BENCH_REDIS_URL``, else 127.0.0.1:6379), under a key prefix of its own deleted
afterwards: the metrics cache is then this process's memory, then Redis, as in production. The
panel is asked as a POST of the query's text (no persisted query: the whole-response cache never
answers it, and the generic executor runs it), and, from the warm metrics cache, also as the
console asks it: a persisted POST, run on its compiled plan (the response cache is off, so the
plan runs every time; the server's count of plan runs checks that it did). Before each uncached
request the server drops the metrics cache, both levels, through a route this module wraps
around the app (``/bench/forget``, outside the timed request); the cached requests follow it in
the same step-aligned window, so they find the answers the uncached one kept.

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
import contextlib
import math
import os
import random
import secrets
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, cast

import httpx
import orjson
import uvicorn
from starlette.responses import JSONResponse

from atrium.app import create_app
from atrium.cli import listening_socket, uvicorn_options
from bench.database import scratch_database
from bench.harness import BenchFailure, _percentile
from bench.serving_procs import Server, running_servers
from graph.logs import configure_logging
from graph.settings import Settings
from plugins.observability import ObservabilityPlugin
from plugins.observability.metrics import COMPONENT_SERIES, Observability, window
from plugins.observability.settings import ObservabilitySettings
from sources.persisted import document_hash

__all__ = ["run_observability"]

SERVICE: Final = "checkout"
REF: Final = f"component:{SERVICE}"
SINCE: Final = 3600  # the panel's default range
RESOLUTION: Final = 15  # seconds between backfilled samples
BUCKETS: Final = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
REDIS_ENV: Final = "ATRIUM_BENCH_REDIS_URL"
LOCAL_REDIS: Final = "redis://127.0.0.1:6379/0"
CACHE_NAME: Final = "observability.metrics"
FORGET: Final = "/bench/forget"
CALLS: Final = "/bench/calls"
MARGIN_S: Final = 1.0  # a round starts at least this long before the window moves on
CATALOG: Final = f"""
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: {SERVICE}, title: Checkout Service}}
spec: {{type: service, lifecycle: production, owner: team-a}}
"""
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


# --- Prometheus, backfilled. ----------------------------------------------------------------


def _history(span: int, seed: int, now: int) -> tuple[str, int]:
    """OpenMetrics text of one service's requests and latency histogram over ``span`` seconds:
    every series a counter (``histogram_quantile`` and ``rate`` read bucket counters alike)."""
    rng = random.Random(seed)
    times = range(now - span, now - RESOLUTION + 1, RESOLUTION)
    incident = now - span * 2 // 5  # twenty minutes of errors and slow requests
    codes = {"200": 0.0, "500": 0.0}
    buckets = dict.fromkeys([*(f"{le:g}" for le in BUCKETS), "+Inf"], 0.0)
    lines: dict[str, list[str]] = {}
    for at in times:
        day = math.sin(2 * math.pi * (at % 86_400) / 86_400)
        rate = 40.0 * (1 + 0.5 * day) * rng.uniform(0.9, 1.1)
        hit = incident <= at < incident + 1200
        errors = (0.08 if hit else 0.01) * rng.uniform(0.5, 1.5)
        median = 0.06 * (1 + 0.3 * day) * (3.0 if hit else 1.0)
        requests = rate * RESOLUTION
        codes["200"] += round(requests * (1 - errors))
        codes["500"] += round(requests * errors)
        for le in BUCKETS:  # log-normal latencies, sigma 0.6
            share = 0.5 * (1 + math.erf(math.log(le / median) / (0.6 * math.sqrt(2))))
            buckets[f"{le:g}"] += round(requests * share)
        buckets["+Inf"] += round(requests)
        for code, value in codes.items():
            key = f'http_requests_total{{service="{SERVICE}",code="{code}"}}'
            lines.setdefault(key, []).append(f"{key} {value:.0f} {at}")
        for bound, value in buckets.items():
            key = f'http_request_duration_seconds_bucket{{service="{SERVICE}",le="{bound}"}}'
            lines.setdefault(key, []).append(f"{key} {value:.0f} {at}")
    text = []
    for family in ("http_request_duration_seconds_bucket", "http_requests_total"):
        text.append(f"# TYPE {family} counter")
        for key, samples in lines.items():
            if key.partition("{")[0] == family:
                text += samples
    return "\n".join([*text, "# EOF"]) + "\n", len(times) * len(lines)


@dataclass(slots=True)
class RunningPrometheus:
    url: str
    query_log: Path
    process: asyncio.subprocess.Process
    log: Path

    def queries(self) -> int:
        """Queries it answered, from its own query log."""
        try:
            return sum(1 for line in self.query_log.read_text().splitlines() if line.strip())
        except FileNotFoundError:
            return 0

    def failure(self, what: str) -> BenchFailure:
        tail = "\n".join(self.log.read_text(errors="replace").splitlines()[-20:])
        return BenchFailure(f"prometheus: {what}\nthe end of its log:\n{tail}")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.asynccontextmanager
async def _prometheus(root: Path, history: str) -> AsyncIterator[RunningPrometheus]:
    """Prometheus on 127.0.0.1 with ``history`` backfilled; stopped on the way out."""
    prometheus, promtool = shutil.which("prometheus"), shutil.which("promtool")
    if prometheus is None or promtool is None:
        raise SystemExit(
            "observability: needs Prometheus (prometheus and promtool on the PATH): "
            "`make system-test-deps` installs Debian's"
        )
    data, source = root / "data", root / "history.om"
    source.write_text(history)
    done = await asyncio.to_thread(
        subprocess.run,
        [promtool, "tsdb", "create-blocks-from", "openmetrics", str(source), str(data)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise BenchFailure(f"promtool could not backfill: {done.stderr[-2000:]}")
    query_log, config, log = root / "queries.log", root / "prometheus.yml", root / "prometheus.log"
    config.write_text(f"global:\n  query_log_file: {query_log}\n")
    port = _free_port()
    with log.open("wb") as stderr:
        process = await asyncio.create_subprocess_exec(
            prometheus,
            f"--config.file={config}",
            f"--storage.tsdb.path={data}",
            f"--web.listen-address=127.0.0.1:{port}",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=stderr,
        )
    running = RunningPrometheus(f"http://127.0.0.1:{port}", query_log, process, log)
    try:
        deadline = time.monotonic() + 30
        async with httpx.AsyncClient() as http:
            while True:
                with contextlib.suppress(httpx.HTTPError):
                    if (await http.get(f"{running.url}/-/ready", timeout=1)).status_code == 200:
                        break
                if process.returncode is not None or time.monotonic() > deadline:
                    raise running.failure("not ready")
                await asyncio.sleep(0.05)
        yield running
    finally:
        if process.returncode is None:
            process.terminate()
            try:
                await asyncio.wait_for(process.wait(), 10)
            except TimeoutError:
                process.kill()
                await process.wait()


# --- Atrium, in a server process of its own. ------------------------------------------------


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


def _serve(argv: list[str]) -> None:
    """``python -m bench.observability SETTINGS_JSON OBSERVABILITY_SETTINGS_JSON``"""
    settings = Settings(**orjson.loads(argv[0]))
    plugin = ObservabilityPlugin(ObservabilitySettings(**orjson.loads(argv[1])))
    app = create_app(settings, plugins=[plugin])
    configure_logging(settings.log_level)
    sock = listening_socket("127.0.0.1", 0)
    print(sock.getsockname()[1], flush=True)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    config = uvicorn.Config(_bench_routes(app), lifespan="on", **uvicorn_options())
    uvicorn.Server(config).run(sockets=[sock])


async def _load_catalog(url: str) -> None:
    from sources.catalog.documents import parse_documents
    from sources.catalog.store import apply_batch

    app = create_app(Settings(database_url=url, redis_url=None, log_level="WARNING"), plugins=[])
    async with app.router.lifespan_context(app):  # applies the migrations
        result = await apply_batch(
            app.state.services.database, parse_documents(CATALOG, "bench.yaml")
        )
        if result.errors:
            raise BenchFailure(f"the catalog did not load: {result.errors}")


async def _redis() -> tuple[str | None, str]:
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


async def _drop_keys(url: str, prefix: str) -> None:
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        keys = [key async for key in client.scan_iter(match=f"{prefix}:*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


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
    persisted = {"persistedQuery": {"version": 1, "sha256Hash": document_hash(PANEL)}}
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
        p95 = _percentile(values, 95)
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


async def run_observability(*, short: bool, rounds: int | None = None, seed: int = 7) -> None:
    """``rounds``: timed rounds, each every figure once (default 200, 20 with ``short``)."""
    started = time.perf_counter()
    rounds = rounds or (20 if short else 200)
    span = 2 * 3600 if short else 86_400
    with tempfile.TemporaryDirectory(prefix="atrium-bench-prometheus-") as tmp:
        clock = time.perf_counter()
        history, count = _history(span, seed, int(time.time()))
        async with _prometheus(Path(tmp), history) as prometheus:
            backfill = time.perf_counter() - clock
            print(
                f"\nobservability: Prometheus {prometheus.url}, {span // 3600} h of one service "
                f"at {RESOLUTION} s ({count:,} samples) backfilled and started "
                f"in {backfill:.1f} s"
            )
            redis_url, redis_said = await _redis()
            prefix = f"atrium-bench-{os.getpid()}-{secrets.token_hex(4)}"
            observability = {"prometheus_url": prometheus.url, "observability_timeout": 10.0}
            settings = ObservabilitySettings(**observability)  # type: ignore[arg-type]
            # The plugin's own PromQL for the service (queries() reads the settings alone).
            queries = Observability(settings, None, None, cast(Any, None)).queries(SERVICE)
            panel = Panel(list(queries.values()), settings)
            try:
                async with scratch_database() as scratch, running_servers() as servers:
                    print(f"observability: scratch database {scratch.name} on the {scratch.server}")
                    print(f"observability: {redis_said}")
                    await _load_catalog(scratch.url)
                    common: dict[str, Any] = {"database_url": scratch.url, "redis_url": redis_url}
                    common |= {"cache_prefix": prefix, "log_level": "INFO"}
                    common |= {"response_cache": False, "compiled_plans": True}
                    server = await servers.start(
                        "atrium",
                        orjson.dumps(common).decode(),
                        orjson.dumps(observability).decode(),
                        module="bench.observability",
                    )
                    samples, warm_calls, warm_logged = await _measure(
                        server, prometheus, panel, rounds=rounds, warmup=3 if short else 10
                    )
            finally:  # once the server has stopped: it writes nothing more
                if redis_url is not None:
                    await _drop_keys(redis_url, prefix)
    _print(samples, panel, rounds, warm_calls, warm_logged)
    keys = ", its Redis keys deleted" if redis_url is not None else ""
    print(
        f"\nobservability took {time.perf_counter() - started:.0f} s; Prometheus and the server "
        f"stopped, scratch database dropped{keys}"
    )


if __name__ == "__main__":
    _serve(sys.argv[1:])
