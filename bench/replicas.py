"""The replicas scenario: what 1, 2 and 3 ``atrium serve`` replicas behind HAProxy serve on
this machine, and what each request costs them, for a capacity plan.

Three replicas run as production runs them (``atrium serve``, production mode, one worker
each, sharing the scratch database and a Redis of the scenario's own), behind Debian's
HAProxy (``bench.haproxy``: one instance with one replica, one with two, one with three). The
floor is a bare Starlette endpoint on the same stack (uvicorn, uvloop, httptools) behind the
same HAProxy, answering the cached GET's bytes. A load process keeps 16 keep-alive
connections busy with a console's mix, in every block of ten requests:

- 6 persisted GETs of a component's page answered from the response cache (the console's
  navigation, most of its traffic);
- 2 persisted GETs of other components' pages, never asked before (each burst takes refs of
  its own: the entities come from PostgreSQL or Redis, the answer is executed);
- 1 console page (server-rendered, as a browser first loads it), when the console is built;
- 1 mutation (a person starring and unstarring a component: a write, an audit row, an
  invalidation published to every replica).

Targets are measured in rounds, their order rotating. Per request: the replicas' CPU time
(all of them together, from /proc), HAProxy's, Redis commands (``INFO commandstats``, this
Redis serves nothing else) and SQL statements (``atrium_sql_queries`` in each replica's
/metrics, a scrape's own subtracted). On a 2-core machine three replicas, HAProxy and the
load share two cores: requests per second cannot grow with the replicas, and the capacity
plan comes from the cost per request instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Final

import redis

from bench.catalog import SMALLEST
from bench.generate import generate
from bench.harness import BenchFailure, persisted
from bench.harness.apps import started
from bench.harness.database import scratch_database
from bench.harness.haproxy import haproxy, version
from bench.harness.host import ROOT, cpu_seconds, free_port
from bench.harness.load import LoadSpec, fetch, load_process, request_bytes, run_load
from bench.harness.persisted import MEDIA_TYPE
from bench.harness.redis_server import redis_server
from bench.harness.replica import Replica, running_replicas
from bench.harness.servers import running_servers
from bench.harness.timing import rotated
from bench.replicas_report import FLOOR, Target, print_targets
from bench.scenarios import COMPONENT_PAGE, pick_inputs
from graph.persisted import trust
from graph.settings import Settings
from sources.persisted import document_hash

__all__ = ["run_replicas"]

CONNECTIONS: Final = 16
BURST_WARMUP_S: Final = 0.25  # each burst's first, unrecorded
# --smoke's: still long enough for every target to answer many requests in it when the
# machine stalls a replica for a tenth of a second (p99s of 130 ms are seen on two busy cores).
SMOKE_BURST_S: Final = 0.25
SMOKE_BURST_WARMUP_S: Final = 0.05
PAGE: Final = "page"  # the kind of a console page's request: HTML, not GraphQL
WEB_DIST: Final = ROOT / "web" / "dist"
_PLAIN: Final = frozenset({PAGE})
STAR: Final = "mutation BenchStar($ref: String!) { starEntity(ref: $ref) { ref } }"
UNSTAR: Final = "mutation BenchUnstar($ref: String!) { unstarEntity(ref: $ref) { ref } }"


async def run_replicas(
    *, quick: bool, seed: int, rounds: int | None = None, smoke: bool = False
) -> None:
    """``rounds``: timed bursts per target (3 with ``quick``, 1 with ``smoke``, else 6); a short
    run (quick, smoke, or fewer than 5 rounds) has shorter bursts on a smaller catalog, a
    smoke run the shortest on the smallest."""
    begun = time.perf_counter()
    short = smoke or quick or (rounds is not None and rounds < 5)
    rounds = rounds or (1 if smoke else 3 if quick else 6)
    entities = SMALLEST if smoke else 2_000 if short else 5_000
    burst = SMOKE_BURST_S if smoke else 1.0 if short else 2.0
    warmup = SMOKE_BURST_WARMUP_S if smoke else BURST_WARMUP_S
    console = (WEB_DIST / ".vite" / "manifest.json").is_file()
    async with scratch_database() as scratch:
        print(f"\nreplicas: {scratch}")
        inputs = await _prepare(scratch.url, entities, seed)
        async with (
            redis_server() as redis_url,
            running_replicas(
                ("a", "b", "c"), _settings(scratch.url, redis_url, console)
            ) as replicas,
            _targets(replicas, inputs) as targets,
            load_process() as pool,
        ):
            print(
                f"{entities:,} entities; 3 replicas, HAProxy {version()}; "
                f"{CONNECTIONS} keep-alive connections; {rounds} rounds of {burst:g} s "
                f"per target; the mix: {_mix_words(console)}"
            )
            await _measure(targets, inputs, pool, redis_url, rounds, (warmup, burst), console)
        print_targets(targets)
    print(f"\nreplicas took {time.perf_counter() - begun:.0f} s; servers stopped, database dropped")


@dataclass(frozen=True, slots=True)
class Inputs:
    page: str  # the cached component page's ref
    others: list[str]  # components for uncached pages
    user: str  # the person who stars


async def _prepare(url: str, entities: int, seed: int) -> Inputs:
    async with started(Settings(database_url=url)) as app:  # the core's migrations
        await generate(url, entities, seed=seed)
        db = app.services.database
        page = (await pick_inputs(db)).component
        others = [
            row["ref"]
            for row in await db.fetch(
                "select ref from entities where kind = 'Component' and ref <> $1 order by ref", page
            )
        ]
        user = await db.fetchval(
            "select name from entities where kind = 'User' order by ref limit 1"
        )
        await trust(db, [(document_hash(d), d, None) for d in (COMPONENT_PAGE, STAR, UNSTAR)])
    return Inputs(page, others, user)


def _settings(database_url: str, redis_url: str, console: bool) -> dict[str, str]:
    return {
        "ATRIUM_MODE": "production",
        "ATRIUM_DATABASE_URL": database_url,
        "ATRIUM_REDIS_URL": redis_url,
        "ATRIUM_CACHE_PREFIX": "bench",
        "ATRIUM_TRUSTED_PROXIES": "127.0.0.1",  # HAProxy, naming the person who stars
        "ATRIUM_WEB_DIR": str(WEB_DIST) if console else "/nonexistent-console-build",
        # No Prometheus nor clusters here: their panels would answer UNAVAILABLE, and a page
        # holding a failed answer is never kept.
        "ATRIUM_DISABLED_PLUGINS": "observability,pincompute",
        "ATRIUM_SHUTDOWN_GRACE": "0",
    }


@contextlib.asynccontextmanager
async def _targets(replicas: list[Replica], inputs: Inputs) -> AsyncIterator[list[Target]]:
    """The floor and HAProxy in front of 1, 2 and 3 replicas, each checked once."""
    reply = await fetch(replicas[0].port, _get(replicas[0].port, inputs.page))
    if reply.status != 200 or b'"errors"' in reply.body:
        raise replicas[0].failure(f"the page's GET: HTTP {reply.status} {reply.body[:300]!r}")
    async with running_servers() as servers, contextlib.AsyncExitStack() as stack:
        floors = await servers.start_floor(FLOOR, reply.body, MEDIA_TYPE)
        groups: list[tuple[str, list[Replica], dict[str, int]]] = [
            (FLOOR, [], {"floor": floors.port})
        ]
        for n in (1, 2, 3):
            group = replicas[:n]
            groups.append((f"{n} replica{'s' * (n > 1)}", group, {r.name: r.port for r in group}))
        targets = []
        for name, group, servers_of in groups:
            check = "/readyz" if group else "/healthz"  # the floor has no readiness
            proxy = await stack.enter_async_context(haproxy(free_port(), servers_of, check))
            for server in servers_of:
                await proxy.until(server, "UP")
            pids = [r.pid for r in group] or [floors.pid]
            targets.append(Target(name=name, proxy=proxy, replicas=group, pids=pids))
        yield targets


async def _measure(
    targets: list[Target],
    inputs: Inputs,
    pool: ProcessPoolExecutor,
    redis_url: str,
    rounds: int,
    burst: tuple[float, float],  # (its warm-up, its timed window) in seconds
    console: bool,
) -> None:
    costs = {r.name: await _scrape_cost(r) for t in targets for r in t.replicas}
    atriums = len(targets) - 1
    share = len(inputs.others) // ((rounds + 1) * atriums)  # refs never asked twice
    commands = redis.Redis.from_url(redis_url)
    slices = iter(range(0, share * (rounds + 1) * atriums, share))
    try:
        for round_ in range(-1, rounds):  # the first round warms up, unrecorded
            for target in rotated(targets, max(round_, 0)):
                start = next(slices) if target.replicas else 0
                others = inputs.others[start : start + share] if target.replicas else []
                requests = _mix(target, inputs, others, console)
                await _burst(target, requests, pool, commands, costs, burst, record=round_ >= 0)
    finally:
        commands.close()


async def _burst(
    target: Target,
    requests: list[tuple[str, bytes]],
    pool: ProcessPoolExecutor,
    commands: redis.Redis,
    costs: dict[str, float],
    burst: tuple[float, float],
    *,
    record: bool,
) -> None:
    warmup, seconds = burst
    spec = LoadSpec(target.proxy.port, requests, CONNECTIONS, warmup, seconds, plain=_PLAIN)
    sql, (trips, calls) = await _sql(target.replicas), _redis_counts(commands)
    cpu, proxy_cpu = _cpu(target.pids), _cpu([target.proxy.pid])
    result = await asyncio.get_running_loop().run_in_executor(pool, run_load, spec)
    if result.failed:
        # What the replicas logged (a server error's traceback) says why.
        logs = "".join(f"\n--- {r.name}:\n{r.failure('').args[0]}" for r in target.replicas)
        raise BenchFailure(
            f"{target.name}: {result.failed} requests failed: {result.example!r}{logs}"
        )
    if not record:
        return
    target.add(result)
    target.cpu += _cpu(target.pids) - cpu
    target.proxy_cpu += _cpu([target.proxy.pid]) - proxy_cpu
    scrapes = sum(costs[r.name] for r in target.replicas)
    target.sql += await _sql(target.replicas) - sql - scrapes
    trips_after, calls_after = _redis_counts(commands)
    target.round_trips += trips_after - trips
    for command, n in calls_after.items():
        target.commands[command] = target.commands.get(command, 0) + n - calls.get(command, 0)


def _mix(
    target: Target, inputs: Inputs, others: list[str], console: bool
) -> list[tuple[str, bytes]]:
    port = target.proxy.port
    cached = ("cached GET", _get(port, inputs.page))
    if not target.replicas:  # the floor answers the cached GET's bytes, whatever is asked
        return [cached]
    name = inputs.page.rsplit("/", 1)[-1]
    page = (PAGE, request_bytes("GET", f"/catalog/default/component/{name}", port, {}))
    requests: list[tuple[str, bytes]] = []
    for n, (first, second) in enumerate(zip(others[::2], others[1::2], strict=False)):
        star = _post(port, STAR if n % 2 == 0 else UNSTAR, {"ref": inputs.page}, inputs.user)
        requests += [cached, ("uncached GET", _get(port, first)), cached, cached]
        requests += [page if console else cached, cached, ("uncached GET", _get(port, second))]
        requests += [cached, ("mutation", star), cached]
    return requests


def _get(port: int, ref: str) -> bytes:
    return persisted.get(port, COMPONENT_PAGE, {"ref": ref})


def _post(port: int, document: str, variables: dict[str, str], user: str) -> bytes:
    return persisted.post(port, document, variables, {"x-forwarded-user": user})


async def _sql(replicas: Sequence[Replica]) -> float:
    return sum([(await r.metrics())["atrium_sql_queries"] for r in replicas])


async def _scrape_cost(replica: Replica) -> float:
    """Statements a /metrics scrape itself sends (its gauges read the database)."""
    first = (await replica.metrics())["atrium_sql_queries"]
    return (await replica.metrics())["atrium_sql_queries"] - first


def _redis_counts(client: redis.Redis) -> tuple[int, dict[str, int]]:
    """Round trips (reads the server processed, this one's own left out) and calls by
    command (INFO's left out) so far. Commands sent in one pipeline share a round trip."""
    stats = client.info("all")
    calls = {
        k.removeprefix("cmdstat_"): v["calls"]
        for k, v in stats.items()
        if k.startswith("cmdstat_") and k != "cmdstat_info"
    }
    return int(stats["total_reads_processed"]) - 1, calls


def _cpu(pids: Sequence[int]) -> float:
    """User and system CPU seconds of these processes so far (Linux)."""
    found = cpu_seconds(pids)
    if found is None:
        raise BenchFailure("replicas: the processes' CPU time is read from /proc (Linux)")
    return found


def _mix_words(console: bool) -> str:
    page = "1 console page" if console else "no console page (the console is not built: +1 cached)"
    return f"of ten requests, 6 cached GETs, 2 uncached GETs, {page}, 1 mutation"
