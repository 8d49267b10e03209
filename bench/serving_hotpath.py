"""Where the microseconds of a cached persisted GET go, measured in process.

The serving scenario gives requests per second and the server's CPU per request; this takes the
request apart. The same GET is sent to the ASGI app directly (no sockets: what uvicorn, httptools
and the kernel cost is the rest of the server's CPU per request), whole, then each step of
``graph.view``'s pipeline on its own with the same inputs, and the floor's Starlette endpoint
for comparison. Atrium runs as deployed: its access log at INFO, written in batches to a file.
Each figure is the median of several timed runs of many calls.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlencode

import orjson

from atrium.app import create_app
from bench.harness import BenchFailure
from bench.scenarios import Scenario
from bench.serving_server import floor_app
from graph.authz import viewer_without_token
from graph.http_input import negotiate, read_get
from graph.http_output import Outcome, cache_headers, send_outcome
from graph.logs import configure_logging, flush_logs
from graph.services import Services
from graph.settings import Settings
from graph.types import Message
from loaders.responses import viewer_answer_key
from sources.persisted import document_hash

__all__ = ["Breakdown", "hot_path", "print_breakdown"]

CALLS: Final = 5_000
RUNS: Final = 7


@dataclass(frozen=True, slots=True)
class Breakdown:
    floor_us: float  # Starlette's endpoint returning the same bytes, in process
    whole_us: float  # Atrium's whole request, in process
    steps: list[tuple[str, float]]  # (step, µs), in pipeline order


async def hot_path(
    url: str, scenario: Scenario, media_type: str, *, calls: int = CALLS
) -> Breakdown:
    settings = Settings(database_url=url, redis_url=None, log_level="INFO")
    app = create_app(settings, plugins=[])
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogger("atrium").level
    with tempfile.TemporaryDirectory(prefix="atrium-hotpath-") as tmp:
        # A local file opened once before anything is timed; closed below.
        log_file = Path(tmp, "atrium.log").open("w")  # noqa: SIM115, ASYNC230
        try:
            configure_logging("INFO", stream=log_file)
            logging.getLogger("atrium").setLevel(logging.NOTSET)
            async with app.router.lifespan_context(app):
                return await _measure(app, app.state.services, scenario, media_type, calls)
        finally:
            flush_logs()
            log_file.close()
            root.handlers[:], root.level = saved[0], saved[1]
            logging.getLogger("atrium").setLevel(saved[2])


async def _measure(
    app: Any, services: Services, scenario: Scenario, media_type: str, calls: int
) -> Breakdown:
    digest = document_hash(scenario.query)
    extensions = {"persistedQuery": {"version": 1, "sha256Hash": digest}}
    query_string = urlencode(
        {
            "extensions": orjson.dumps(extensions).decode(),
            "variables": orjson.dumps(scenario.variables).decode(),
        }
    ).encode()
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"accept", media_type.encode()),
        (b"apollo-require-preflight", b"true"),
    ]
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "root_path": "",
        "query_string": query_string,
        "headers": headers,
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    async def nowhere(message: Message) -> None:
        pass

    # Register the document (APQ) and keep its answer, as the serving scenario does.
    await services.persisted.learn(
        services.database,
        (await services.persisted.document(services.database, scenario.query, extensions)),
    )
    for _ in range(2):
        sent.clear()
        await app(dict(scope), receive, send)
    status = sent[0]["status"]
    body = sent[1]["body"]
    if status != 200 or b'"errors"' in body or services.responses is None:
        raise BenchFailure(f"the in-process GET answered {status}: {body[:300]!r}")
    floor = floor_app(body, media_type)

    settings = services.settings
    parsed = dict(headers)
    operations = services.get_operations
    [operation] = read_get(scope, parsed, operations, csrf_prevention=True).operations
    viewer = viewer_without_token(parsed, "127.0.0.1", settings)
    document = operation.document
    if viewer is None or document is None or operation.public_key is None:
        raise BenchFailure("the GET's operation did not keep its document and answer key")
    responses = services.responses
    answer = await responses.get(operation.public_key)
    assert answer is not None
    policies = services.assembly.policies

    async def whole() -> None:
        await app(dict(scope), receive, nowhere)

    async def starlette() -> None:
        await floor(dict(scope), receive, nowhere)

    async def read() -> None:
        found: dict[bytes, bytes] = dict(headers)
        negotiate(found.get(b"accept"))
        read_get(scope, found, operations, csrf_prevention=True)

    async def who() -> None:
        viewer_without_token(parsed, "127.0.0.1", settings)

    async def kept() -> None:
        policies.never_cached(document.text, operation.operation_name)
        shared = operation.public_key
        assert shared is not None and viewer is not None
        await responses.get(shared, viewer_answer_key(shared, viewer))

    async def outcome() -> None:
        Outcome(
            200,
            answer.body,
            operation.label,
            cache_headers(answer.max_age, True, services.vary, answer.age),
            answer.etag.encode("latin-1"),
        )

    async def write() -> None:
        done = Outcome(200, answer.body, "x", cache_headers(60, True, services.vary), b'"etag"')
        await send_outcome(nowhere, done, media_type, None)

    async def record() -> None:
        services.record_request("GET", operation.label, 200, 0.0001)

    steps: list[tuple[str, Callable[[], Awaitable[None]]]] = [
        ("read: headers, Accept, CSRF, the GET's operation", read),
        ("who is asking (anonymous)", who),
        ("the kept answer: keys and lookup", kept),
        ("the answer's caching headers and ETag", outcome),
        ("send: two ASGI messages", write),
        ("count and log: metrics, access log line", record),
    ]
    floor_us = await _time(starlette, calls)
    whole_us = await _time(whole, calls)
    timed = [(name, await _time(step, calls)) for name, step in steps]
    return Breakdown(floor_us, whole_us, timed)


async def _time(call: Callable[[], Awaitable[None]], calls: int) -> float:
    """Microseconds per call: the median over RUNS runs of ``calls`` calls."""
    for _ in range(calls // 10):
        await call()
    runs = []
    for _ in range(RUNS):
        started = time.perf_counter()
        for _ in range(calls):
            await call()
        runs.append((time.perf_counter() - started) / calls * 1e6)
    return statistics.median(runs)


def print_breakdown(breakdown: Breakdown, server_cpu_us: float | None) -> None:
    """The steps, the rest of the in-process request, and (given the server's CPU per
    request from the load test) what the HTTP server and the kernel take."""
    print("\nhot path of the cached persisted GET, in process (µs per request, median of runs)")
    width = max(len(name) for name, _ in breakdown.steps) + 2
    total = 0.0
    for name, us in breakdown.steps:
        total += us
        print(f"  {name:<{width}}{us:6.1f}")
    rest = breakdown.whole_us - total
    print(f"  {'between the steps: calls, awaits, dispatch':<{width}}{rest:6.1f}")
    print(f"  {'Atrium, whole request':<{width}}{breakdown.whole_us:6.1f}")
    print(f"  {'floor: Starlette returning the bytes':<{width}}{breakdown.floor_us:6.1f}")
    if server_cpu_us is not None:
        outside = server_cpu_us - breakdown.whole_us
        print(
            f"  the Atrium server's CPU per request under load was {server_cpu_us:.0f} µs: "
            f"{outside:.0f} µs of it uvicorn, httptools, uvloop and the kernel's socket calls"
        )
