"""Timing GraphQL requests through the real ASGI app against a baseline measured alongside.

Each scenario's baseline is a bare Starlette endpoint that returns the very bytes the app
answered (``apps.floor_app``), reached through the same httpx client and ASGI transport, so
the ratio is what GraphQL, resolvers and SQL cost on top of moving the request and response.
Scenario and baseline requests alternate, and the order of scenarios rotates each round, so a
slow moment of the machine hits both. Requests are sequential: this measures latency, not
throughput. Several apps can be measured at once (``measure_apps``: their scenarios share the
rounds), so that the machine's drift between two runs does not pass for a difference.

Each request is also timed inside the app, from the ASGI call to its last body message
(``ServerClock``: the server's time, the client's building and parsing of the request and
response left out), which targets may be held to at the median and the 99th percentile
(``print_measurements(..., server=True)``).

Every answer is checked: a fast wrong answer, or an error, must fail the run, not flatter it.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import httpx
import orjson
from starlette.applications import Starlette
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from bench.harness import BenchFailure
from bench.harness.apps import floor_app
from bench.harness.tables import count_range, print_rows, verdict
from bench.harness.timing import percentile, rotated
from sources.db import Database

__all__ = [
    "URL",
    "Check",
    "Measurement",
    "Scenario",
    "ServerClock",
    "measure",
    "measure_apps",
    "measured_cells",
    "page_problems",
    "print_measurements",
]

URL: Final = "http://bench/graphql"
MEASURED: Final = ("median ms", "p95 ms", "baseline median ms", "ratio", "SQL/req")
MIN_ROUNDS: Final = 20  # measured before the time budget may cut a run short

Check = Callable[[dict[str, Any]], list[str]]  # problems with an answer's data; none: right


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    target_ms: float
    query: str
    variables: dict[str, Any]
    check: Check

    @property
    def payload(self) -> dict[str, Any]:
        return {"query": self.query, "variables": self.variables}


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
        return percentile(self.app_ms, 95)

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
        return percentile(self.server_ms, 50)

    @property
    def server_p99(self) -> float:
        return percentile(self.server_ms, 99)

    @property
    def server_passed(self) -> bool:
        """The server's time within the target at the median and at the 99th percentile."""
        target = self.scenario.target_ms
        return self.server_p50 < target and self.server_p99 < target


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


def page_problems(
    page: dict[str, Any] | None, expected: int, size: int
) -> tuple[list[dict[str, Any]], list[str]]:
    """A connection's page of ``size``: its nodes, and what is wrong with its ``totalCount``
    (not ``expected``) or how many nodes it has (not a full page, or all there are)."""
    page = page or {}
    nodes: list[dict[str, Any]] = page.get("nodes") or []
    problems = []
    if page.get("totalCount") != expected:
        problems.append(f"totalCount is {page.get('totalCount')}, expected {expected}")
    if len(nodes) != min(size, expected):
        problems.append(f"{len(nodes)} nodes, expected {min(size, expected)}")
    return nodes, problems


def verify(scenario: Scenario, response: httpx.Response) -> None:
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


@dataclass(slots=True)
class _Pair:
    """A scenario on its app, and its baseline."""

    result: Measurement
    db: Database
    client: httpx.AsyncClient
    baseline: httpx.AsyncClient
    payload: bytes
    clock: ServerClock

    async def sample(self, *, app_first: bool) -> None:
        """The app (timed, its SQL counted, its answer checked when it differs from the
        first) and its baseline, in alternating order to cancel drift."""
        result = self.result
        for side in ("app", "baseline") if app_first else ("baseline", "app"):
            if side == "baseline":
                ms, _ = await _timed(self.baseline, self.payload)
                result.baseline_ms.append(ms)
                continue
            before = self.db.queries
            ms, response = await _timed(self.client, self.payload)
            result.queries.append(self.db.queries - before)
            result.app_ms.append(ms)
            result.server_ms.append(self.clock.last_ms)
            if response.content != result.body:
                verify(result.scenario, response)
                result.differing += 1


async def measure_apps(
    subjects: Sequence[tuple[Starlette, Sequence[Scenario]]],
    *,
    rounds: int,
    warmup: int,
    budget_s: float,
) -> list[list[Measurement]]:
    """Each app's scenarios, every (app, scenario) pair in every round: ``warmup`` rounds,
    then ``rounds`` timed ones, or fewer (at least ``MIN_ROUNDS``) once ``budget_s`` is
    spent. The measurements, per app."""
    pairs: list[_Pair] = []
    results: list[list[Measurement]] = []
    clients: list[httpx.AsyncClient] = []
    try:
        for app, scenarios in subjects:
            clock = ServerClock(app)
            client = httpx.AsyncClient(transport=httpx.ASGITransport(app=clock))
            clients.append(client)
            db: Database = app.state.services.database
            results.append([])
            for scenario in scenarios:
                payload = orjson.dumps(scenario.payload)
                _, first = await _timed(client, payload)
                verify(scenario, first)
                floor = floor_app(first.content, first.headers["content-type"], method="POST")
                baseline = httpx.AsyncClient(transport=httpx.ASGITransport(app=floor))
                clients.append(baseline)
                results[-1].append(Measurement(scenario, first.content))
                pairs.append(_Pair(results[-1][-1], db, client, baseline, payload, clock))
        for _ in range(warmup):
            for pair in pairs:
                _, response = await _timed(pair.client, pair.payload)
                if response.content != pair.result.body:
                    verify(pair.result.scenario, response)
                await _timed(pair.baseline, pair.payload)

        started = time.perf_counter()
        for round_ in range(rounds):
            if round_ >= MIN_ROUNDS and time.perf_counter() - started > budget_s:
                break
            for pair in rotated(pairs, round_):
                await pair.sample(app_first=round_ % 2 == 0)
    finally:
        for client in clients:
            await client.aclose()
    return results


async def measure(
    app: Starlette, scenarios: Sequence[Scenario], *, rounds: int, warmup: int, budget_s: float
) -> list[Measurement]:
    """``measure_apps`` for one app."""
    [results] = await measure_apps(
        [(app, scenarios)], rounds=rounds, warmup=warmup, budget_s=budget_s
    )
    return results


def measured_cells(r: Measurement) -> tuple[str, ...]:
    """The ``MEASURED`` columns of a measurement."""
    return (
        f"{r.median:.2f}",
        f"{r.p95:.2f}",
        f"{r.baseline_median:.2f}",
        f"{r.ratio:.1f}x",
        count_range(r.queries),
    )


def print_measurements(
    results: Sequence[Measurement],
    *,
    answer: Callable[[bytes], str],
    separator: str = ", ",
    conditions: str = "",
    server: bool = False,
) -> None:
    """Each scenario against its target, what each answer said (``answer`` of its body, to
    show the timings measured real work), and how the figures were taken. With ``server``,
    the target holds for the server's time at p50 and p99, each PASS or FAIL."""
    if server:
        rows = [
            (
                r.scenario.name,
                f"{r.server_p50:.2f}",
                f"{r.server_p99:.2f}",
                f"< {r.scenario.target_ms:g} ms",
                verdict(r.server_p50 < r.scenario.target_ms, "FAIL"),
                verdict(r.server_p99 < r.scenario.target_ms, "FAIL"),
                *measured_cells(r),
            )
            for r in results
        ]
        header = ("scenario", "server p50 ms", "server p99 ms", "target", "p50", "p99")
        print()
        print_rows((*header, *MEASURED), rows)
        conditions += (
            "; server: from the ASGI call to the last body message; median, p95: the round "
            "trip through httpx's ASGI transport"
        )
    else:
        rows = [
            (
                r.scenario.name,
                *measured_cells(r),
                f"< {r.scenario.target_ms:g} ms",
                verdict(r.passed),
            )
            for r in results
        ]
        print()
        print_rows(("scenario", *MEASURED, "target", "verdict"), rows)
    answers = separator.join(f"{r.scenario.name}: {answer(r.body)}" for r in results)
    print(f"answers: {answers}")
    samples = min(len(r.app_ms) for r in results)
    print(
        f"{samples} samples per scenario and baseline, sequential, after warm-up{conditions}; "
        "baseline: a plain Starlette endpoint returning the same bytes"
    )
    for r in results:
        if r.differing:
            print(
                f"note: {r.scenario.name}: {r.differing} responses differed from the first "
                "(still valid): the answer is not deterministic"
            )
