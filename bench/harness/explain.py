"""Which SQL statement makes a slow scenario slow, and its plan.

A scenario that misses its target is run once more with a recording ``Database`` in place of
the app's (same pool, same settings, so the same plans), and the slowest statement it sent
is run again under ``EXPLAIN (ANALYZE, BUFFERS)`` with the same arguments. The statements
are the app's own constants; arguments are passed as parameters, never spliced into SQL.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import asyncpg
import httpx
import orjson
from starlette.applications import Starlette

from bench.harness.inprocess import URL, Measurement, Scenario
from graph.services import Services
from sources.db import Database

__all__ = ["Statement", "explain_misses", "explain_slowest", "print_explain", "trace"]


@dataclass(frozen=True, slots=True)
class Statement:
    sql: str
    args: tuple[Any, ...]
    ms: float


class _RecordingDatabase(Database):
    """The app's pool, with every statement and its duration written down."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        super().__init__(pool)
        self.statements: list[Statement] = []

    async def _timed(self, method: str, sql: str, args: tuple[Any, ...]) -> Any:
        started = time.perf_counter()
        try:
            return await getattr(super(), method)(sql, *args)
        finally:
            self.statements.append(Statement(sql, args, (time.perf_counter() - started) * 1000))

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return await self._timed("fetch", sql, args)  # type: ignore[no-any-return]

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        return await self._timed("fetchrow", sql, args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._timed("fetchval", sql, args)


async def trace(app: Starlette, scenario: Scenario) -> list[Statement]:
    """The statements one request of ``scenario`` sends, in order, with their durations."""
    services: Services = app.state.services
    original = services.database
    recorder = _RecordingDatabase(original.pool)
    services.db = recorder
    try:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as client:
            await client.post(
                URL,
                content=orjson.dumps(scenario.payload),
                headers={"content-type": "application/json"},
            )
    finally:
        services.db = original
    return recorder.statements


async def explain(db: Database, statement: Statement) -> list[str]:
    rows = await db.pool.fetch("explain (analyze, buffers) " + statement.sql, *statement.args)
    return [row[0] for row in rows]


async def explain_slowest(app: Starlette, scenario: Scenario) -> tuple[list[Statement], list[str]]:
    services: Services = app.state.services
    statements = await trace(app, scenario)
    if not statements:
        return statements, []
    slowest = max(statements, key=lambda s: s.ms)
    return statements, await explain(services.database, slowest)


def print_explain(name: str, statements: Sequence[Statement], plan: Sequence[str]) -> None:
    print(f"\n{name}: {len(statements)} statements in one request")
    for s in statements:
        first = " ".join(s.sql.split())[:110]
        print(f"  {s.ms:8.2f} ms  {first}")
    if plan:
        print("  slowest, EXPLAIN (ANALYZE, BUFFERS):")
        for line in plan:
            print(f"    {line}")


async def explain_misses(
    app: Starlette, results: Sequence[Measurement], *, every: bool = False, server: bool = False
) -> None:
    """The statements and slowest plan of each scenario that missed its target (``every``:
    of each scenario; ``server``: held to the server's time at p50 and p99)."""
    for result in results:
        if every or not (result.server_passed if server else result.passed):
            statements, plan = await explain_slowest(app, result.scenario)
            print_explain(result.scenario.name, statements, plan)
