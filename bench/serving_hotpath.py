"""Where the microseconds of a cached persisted GET go, measured in process.

The serving scenario gives requests per second and the server's CPU per request; this takes the
request apart on the path it takes: uvicorn's HTTP protocol as Atrium runs it
(``atrium.http_protocol``), fed the request's bytes as uvloop hands them over, answering from
the hot answers (``graph.hot_answers``) with no ASGI app involved. A transport that only
counts what is written stands in for the socket (what uvloop and the kernel cost is the rest
of the server's CPU per request). The whole request, then each step on its own with the same
inputs; then the same bytes through uvicorn's own protocol and the floor's Starlette endpoint,
and through uvicorn and Atrium's app (the way of a request the table cannot answer), the task
each of those makes run included. Atrium runs as deployed: on uvloop, its access log at INFO,
written in batches to a file. Each figure is this thread's CPU time per request, the median of
several timed runs of many calls.
"""

from __future__ import annotations

import asyncio
import logging
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from email.utils import formatdate
from pathlib import Path
from typing import Any, Final

import uvicorn
import uvloop
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn.server import ServerState

from atrium.http_protocol import AtriumHttpProtocol, http_protocol
from bench.harness import BenchFailure, persisted
from bench.harness.apps import atrium, floor_app, uvicorn_options
from bench.harness.inprocess import Scenario
from graph.hot_answers import HotAnswer
from graph.logs import configure_logging, flush_logs
from graph.services import Services
from graph.settings import Settings

__all__ = ["BATCH", "RUNS", "Breakdown", "hot_path", "print_breakdown"]

CALLS: Final = 5_000
RUNS: Final = 7
BATCH: Final = 256  # hits counted per flush while timing (a busy server's tenth of a second)
CONNECTIONS: Final = 16  # kept busy, as by the serving scenario's load: a turn of the loop each


@dataclass(frozen=True, slots=True)
class Breakdown:
    floor_us: float  # uvicorn's protocol and Starlette's endpoint returning the same bytes
    whole_us: float  # Atrium's protocol answering from the hot answers
    app_us: float  # uvicorn's protocol and Atrium's app (a request the table cannot answer)
    steps: list[tuple[str, float]]  # (step, µs), in order


async def hot_path(
    url: str, scenario: Scenario, media_type: str, *, calls: int = CALLS, runs: int = RUNS
) -> Breakdown:
    """On a uvloop event loop of its own, as a server runs (in a thread: the caller's loop
    goes on); each figure the median of ``runs`` runs of ``calls`` calls."""
    return await asyncio.to_thread(uvloop.run, _hot_path(url, scenario, media_type, calls, runs))


async def _hot_path(
    url: str, scenario: Scenario, media_type: str, calls: int, runs: int
) -> Breakdown:
    settings = Settings(database_url=url, redis_url=None, log_level="INFO")
    app = atrium(settings)
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogger("atrium").level
    with tempfile.TemporaryDirectory(prefix="atrium-hotpath-") as tmp:
        # A local file opened once before anything is timed; closed below.
        log_file = Path(tmp, "atrium.log").open("w")  # noqa: SIM115, ASYNC230
        try:
            configure_logging("INFO", stream=log_file)
            logging.getLogger("atrium").setLevel(logging.NOTSET)
            async with app.router.lifespan_context(app):
                return await _measure(app, app.state.services, scenario, media_type, calls, runs)
        finally:
            flush_logs()
            log_file.close()
            root.handlers[:], root.level = saved[0], saved[1]
            logging.getLogger("atrium").setLevel(saved[2])


class _Transport(asyncio.Transport):
    """A connection's transport that keeps nothing: it counts the writes."""

    def __init__(self) -> None:
        super().__init__()
        self.writes = 0

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.writes += 1

    def is_closing(self) -> bool:
        return False

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        found = {"sockname": ("127.0.0.1", 8000), "peername": ("127.0.0.1", 40000)}
        return found.get(name, default)

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:
        pass


def _connection(app: Any) -> tuple[Any, _Transport]:
    """A connection to ``app`` as ``atrium serve`` makes one, on a transport of our own."""
    config = uvicorn.Config(app, lifespan="off", **uvicorn_options())
    config.load()
    state = ServerState()
    date = formatdate(time.time(), usegmt=True).encode()
    state.default_headers = [(b"date", date), *config.encoded_headers]
    protocol = http_protocol(config, state, {})
    transport = _Transport()
    protocol.connection_made(transport)
    return protocol, transport


class _ParseOnly(AtriumHttpProtocol):
    """Atrium's protocol reading a request, and doing nothing with it."""

    def on_headers_complete(self) -> None:
        pass

    def on_message_complete(self) -> None:
        pass


async def _measure(
    app: Any, services: Services, scenario: Scenario, media_type: str, calls: int, runs: int
) -> Breakdown:
    extensions = persisted.extensions(scenario.query)
    query_string = persisted.query_string(scenario.query, scenario.variables)
    request = (
        f"GET /graphql?{query_string} HTTP/1.1\r\nhost: 127.0.0.1:8000\r\n"
        f"apollo-require-preflight: true\r\naccept: {media_type}\r\n\r\n"
    ).encode()
    # Register the document (APQ), as the serving scenario does.
    await services.persisted.learn(
        services.database,
        (await services.persisted.document(services.database, scenario.query, extensions)),
    )
    hot = services.hot
    atrium = [_connection(app) for _ in range(CONNECTIONS)]
    protocol = atrium[0][0]
    if hot is None or not isinstance(protocol, AtriumHttpProtocol):
        raise BenchFailure("the app keeps no hot answers")
    # Executed and kept, served from the response cache (which fills the table), then hot.
    for _ in range(3):
        await _round(atrium[:1], request)
    if hot.answered != 1:
        raise BenchFailure("the third GET was not answered from the hot answers")
    hot.flush()
    key = hot.key(protocol.url, protocol.headers)
    found = hot.find(key) if key is not None else None
    if key is None or found is None:
        raise BenchFailure("the GET's answer is not among the hot answers")
    hot_answer: HotAnswer = found

    plain = uvicorn.Config(app, lifespan="off", **{**uvicorn_options(), "http": "httptools"})
    plain.load()
    through_app = []
    for _ in range(CONNECTIONS):
        connection = HttpToolsProtocol(plain, protocol.server_state, {})
        connection.connection_made(_Transport())
        through_app.append((connection, connection.transport))
    floor = floor_app(hot_answer.body, media_type)
    floors = [_connection(floor) for _ in range(CONNECTIONS)]
    parser = _ParseOnly(plain, protocol.server_state, {}, services=services)
    parser.connection_made(_Transport())
    loop = asyncio.get_running_loop()

    def frame(answer: HotAnswer) -> bytes:
        return answer.framed

    def nowhere(data: bytes) -> None:
        pass

    async def whole() -> None:
        # Once a second the Age moves on, and the view answers (a task to wait for).
        await _round(atrium, request)
        if len(hot.hits) >= BATCH:
            hot.flush()

    async def starlette() -> None:
        await _round(floors, request)

    async def through_atrium() -> None:
        await _round(through_app, request)

    async def parse() -> None:
        parser.data_received(request)

    async def keyed() -> None:
        hot.key(protocol.url, protocol.headers)

    async def answer() -> None:
        hot.answer(key, frame, nowhere)
        if len(hot.hits) >= BATCH:
            hot.hits.clear()

    batch = [(hot_answer, time.time(), 0.00001)] * BATCH

    async def record() -> None:
        services.record_answered(batch)

    async def timer() -> None:
        loop.call_later(75, _idle).cancel()

    steps: list[tuple[str, Callable[[], Awaitable[None]], int]] = [
        ("read: httptools, the protocol's callbacks (URL, headers)", parse, 1),
        ("the key: target, Accept, Content-Type, preflight", keyed, 1),
        ("the answer: lookup, Age check, write, one hit noted", answer, 1),
        ("keep-alive timer, re-armed", timer, 1),
        ("count and log: metrics, access log line (batched)", record, BATCH),
    ]
    rounds = calls // CONNECTIONS
    floor_us = await _time(starlette, rounds, runs) / CONNECTIONS
    whole_us = await _time(whole, rounds, runs) / CONNECTIONS
    app_us = await _time(through_atrium, rounds // 4, runs) / CONNECTIONS
    timed = [(name, await _time(step, calls // per, runs) / per) for name, step, per in steps]
    hot.flush()
    return Breakdown(floor_us, whole_us, app_us, timed)


def _idle() -> None:
    pass


async def _round(connections: list[tuple[Any, Any]], request: bytes) -> None:
    """The request on each connection, as a turn of a busy server's loop reads it, and until
    each is answered: the tasks uvicorn made run in one turn more (an Event per request would
    be timed too)."""
    before = [transport.writes for _, transport in connections]
    for protocol, _ in connections:
        protocol.data_received(request)
    for (_, transport), writes in zip(connections, before, strict=True):
        while transport.writes == writes:  # noqa: ASYNC110
            await asyncio.sleep(0)


async def _time(call: Callable[[], Awaitable[None]], calls: int, runs: int) -> float:
    """Microseconds of this thread's CPU per call (what a busy machine's other processes
    take is not counted): the median over ``runs`` runs of ``calls`` calls."""
    for _ in range(calls // 10):
        await call()
    figures = []
    for _ in range(runs):
        started = time.thread_time()
        for _ in range(calls):
            await call()
        figures.append((time.thread_time() - started) / calls * 1e6)
    return statistics.median(figures)


def print_breakdown(breakdown: Breakdown, server_cpu_us: float | None) -> None:
    """The steps, the rest of the in-process request, and (given the server's CPU per
    request from the load test) what uvloop and the kernel take."""
    print(
        "\nhot path of the cached persisted GET, in process, as the server answers it "
        "(µs of CPU per request, median of runs)"
    )
    width = max(len(name) for name, _ in breakdown.steps) + 2
    total = 0.0
    for name, us in breakdown.steps:
        total += us
        print(f"  {name:<{width}}{us:6.1f}")
    rest = breakdown.whole_us - total
    print(f"  {'between the steps: calls, checks':<{width}}{rest:6.1f}")
    for name, us in (
        ("Atrium, whole request (its protocol)", breakdown.whole_us),
        ("floor: uvicorn and Starlette, the bytes", breakdown.floor_us),
        ("uvicorn and Atrium's app (no hot answer)", breakdown.app_us),
    ):
        print(f"  {name:<{width}}{us:6.1f}")
    if server_cpu_us is not None:
        outside = server_cpu_us - breakdown.whole_us
        print(
            f"  the Atrium server's CPU per request under load was {server_cpu_us:.0f} µs: "
            f"{outside:.0f} µs of it uvloop's reads and writes and the kernel's socket calls"
        )
