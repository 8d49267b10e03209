"""The serving scenario: requests per second of one persisted GET, from real servers.

The other scenarios time one request at a time through the ASGI app in-process; this one
measures what a deployment serves: each target is a uvicorn server of its own (one worker, as
``atrium serve`` runs one) and a load process of its own keeps a few keep-alive connections
busy (``bench.harness.load``). Every target answers the same page, a component's page (the
catalog scenarios' entity page with a little more of each related entity: some 6 KB of JSON),
asked as Apollo Client asks a persisted query: a GET carrying the document's hash and the
variables, and the headers CSRF prevention wants.

- floor: a bare Starlette endpoint returning the very bytes Atrium answers, on the same fast
  stack (uvicorn with uvloop and httptools);
- response cache: Atrium as configured by default, whole responses of persisted queries kept
  and the hottest sent by its HTTP protocol itself (``atrium.http_protocol``), an access log
  line per request (the target: at least 0.8 of the floor's requests per second);
- L1 warm: the response cache off, the loaders' in-process cache warm, the document run on its
  compiled plan (``graph.plans``; the target: at least 3 times the requests per second of the
  next one);
- L1 warm, generic: the same with compiled plans off (``compiled_plans=False``): every request
  runs on graphql-core's generic executor;
- cold: no response cache, no L1 (``cache_max_entries=0``), no Redis: every request executes
  the query against PostgreSQL.

The catalog (5,000 generated entities) is loaded once into a scratch database shared by the
four Atrium servers. The document is registered through APQ (a POST with the text and its
hash), then each target's GET must answer the floor's bytes, or at least the same JSON, before
anything is timed. Targets are measured in rounds, their order rotating, so that the machine's
drift hits all alike; each burst opens fresh connections and warms them up before recording.
Printed: requests per second, latency percentiles (closed loop: they include queueing behind
the other connections), the ratio to the floor's requests per second, SQL statements per request
(from ``/metrics``, sequential requests), the server's CPU over the window, and its memory; then
the cached GET taken apart in process, on the path it takes (``bench.serving_hotpath``).
"""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from typing import Any, Final

import orjson

from bench.catalog import SMALLEST
from bench.generate import generate
from bench.harness import persisted
from bench.harness.apps import quiet, started
from bench.harness.database import scratch_database
from bench.harness.inprocess import Scenario
from bench.harness.load import LoadSpec, Reply, fetch, load_process, run_load
from bench.harness.persisted import MEDIA_TYPE
from bench.harness.serve import atrium_alone
from bench.harness.servers import Server, Servers, running_servers, stack
from bench.harness.timing import rotated
from bench.scenarios import COMPONENT_PAGE, pick_inputs, scenarios
from bench.serving_hotpath import BATCH, RUNS, hot_path, print_breakdown
from bench.serving_report import Figures, Target, print_figures
from graph.settings import Settings

__all__ = ["run_serving"]

ENTITIES: Final = 5_000
CONNECTIONS: Final = 16
BURST_WARMUP_S: Final = 0.25  # fresh connections, not recorded
SQL_SAMPLES: Final = 20
# --smoke: every target once, on the smallest catalog, in bursts still long enough for each
# connection to be answered many times on a busy machine; the warm-up's fill the caches.
SMOKE_BURST_S: Final = 0.2
SMOKE_BURST_WARMUP_S: Final = 0.05
SMOKE_WARM_S: Final = 0.1
SMOKE_SQL_SAMPLES: Final = 2
SMOKE_HOT_CALLS: Final = BATCH  # the fewest that time every step (a batch of hits is one call)
L1_GENERIC: Final = "persisted GET, L1 warm, generic"
TARGETS: Final = (
    Target("floor (Starlette, same bytes)", None),
    Target("persisted GET, response cache", {"response_cache": True}, goal=0.8),
    Target("persisted GET, L1 warm", {"response_cache": False}, goal=3.0, versus=L1_GENERIC),
    Target(L1_GENERIC, {"response_cache": False, "compiled_plans": False}),
    Target("persisted GET, cold", {"response_cache": False, "cache_max_entries": 0}),
)
FLOOR, CACHED, COLD = TARGETS[0], TARGETS[1], TARGETS[-1]


async def run_serving(
    *, quick: bool, seed: int, rounds: int | None = None, smoke: bool = False
) -> None:
    """``rounds`` overrides the number of timed rounds (4 with ``quick``, else 10); a short
    run also warms up for less. ``smoke``: one round of short bursts on the smallest catalog,
    and the hot path timed once over the fewest calls."""
    begun = time.perf_counter()
    quiet()
    entities = SMALLEST if smoke else ENTITIES
    async with scratch_database() as scratch:
        print(f"\nserving: {scratch}")
        async with started(Settings(database_url=scratch.url)) as app:  # the migrations
            report = await generate(scratch.url, entities, seed=seed)
            page = scenarios(await pick_inputs(app.services.database))[0]
        scenario = replace(page, name="component page", query=COMPONENT_PAGE)
        print(
            f"{entities:,} entities generated in {report.seconds:.1f} s; "
            f"{scenario.name} of {scenario.variables['ref']}"
        )
        async with running_servers() as servers, load_process() as pool:
            figures = await _start(servers, scratch.url, scenario)
            short = smoke or quick or (rounds is not None and rounds < 5)
            rounds = rounds or (1 if smoke else 4 if quick else 10)
            burst = SMOKE_BURST_S if smoke else 0.5
            warm = SMOKE_WARM_S if smoke else 1.0 if short else 2.0
            burst_warmup = SMOKE_BURST_WARMUP_S if smoke else BURST_WARMUP_S
            print(
                f"{len(TARGETS)} servers up ({stack()}); {CONNECTIONS} keep-alive "
                f"connections from a load process; {rounds} rounds of {burst:g} s per target"
            )
            for figure in figures:  # every cache the target has, and the load process
                await _burst(pool, figure, warm, 0.0)
            for round_ in range(rounds):
                for figure in rotated(figures, round_):
                    await _burst(pool, figure, burst, burst_warmup, record=True)
            samples = SMOKE_SQL_SAMPLES if smoke else SQL_SAMPLES
            for figure in figures:
                figure.rss = figure.server.rss()
                if figure.target.settings is not None:
                    figure.sql = await _sql_per_request(figure, samples)
        print_figures(figures)
        cached = next(f for f in figures if f.target is CACHED).cpu_per_request
        calls = SMOKE_HOT_CALLS if smoke else 1000 if short else 5000
        breakdown = await hot_path(
            scratch.url, scenario, MEDIA_TYPE, calls=calls, runs=1 if smoke else RUNS
        )
        print_breakdown(breakdown, None if cached is None else cached * 1e6)
    print(f"\nserving took {time.perf_counter() - begun:.0f} s; servers stopped, database dropped")


async def _start(servers: Servers, url: str, scenario: Scenario) -> list[Figures]:
    """Atrium's servers, the document registered, the floor on the cold answer, all checked."""
    atriums = await asyncio.gather(
        *(
            servers.start(t.name, atrium_alone, orjson.dumps(t.settings | _common(url)).decode())
            for t in TARGETS
            if t.settings is not None
        )
    )
    for server in atriums:  # once would do (documents are in PostgreSQL); each checks its APQ
        registration = persisted.post(server.port, scenario.query, scenario.variables)
        _answer(server, await fetch(server.port, registration))
    by_name = {server.name: server for server in atriums}
    cold = by_name[COLD.name]
    reference = await fetch(cold.port, persisted.get(cold.port, scenario.query, scenario.variables))
    problems = scenario.check(_answer(cold, reference)["data"])
    if problems:
        raise cold.failure(f"wrong {scenario.name}: {'; '.join(problems)}")
    floors = await servers.start_floor(FLOOR.name, reference.body, MEDIA_TYPE)
    figures = []
    for target in TARGETS:
        server = floors if target is FLOOR else by_name[target.name]
        request = persisted.get(server.port, scenario.query, scenario.variables)
        reply = await fetch(server.port, request)
        answer = _answer(server, reply)
        if reply.body != reference.body and answer != orjson.loads(reference.body):
            raise server.failure(
                f"answers {reply.body[:300]!r}, not the floor's {reference.body[:300]!r}"
            )
        figures.append(Figures(target=target, server=server, request=request, expected=reply.body))
    return figures


def _common(url: str) -> dict[str, Any]:
    # Explicit, so no ATRIUM_* variable of the caller's can give a target Redis or other logs:
    # INFO, the default, writes the access log line of every request, as in production.
    return {"database_url": url, "redis_url": None, "log_level": "INFO"}


def _answer(server: Server, reply: Reply) -> dict[str, Any]:
    """The parsed body of a successful GraphQL answer; anything else fails the run."""
    try:
        payload: Any = orjson.loads(reply.body)
    except orjson.JSONDecodeError:
        raise server.failure(f"HTTP {reply.status}, not JSON: {reply.body[:300]!r}") from None
    if reply.status != 200 or not isinstance(payload, dict) or payload.get("errors"):
        raise server.failure(f"HTTP {reply.status}: {reply.body[:600]!r}")
    if not payload.get("data"):
        raise server.failure(f"HTTP {reply.status}, no data: {reply.body[:300]!r}")
    return payload


async def _burst(
    pool: ProcessPoolExecutor,
    figure: Figures,
    seconds: float,
    warmup_s: float,
    *,
    record: bool = False,
) -> None:
    spec = LoadSpec(
        port=figure.server.port,
        requests=[("GET", figure.request)],
        connections=CONNECTIONS,
        warmup_s=warmup_s,
        duration_s=seconds,
        expected=figure.expected,
        server_pids=(figure.server.pid,),
    )
    result = await asyncio.get_running_loop().run_in_executor(pool, run_load, spec)
    if result.failed:
        example = result.example[:600]
        raise figure.server.failure(f"{result.failed} requests failed, e.g. {example!r}")
    if result.differing:  # another body: it must still be a right answer
        head, _, body = result.example.partition(b"\r\n\r\n")
        _answer(figure.server, Reply(200, head, body))
    if record:
        figure.add(result)


async def _sql_per_request(figure: Figures, samples: int) -> float:
    """Statements per request from /metrics; a scrape's own statements are subtracted."""
    server = figure.server
    before = await server.metric("atrium_sql_queries")
    after_scrape = await server.metric("atrium_sql_queries")
    for _ in range(samples):
        _answer(server, await fetch(server.port, figure.request))
    after = await server.metric("atrium_sql_queries")
    return (after - after_scrape - (after_scrape - before)) / samples
