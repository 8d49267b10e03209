"""PostgreSQL access: the pool, a query counter, and the embedded server for development."""

from __future__ import annotations

import asyncio
import logging
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import asyncpg
import orjson

from sources.errors import DatabaseUnavailable

__all__ = ["Database", "Executor", "embedded_database_url"]

log = logging.getLogger(__name__)

CLOSE_GRACE = 10.0  # seconds for the pool's connections to be released when stopping

# asyncpg prepares every statement. Queries with optional filters (``$1 is null or ...``) make
# poor generic plans, so the server plans each execution for its actual parameters.
# JIT off: Atrium's statements are short, and a large cost estimate (a loop over thousands of
# index probes) made PostgreSQL spend 200 ms compiling a statement that runs in 100.
_SERVER_SETTINGS = {
    "plan_cache_mode": "force_custom_plan",
    "application_name": "atrium",
    "jit": "off",
}


class Executor:
    """The query methods shared by the pool and a transaction's connection; counts queries.

    No ``executemany``: asyncpg's, cancelled while it streams its rows, never returns (its
    task waits forever, and so does whoever stops it). Many rows go as arrays in one statement
    (``insert ... select from unnest($1::text[], ...)``)."""

    def __init__(self, conn: asyncpg.Pool | asyncpg.Connection, counter: list[int]) -> None:
        self._conn = conn
        self._counter = counter

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        self._counter[0] += 1
        return await self._conn.fetch(sql, *args)  # type: ignore[no-any-return]

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        self._counter[0] += 1
        return await self._conn.fetchrow(sql, *args)

    async def fetchval(self, sql: str, *args: Any) -> Any:
        self._counter[0] += 1
        return await self._conn.fetchval(sql, *args)

    async def execute(self, sql: str, *args: Any) -> str:
        self._counter[0] += 1
        return await self._conn.execute(sql, *args)  # type: ignore[no-any-return]


class Database(Executor):
    """An asyncpg pool. ``queries`` counts every statement sent, for N+1 tests and metrics."""

    def __init__(self, pool: asyncpg.Pool) -> None:
        self._counts = [0]
        super().__init__(pool, self._counts)
        self.pool = pool

    @property
    def queries(self) -> int:
        return self._counts[0]

    @classmethod
    async def connect(cls, url: str, *, min_size: int = 2, max_size: int = 10) -> Database:
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=min_size,
                max_size=max_size,
                server_settings=_SERVER_SETTINGS,
                init=_init_connection,
            )
        except (OSError, asyncpg.PostgresError) as exc:
            raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc
        assert pool is not None
        return cls(pool)

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Executor]:
        async with self.pool.acquire() as conn, conn.transaction():
            yield Executor(conn, self._counts)

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Executor]:
        """One connection for session-level state such as advisory locks."""
        async with self.pool.acquire() as conn:
            yield Executor(conn, self._counts)

    async def ping(self) -> bool:
        try:
            await asyncio.wait_for(self.pool.fetchval("select 1"), timeout=2)
        except (OSError, asyncpg.PostgresError, TimeoutError):
            return False
        return True

    async def close(self, grace: float = CLOSE_GRACE) -> None:
        """Close gracefully: wait for connections in use to be released, then close them; after
        ``grace`` seconds, close what is left at once (a statement still running is dropped),
        so that stopping never hangs on a stuck connection."""
        try:
            await asyncio.wait_for(self.pool.close(), grace)
        except TimeoutError:
            log.warning(
                "database connections still busy after %.0f s of stopping: closed at once", grace
            )
            self.pool.terminate()


async def _init_connection(conn: asyncpg.Connection) -> None:
    for name in ("json", "jsonb"):
        await conn.set_type_codec(
            name,
            encoder=lambda v: orjson.dumps(v).decode(),
            decoder=orjson.loads,
            schema="pg_catalog",
        )


def embedded_database_url(data_dir: Path) -> str:
    """Start (or reuse) the embedded PostgreSQL under ``data_dir`` and return its URL.

    pgserver keeps one server per data directory; processes sharing the directory share the
    server, and the last one to let go stops it.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    pgdata = data_dir / "pgdata"
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset (root shells, containers).
            warnings.simplefilter("ignore")
            import pgserver

            server = pgserver.get_server(pgdata, cleanup_mode="stop")  # type: ignore[attr-defined]
    except Exception as exc:  # pgserver raises bare exceptions from initdb/pg_ctl
        raise DatabaseUnavailable(
            f"cannot start the embedded PostgreSQL in {pgdata}: {exc}"
        ) from exc
    log.info("embedded PostgreSQL running", extra={"pgdata": str(pgdata)})
    _EMBEDDED.append(server)  # keep the handle alive as long as the process
    return str(server.get_uri())


_EMBEDDED: list[Any] = []
