"""The benchmark's harness on its own: figures from samples, the in-process measurement against
its baseline, and the load generator against a local server (tests/test_bench.py runs every
scenario through it)."""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator
from types import SimpleNamespace
from typing import Any

import orjson
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from bench.harness import BenchFailure
from bench.harness.inprocess import Scenario, measure, page_problems
from bench.harness.load import LoadResult, LoadSpec, fetch, request_bytes, run_load
from bench.harness.tables import count_range, print_rows
from bench.harness.timing import Throughput, percentile, rotated


def test_percentiles_are_values_observed() -> None:
    values = [5.0, 1.0, 4.0, 2.0, 3.0]
    assert percentile(values, 50) == 3.0
    assert percentile(values, 95) == 5.0
    assert percentile(values, 1) == 1.0


def test_rounds_start_one_further_each_time() -> None:
    assert [rotated("abc", r) for r in range(4)] == [
        ["a", "b", "c"],
        ["b", "c", "a"],
        ["c", "a", "b"],
        ["a", "b", "c"],
    ]


def _burst(requests: int, seconds: float = 1.0, cpu: float | None = 0.5) -> LoadResult:
    return LoadResult(latencies=[0.001] * requests, seconds=seconds, server_cpu=cpu)


def test_a_ratio_is_the_median_of_the_rounds_ratios() -> None:
    floor, target = Throughput(), Throughput()
    for mine, its in ((50, 100), (90, 100), (40, 50)):
        target.add(_burst(mine))
        floor.add(_burst(its))
    assert target.ratios(floor) == [0.5, 0.9, 0.8]
    assert target.versus(floor) == 0.8
    assert target.rps == 60.0
    assert target.cpu_per_request == pytest.approx(1.5 / 180)
    assert target.cells(floor)[3:] == ("0.80", "0.50-0.90")
    # A round in which the floor began nothing: an infinite ratio, not a ZeroDivisionError.
    target.add(_burst(10))
    floor.add(_burst(0, cpu=None))
    assert target.ratios(floor)[-1] == math.inf
    assert floor.server_cpu is None and floor.cpu_per_request is None


def test_tables_align_and_count(capsys: pytest.CaptureFixture[str]) -> None:
    print_rows(("name", "n"), [("a", "1"), ("longer", "22")])
    assert capsys.readouterr().out.splitlines() == [
        "name     n",
        "------  --",
        "a        1",
        "longer  22",
    ]
    assert count_range([2, 2]) == "2"
    assert count_range([3, 2, 4]) == "2-4"


def test_a_page_is_checked_for_its_count_and_its_size() -> None:
    nodes = [{"ref": str(n)} for n in range(3)]
    assert page_problems({"totalCount": 3, "nodes": nodes}, 3, 50) == (nodes, [])
    _, problems = page_problems({"totalCount": 5, "nodes": nodes}, 3, 2)
    assert problems == ["totalCount is 5, expected 3", "3 nodes, expected 2"]


def _graphql_app(answer: dict[str, Any]) -> Starlette:
    """A stand-in for Atrium: /graphql answers ``answer``; its database counts one query a
    request, as the measurement reads Atrium's."""
    database = SimpleNamespace(queries=0)

    async def graphql(request: Request) -> Response:
        await request.body()
        database.queries += 1
        return Response(orjson.dumps(answer), media_type="application/json")

    app = Starlette(routes=[Route("/graphql", graphql, methods=["POST"])])
    app.state.services = SimpleNamespace(database=database)
    return app


def _scenario(check: Any = lambda data: []) -> Scenario:
    return Scenario("answer", 1_000, "{ answer }", {}, check)


async def test_the_app_is_measured_against_the_same_bytes() -> None:
    app = _graphql_app({"data": {"answer": 42}})
    [result] = await measure(app, [_scenario()], rounds=4, warmup=1, budget_s=60)
    assert orjson.loads(result.body) == {"data": {"answer": 42}}
    assert len(result.app_ms) == len(result.baseline_ms) == 4
    assert result.queries == [1, 1, 1, 1]
    assert result.passed and result.ratio > 0 and not result.differing


async def test_a_wrong_answer_fails_the_measurement() -> None:
    with pytest.raises(BenchFailure, match="errors"):
        await measure(
            _graphql_app({"errors": [{"message": "no"}]}),
            [_scenario()],
            rounds=1,
            warmup=0,
            budget_s=60,
        )
    with pytest.raises(BenchFailure, match="wrong answer: not 41"):
        await measure(
            _graphql_app({"data": {"answer": 42}}),
            [_scenario(lambda data: [] if data["answer"] == 41 else ["not 41"])],
            rounds=1,
            warmup=0,
            budget_s=60,
        )


@pytest.fixture
async def server() -> AsyncIterator[int]:
    """A keep-alive HTTP/1.1 server on a free port answering every request with ``hello``,
    but ``/errors`` with a GraphQL error."""

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                body = b'{"errors":[]}' if head.startswith(b"GET /errors ") else b"hello"
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n" % len(body) + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    listening = await asyncio.start_server(serve, "127.0.0.1", 0)
    try:
        yield listening.sockets[0].getsockname()[1]
    finally:
        listening.close()
        await listening.wait_closed()


async def test_the_load_checks_every_answer(server: int) -> None:
    hello = request_bytes("GET", "/", server, {})
    errors = request_bytes("GET", "/errors", server, {})
    assert (await fetch(server, hello)).body == b"hello"

    def spec(**given: Any) -> LoadSpec:
        return LoadSpec(server, connections=2, warmup_s=0.05, duration_s=0.2, **given)

    same = await asyncio.to_thread(run_load, spec(requests=[("a", hello)], expected=b"hello"))
    assert same.latencies and not same.failed and not same.differing
    assert same.sent >= len(same.latencies) and same.kinds == {"a": len(same.latencies)}
    other = await asyncio.to_thread(run_load, spec(requests=[("a", hello)], expected=b"bye"))
    assert other.differing and not other.failed and other.example.endswith(b"hello")
    mixed = [("graphql", errors), ("page", errors)]
    checked = await asyncio.to_thread(run_load, spec(requests=mixed, plain=frozenset({"page"})))
    assert checked.failed and checked.failed <= checked.sent // 2 + 2
