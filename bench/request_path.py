"""The execution scenario's last figure: the component page's whole request, uncached.

The plans' figures above time execution alone. A request is more: reading it (the GET's
query string, the persisted document, the viewer), the variables' coercion and the cost check,
execution, encoding, the caching headers and ETag, sending, the metrics and the access log
line. Here the same persisted GET Apollo Client sends goes to the ASGI app as uvicorn hands it
over (no sockets: what uvicorn, httptools and the kernel add is the serving scenario's), with
the response cache off and the loaders' L1 warm: what every private page, every page reading
cluster state and every first request after a change pays. Timed as this process's CPU per
request, the median of rounds, its access log written at INFO to a file as in production.
Target: at most 2.5 µs per resolved field for the whole request.
"""

from __future__ import annotations

import logging
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from bench.harness import BenchFailure
from bench.harness.apps import started
from bench.harness.persisted import GET_HEADERS, extensions, query_string
from bench.harness.tables import print_target
from bench.harness.timing import frozen_heap
from graph.logs import configure_logging, flush_logs
from graph.settings import Settings

__all__ = ["GOAL_US_PER_FIELD", "WARMUP", "WholeRequest", "print_whole_request", "whole_request"]

GOAL_US_PER_FIELD: Final = 2.5
WARMUP: Final = 50  # requests before anything is timed: the plan built, the L1 warm


@dataclass(frozen=True, slots=True)
class WholeRequest:
    fields: int  # resolved fields of the answer
    bytes: int
    rounds_us: list[float]  # CPU per request, one per round

    @property
    def us(self) -> float:
        return statistics.median(self.rounds_us)

    @property
    def per_field(self) -> float:
        return self.us / self.fields


async def whole_request(
    url: str,
    document: str,
    variables: dict[str, Any],
    fields: int,
    *,
    rounds: int,
    calls: int,
    warmup: int = WARMUP,
) -> WholeRequest:
    """``document`` asked by persisted GET of an app on ``url`` with no response cache, after
    ``warmup`` requests (the first builds the plan and fills the L1)."""
    settings = Settings(database_url=url, redis_url=None, response_cache=False, log_level="INFO")
    root = logging.getLogger()
    saved = root.handlers[:], root.level, logging.getLogger("atrium").level
    with tempfile.TemporaryDirectory(prefix="atrium-request-") as tmp:
        log_file = Path(tmp, "atrium.log").open("w")  # noqa: SIM115, ASYNC230 - closed below
        try:
            configure_logging("INFO", stream=log_file)
            logging.getLogger("atrium").setLevel(logging.NOTSET)
            async with started(settings) as app:
                return await _measure(app, document, variables, fields, rounds, calls, warmup)
        finally:
            flush_logs()
            log_file.close()
            root.handlers[:], root.level = saved[0], saved[1]
            logging.getLogger("atrium").setLevel(saved[2])


async def _measure(
    app: Any,
    document: str,
    variables: dict[str, Any],
    fields: int,
    rounds: int,
    calls: int,
    warmup: int,
) -> WholeRequest:
    services = app.services
    # Apollo's automatic persisted queries: the document registered by its first POST.
    await services.persisted.learn(
        services.database,
        await services.persisted.document(services.database, document, extensions(document)),
    )
    scope: dict[str, Any] = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "GET",
        "scheme": "http",
        "path": "/graphql",
        "raw_path": b"/graphql",
        "root_path": "",
        "query_string": query_string(document, variables).encode(),
        "headers": [(b"host", b"127.0.0.1:8000")]
        + [(k.encode(), v.encode()) for k, v in GET_HEADERS.items()],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 8000),
    }
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def keep(message: dict[str, Any]) -> None:
        sent.append(message)

    async def nowhere(message: dict[str, Any]) -> None:
        pass

    for _ in range(warmup):
        sent.clear()
        await app(dict(scope), receive, keep)
    status, body = sent[0]["status"], sent[1]["body"]
    if status != 200 or b'"errors"' in body:
        raise BenchFailure(f"execution: the whole request answered {status}: {body[:300]!r}")
    plans = services.assembly.plans
    runs = plans.runs if plans is not None else 0
    queries = services.database.queries
    rounds_us = []
    with frozen_heap():
        for _ in range(rounds):
            cpu = time.process_time()
            for _ in range(calls):
                await app(dict(scope), receive, nowhere)
            rounds_us.append((time.process_time() - cpu) / calls * 1e6)
    if plans is None or plans.runs - runs != rounds * calls:
        raise BenchFailure("execution: the whole request did not run on its compiled plan")
    if services.database.queries != queries:
        raise BenchFailure("execution: the whole request reached SQL with the L1 warm")
    return WholeRequest(fields, len(body), rounds_us)


def print_whole_request(name: str, measured: WholeRequest) -> None:
    low, high = min(measured.rounds_us), max(measured.rounds_us)
    print(
        f"\n{name}, whole request (persisted GET in, bytes out; response cache off, L1 warm): "
        f"{measured.us:,.0f} µs of CPU, {measured.per_field:.2f} µs per resolved field "
        f"({measured.fields:,} fields, {measured.bytes:,} bytes; rounds {low:,.0f}-{high:,.0f} µs)"
    )
    print_target(
        f"{name}, whole request at most {GOAL_US_PER_FIELD:g} µs per resolved field",
        f"{measured.per_field:.2f} µs",
        measured.per_field <= GOAL_US_PER_FIELD,
    )
