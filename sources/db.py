"""PostgreSQL access: the pool, a query counter, how losing the database is told, and the
embedded server for development.

Two ways to reach PostgreSQL (``DatabaseOptions.transaction_pooling``):

- **directly**, or through a pooler in session mode: each connection is a session of its own.
  Statements are prepared once per connection and kept (asyncpg's statement cache), and the
  session starts with the settings of ``_SERVER_SETTINGS``.
- **through PgBouncer in transaction mode** (or another pooler that hands out a server connection
  for one transaction at a time): one client connection's consecutive transactions run on
  different server sessions, so nothing may outlive a transaction. No startup parameter but
  ``application_name`` is sent (PgBouncer refuses the others); no statement is prepared by name
  (asyncpg then sends Parse, Bind and Execute of an unnamed statement in one message, which
  PgBouncer keeps on one server connection); nothing is reset when a connection goes back to
  the pool, since nothing session-level is ever set. ``jit`` cannot be turned off per session
  then: the operator sets it for the role (see the README's "Running in production"), and
  Atrium warns at start when it is on.

In both modes locks are transaction-level (``Database.try_lock``, and the migrations' lock),
so there is one code path.

A database out of reach (refused or lost connections, a server shutting down or starting
up, no answer in time) is ``DatabaseUnavailable`` wherever it shows: connecting, a statement,
a commit. Requests answer it quickly as 503 / ``UNAVAILABLE`` instead of hanging; asyncpg
replaces a connection it found closed the next time the pool hands it out, so Atrium recovers
by itself when the database is back. Nothing waits unbounded, with no timer per statement in
the process when connected directly: opening a connection has ``connect_timeout``, a statement
the server's ``statement_timeout`` (behind a transaction pooler, asyncpg's ``command_timeout``,
as the pooler takes no such startup parameter), and waiting for a pooled connection in use is
bounded by the statement (or the transaction) that holds it. A server that vanishes without
closing its connections (a network partition) is left to TCP to notice.
"""

from __future__ import annotations

import asyncio
import logging
import time
import warnings
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import asyncpg
import orjson

from sources.db_outage import MAYBE_LOST, is_lost, quiet_pool_maintenance, reason
from sources.errors import DatabaseUnavailable

__all__ = ["Database", "DatabaseOptions", "Executor", "embedded_database_url"]

log = logging.getLogger(__name__)

CLOSE_GRACE = 10.0  # seconds for the pool's connections to be released when stopping
# How long asyncpg's own error waits for its connection to close (see ``Database.run``).
_CLOSING_CHECKS = 10
_CLOSING_CHECK_EVERY = 0.01  # seconds

# asyncpg prepares every statement. Queries with optional filters (``$1 is null or ...``) make
# poor generic plans, so the server plans each execution for its actual parameters.
# JIT off: Atrium's statements are short, and a large cost estimate (a loop over thousands of
# index probes) made PostgreSQL spend 200 ms compiling a statement that runs in 100.
_SERVER_SETTINGS = {
    "plan_cache_mode": "force_custom_plan",
    "application_name": "atrium",
    "jit": "off",
}
# Behind a transaction pooler: unnamed statements are planned for their parameters anyway
# (each is used once), and jit is the role's (checked by ``_warn_if_jit``).
_POOLED_SETTINGS = {"application_name": "atrium"}


@dataclass(frozen=True, slots=True)
class DatabaseOptions:
    """How Atrium reaches PostgreSQL (the settings ``database_pooling``,
    ``database_connect_timeout`` and ``database_statement_timeout``)."""

    transaction_pooling: bool = False
    # Seconds to open a connection.
    connect_timeout: float = 5.0
    # Seconds a statement may run before it is cancelled.
    statement_timeout: float = 60.0


# Set in a background job's task (and so in whatever it starts): its statements are counted
# apart from those of requests, so that what a request costs can be counted while jobs run.
_IN_JOB: ContextVar[bool] = ContextVar("atrium_in_background_job", default=False)


def counted_as_job() -> None:
    """Count the statements of the current task, and of the tasks it starts, as a background
    job's (``Database.job_queries``), not a request's (``Database.queries``)."""
    _IN_JOB.set(True)


def _count(database: Database) -> None:
    if _IN_JOB.get():
        database.job_queries += 1
    else:
        database.queries += 1


class Executor:
    """The query methods of a transaction's connection; counts queries.

    No ``executemany``: asyncpg's, cancelled while it streams its rows, never returns (its
    task waits forever, and so does whoever stops it). Many rows go as arrays in one statement
    (``insert ... select from unnest($1::text[], ...)``)."""

    def __init__(self, conn: asyncpg.Connection, database: Database) -> None:
        self._conn = conn
        self._database = database

    async def fetch(self, sql: str, *args: Any) -> list[asyncpg.Record]:
        return cast(list[asyncpg.Record], await self._statement("fetch", sql, args))

    async def fetchrow(self, sql: str, *args: Any) -> asyncpg.Record | None:
        return cast(asyncpg.Record | None, await self._statement("fetchrow", sql, args))

    async def fetchval(self, sql: str, *args: Any) -> Any:
        return await self._statement("fetchval", sql, args)

    async def execute(self, sql: str, *args: Any) -> str:
        return cast(str, await self._statement("execute", sql, args))

    async def _statement(self, method: str, sql: str, args: tuple[Any, ...]) -> Any:
        database = self._database
        _count(database)
        with database.unavailable_when_lost():
            return await database.run(self._conn, method, sql, args)


class Database(Executor):
    """An asyncpg pool. ``queries`` counts every statement sent but those of background jobs,
    which ``job_queries`` counts: N+1 tests count the first, metrics both.

    An Executor whose query methods each take a connection from the pool for one statement,
    so that code taking an Executor runs on the pool or inside a transaction alike."""

    def __init__(self, pool: asyncpg.Pool, options: DatabaseOptions | None = None) -> None:
        self.pool = pool
        self.options = options or DatabaseOptions()
        self.queries = 0
        self.job_queries = 0
        self._lost_since: float | None = None  # when an outage was first seen, until it ends

    @classmethod
    async def connect(
        cls,
        url: str,
        options: DatabaseOptions | None = None,
        *,
        min_size: int = 2,
        max_size: int = 10,
    ) -> Database:
        options = options or DatabaseOptions()
        quiet_pool_maintenance()
        if options.transaction_pooling:
            # The pooler takes no statement_timeout at start-up: asyncpg times each statement.
            mode: dict[str, Any] = {
                "server_settings": _POOLED_SETTINGS,
                "statement_cache_size": 0,
                "reset": _nothing_to_reset,
                "command_timeout": options.statement_timeout,
            }
        else:
            # The server times each statement: no timer per statement in the process.
            timeout_ms = str(round(options.statement_timeout * 1000))
            mode = {"server_settings": {**_SERVER_SETTINGS, "statement_timeout": timeout_ms}}
        try:
            pool = await asyncpg.create_pool(
                url,
                min_size=min_size,
                max_size=max_size,
                init=_init_connection,
                timeout=options.connect_timeout,
                **mode,
            )
        except (*MAYBE_LOST, asyncpg.PostgresError) as exc:
            raise DatabaseUnavailable(f"cannot connect to PostgreSQL: {exc}") from exc
        assert pool is not None
        database = cls(pool, options)
        if options.transaction_pooling:
            await _warn_if_jit(database)
        return database

    async def _statement(self, method: str, sql: str, args: tuple[Any, ...]) -> Any:
        """One statement on a connection taken from the pool for it."""
        _count(self)
        try:
            conn = await self.pool.acquire()
            try:
                result = await self.run(conn, method, sql, args)
            finally:
                await self._release(conn)
        except MAYBE_LOST as exc:
            self._unavailable_if_lost(exc)
            raise
        if self._lost_since is not None:
            self._reachable()
        return result

    async def run(
        self, conn: asyncpg.Connection, method: str, sql: str, args: tuple[Any, ...]
    ) -> Any:
        """``conn.<method>(sql, *args)``. A server that ends the session between two steps of a
        statement (a shutdown's FATAL after Parse, before Bind) leaves asyncpg's protocol in a
        state it reports as its own error: when the connection closes right after, that is
        the database going away."""
        try:
            return await getattr(conn, method)(sql, *args)
        except asyncpg.InternalClientError as exc:
            for _ in range(_CLOSING_CHECKS):
                if conn.is_closed():
                    raise ConnectionResetError("the server ended the session") from exc
                await asyncio.sleep(_CLOSING_CHECK_EVERY)
            raise

    @asynccontextmanager
    async def transaction(self) -> AsyncIterator[Executor]:
        """A transaction on a connection of its own: committed when the block ends, rolled back
        when it raises. Only the database's own failures become ``DatabaseUnavailable``: an
        OSError the block raises (a file, a socket to elsewhere) stays what it is."""
        with self.unavailable_when_lost():
            conn = await self.pool.acquire()
        ended = False
        try:
            transaction = conn.transaction()
            with self.unavailable_when_lost():
                await transaction.start()
            try:
                yield Executor(conn, self)
            except BaseException:
                try:
                    await transaction.rollback()
                except MAYBE_LOST as exc:
                    if not is_lost(exc):
                        raise
                    # The server rolls back the transaction of a connection it lost.
                ended = True
                raise
            with self.unavailable_when_lost():
                await transaction.commit()
            ended = True
        finally:
            if not ended:
                # Cut short while its BEGIN, COMMIT or ROLLBACK was on the wire (a task cancelled
                # as it began, or again as it rolled back, when a server stops): where the
                # transaction stands is unknown, so the session ends, and the server rolls back
                # whatever it left open.
                conn.terminate()
            await self._release(conn)
        self._reachable()

    @asynccontextmanager
    async def try_lock(self, key: int) -> AsyncIterator[bool]:
        """Hold the advisory lock ``key`` for the block if no one else does; yields whether it
        is held. A transaction opened for it on a connection of its own takes the lock
        (transaction-level, so a pooler in transaction mode keeps that server connection for
        it) and stays open, idle, until the block ends; the block's work runs on other
        connections. A process that dies lets go with its connection."""
        async with self.transaction() as tx:
            yield bool(await tx.fetchval("select pg_try_advisory_xact_lock($1)", key))

    async def ping(self) -> bool:
        try:
            await asyncio.wait_for(self.fetchval("select 1"), timeout=2)
        except (DatabaseUnavailable, TimeoutError):
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

    async def _release(self, conn: asyncpg.Connection) -> None:
        """Back to the pool. A connection lost by then fails its reset, and asyncpg drops it;
        what was done on it stands (a commit went through), so the loss is not the caller's
        failure. The reset's error is asyncpg's own when the server's FATAL came just before
        it (see ``run``)."""
        try:
            await self.pool.release(conn)
        except (*MAYBE_LOST, asyncpg.InternalClientError) as exc:
            if not (is_lost(exc) or isinstance(exc, asyncpg.InternalClientError)):
                raise
            log.debug("a connection was lost as it went back to the pool: %s", exc)

    @contextmanager
    def unavailable_when_lost(self) -> Iterator[None]:
        try:
            yield
        except MAYBE_LOST as exc:
            self._unavailable_if_lost(exc)
            raise

    def _unavailable_if_lost(self, exc: BaseException) -> None:
        """Raise ``DatabaseUnavailable`` from ``exc`` if it says the database is out of reach
        (logged once per outage, with what asyncpg said; not when Atrium closed the pool
        itself, stopping); return otherwise."""
        if not is_lost(exc):
            return
        if self._lost_since is None and not self.pool.is_closing():
            self._lost_since = time.monotonic()
            log.warning("the database is unavailable: %s: %s", type(exc).__name__, exc)
        raise DatabaseUnavailable(f"the database is unavailable ({reason(exc)})") from exc

    def _reachable(self) -> None:
        if self._lost_since is not None:
            log.warning(
                "the database answers again after %.1f s", time.monotonic() - self._lost_since
            )
            self._lost_since = None


async def _nothing_to_reset(conn: asyncpg.Connection) -> None:
    """Behind a transaction pooler the next statement runs in another server session anyway,
    and Atrium sets nothing that outlives a transaction (asyncpg still rolls back one left
    open)."""


async def _warn_if_jit(database: Database) -> None:
    on, role = await database.fetchrow(
        "select current_setting('jit') = 'on' and pg_jit_available(), current_user"
    ) or (False, "")
    if on:
        log.warning(
            "jit is on for Atrium's connections, which cannot turn it off per session behind a "
            "transaction pooler: run `alter role %s set jit = off` (see the README's PgBouncer)",
            role,
        )


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
