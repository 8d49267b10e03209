"""Timing requests through the real ASGI app against a baseline measured alongside.

Absolute milliseconds depend on the machine; a ratio does not, much. Each scenario's
baseline is a bare Starlette endpoint that returns the very bytes the app answered, reached
through the same httpx client and ASGI transport, so the ratio is what GraphQL, resolvers and
SQL cost on top of moving the request and response. Scenario and baseline requests alternate
(and the order of scenarios rotates each round) so a slow moment of the machine hits both.
Requests are sequential: this measures latency, not throughput.

Each request is also timed inside the app, from the ASGI call to its last body message (the
server's time: the client's building and parsing of the request and response left out), which
is what targets are held to, at the median and at the 99th percentile.
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass, field
from typing import Any

import httpx
import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bench.scenarios import Scenario
from graph.services import Services

__all__ = ["BenchFailure", "Measurement", "ServerClock", "measure"]

URL = "http://bench/graphql"


class BenchFailure(Exception):
    """A response was wrong: an error, no data, or data that fails the scenario's check."""


@dataclass(slots=True)
class Measurement:
    scenario: Scenario
    body: bytes
    app_ms: list[float] = field(default_factory=list)
    baseline_ms: list[float] = field(default_factory=list)
    queries: list[int] = field(default_factory=list)
    differing: int = 0  # responses whose bytes differed from the first one's
    server_ms: list[float] = field(default_factory=list)  # inside the app (ServerClock)

    @property
    def median(self) -> float:
        return statistics.median(self.app_ms)

    @property
    def p95(self) -> float:
        return _percentile(self.app_ms, 95)

    @property
    def baseline_median(self) -> float:
        return statistics.median(self.baseline_ms)

    @property
    def ratio(self) -> float:
        return self.median / self.baseline_median

    @property
    def passed(self) -> bool:
        return self.median < self.scenario.target_ms

    @property
    def server_p50(self) -> float:
        return _percentile(self.server_ms, 50)

    @property
    def server_p99(self) -> float:
        return _percentile(self.server_ms, 99)

    @property
    def server_passed(self) -> bool:
        """The server's time within the target at the median and at the 99th percentile."""
        target = self.scenario.target_ms
        return self.server_p50 < target and self.server_p99 < target


def _percentile(values: list[float], pct: float) -> float:
    """Nearest-rank percentile: a value that was actually observed."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * pct // 100))
    return ordered[int(rank) - 1]


class ServerClock:
    """The app's own time for each request: from the ASGI call to its last body message."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.last_ms = 0.0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()

        async def timed(message: Message) -> None:
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body"):
                self.last_ms = (time.perf_counter() - started) * 1000

        await self.app(scope, receive, timed)


def baseline_app(body: bytes, media_type: str) -> Starlette:
    """A plain endpoint answering ``body``; it reads the request as any endpoint must."""

    async def endpoint(request: Request) -> Response:
        await request.body()
        return Response(body, media_type=media_type)

    return Starlette(routes=[Route("/graphql", endpoint, methods=["POST"])])


def _verify(scenario: Scenario, response: httpx.Response) -> None:
    try:
        payload: Any = orjson.loads(response.content)
    except orjson.JSONDecodeError:
        raise BenchFailure(
            f"{scenario.name}: HTTP {response.status_code}, not JSON: {response.text[:300]}"
        ) from None
    if response.status_code != 200 or payload.get("errors") or not payload.get("data"):
        raise BenchFailure(
            f"{scenario.name}: HTTP {response.status_code}, "
            f"errors {payload.get('errors')!r:.600}, data {payload.get('data')!r:.200}"
        )
    problems = scenario.check(payload["data"])
    if problems:
        raise BenchFailure(f"{scenario.name}: wrong answer: {'; '.join(problems)}")


async def _timed(client: httpx.AsyncClient, payload: bytes) -> tuple[float, httpx.Response]:
    started = time.perf_counter()
    response = await client.post(URL, content=payload, headers={"content-type": "application/json"})
    return (time.perf_counter() - started) * 1000, response


async def measure(
    app: Starlette, scenarios: list[Scenario], *, rounds: int, warmup: int, budget_s: float
) -> list[Measurement]:
    """Warm up, then ``rounds`` interleaved rounds, or fewer if ``budget_s`` runs out."""
    services: Services = app.state.services
    db = services.database
    results: list[Measurement] = []
    clients: list[tuple[httpx.AsyncClient, httpx.AsyncClient, bytes]] = []
    clock = ServerClock(app)
    app_client = httpx.AsyncClient(transport=httpx.ASGITransport(app=clock))
    try:
        for scenario in scenarios:
            payload = orjson.dumps(scenario.payload)
            _, first = await _timed(app_client, payload)
            _verify(scenario, first)
            baseline = httpx.AsyncClient(
                transport=httpx.ASGITransport(
                    app=baseline_app(first.content, first.headers["content-type"])
                )
            )
            clients.append((app_client, baseline, payload))
            results.append(Measurement(scenario, first.content))
            for _ in range(warmup):
                _, response = await _timed(app_client, payload)
                _verify(scenario, response)
                await _timed(baseline, payload)

        started = time.perf_counter()
        for round_ in range(rounds):
            if round_ >= 20 and time.perf_counter() - started > budget_s:
                break
            shift = round_ % len(scenarios)
            for index in [*range(shift, len(scenarios)), *range(shift)]:
                client, baseline, payload = clients[index]
                await sample(
                    results[index],
                    db,
                    client,
                    baseline,
                    payload,
                    app_first=round_ % 2 == 0,
                    clock=clock,
                )
    finally:
        await app_client.aclose()
        for _, baseline, _ in clients:
            await baseline.aclose()
    return results


async def sample(
    result: Measurement,
    db: Any,
    client: httpx.AsyncClient,
    baseline: httpx.AsyncClient,
    payload: Any,
    *,
    app_first: bool,
    clock: ServerClock | None = None,
) -> None:
    """One interleaved sample: the app (timed, its SQL counted, its answer checked when it
    differs from the first) and its baseline, in alternating order to cancel drift. With the
    ``clock`` the client's app is wrapped in, the server's own time is kept too."""
    for side in ("app", "baseline") if app_first else ("baseline", "app"):
        if side == "baseline":
            ms, _ = await _timed(baseline, payload)
            result.baseline_ms.append(ms)
            continue
        before = db.queries
        ms, response = await _timed(client, payload)
        result.queries.append(db.queries - before)
        result.app_ms.append(ms)
        if clock is not None:
            result.server_ms.append(clock.last_ms)
        if response.content != result.body:
            _verify(result.scenario, response)
            result.differing += 1
