"""Databases and Redis for tests, made as Atrium's own suite makes them.

PostgreSQL: ``ATRIUM_TEST_DATABASE_URL`` (an admin URL tests may create databases on), else the
one answering on 127.0.0.1:5432 (user postgres), else an embedded one (``pgserver``) in a
temporary folder. A template database is migrated once per session; each test's database is
copied from it (``create database ... template``), which takes milliseconds. ``DatabaseCopies``
makes the copies one ahead and drops them behind, on a loop of its own through one admin
connection, so that a test waits for neither.

Redis: ``ATRIUM_TEST_REDIS_URL``, else the one answering on 127.0.0.1:6379, else a
``redis-server`` of our own on a free port. Tests keep apart by key prefix.

The database work runs on an event loop of its own in a worker thread, so these helpers serve
synchronous fixtures whatever event loop (and loop scope) the tests use.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Self, TypeVar

from atrium.testing.loops import LoopThread

if TYPE_CHECKING:
    import asyncpg

__all__ = [
    "DatabaseCopies",
    "admin_connection",
    "create_database",
    "create_template",
    "drop_database",
    "port_answers",
    "postgres_admin_url",
    "redis_server",
    "redis_url",
    "with_database",
]

LOCAL_POSTGRES = "postgresql://postgres@127.0.0.1:5432/postgres"
LOCAL_REDIS = "redis://127.0.0.1:6379/0"

T = TypeVar("T")


def port_answers(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def _run(work: Callable[[], Awaitable[T]]) -> T:
    """``work()`` run to its end on an event loop of its own, in a worker thread: callable
    from synchronous code whether or not the calling thread has a loop."""

    async def main() -> T:
        return await work()

    with ThreadPoolExecutor(1, thread_name_prefix="atrium-testing") as pool:
        return pool.submit(asyncio.run, main()).result()


@contextmanager
def postgres_admin_url() -> Iterator[str]:
    """An admin URL of a PostgreSQL server that tests may create databases on."""
    url = os.environ.get("ATRIUM_TEST_DATABASE_URL")
    if url:
        yield url
        return
    if port_answers("127.0.0.1", 5432):
        yield LOCAL_POSTGRES
        return
    from sources.db import embedded_database_url

    with tempfile.TemporaryDirectory(prefix="atrium-pg-") as tmp:
        yield embedded_database_url(Path(tmp))


def with_database(url: str, name: str) -> str:
    """The same server URL pointing at another database (URLs may carry ?host=socket)."""
    base, sep, query = url.partition("?")
    head, _, _ = base.rpartition("/")
    return f"{head}/{name}{sep}{query}"


@asynccontextmanager
async def admin_connection(url: str) -> AsyncIterator[asyncpg.Connection]:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        yield conn
    finally:
        await conn.close()


def create_template(admin_url: str) -> str:
    """A new database with Atrium's core migrations applied, to copy tests' databases from;
    its name. Plugins' migrations are applied by the app that uses them, on its own copy."""
    name = f"atrium_tmpl_{uuid.uuid4().hex[:10]}"

    async def create() -> None:
        from sources.db import Database
        from sources.migrations import apply_migrations, core_migrations

        async with admin_connection(admin_url) as conn:
            await conn.execute(f'create database "{name}"')
        db = await Database.connect(with_database(admin_url, name), min_size=1, max_size=2)
        try:
            await apply_migrations(db, core_migrations())
        finally:
            await db.close()

    _run(create)
    return name


def create_database(admin_url: str, template: str) -> str:
    """A fresh copy of ``template``; its URL."""
    name = f"atrium_t_{uuid.uuid4().hex[:12]}"

    async def create() -> None:
        async with admin_connection(admin_url) as conn:
            await conn.execute(f'create database "{name}" template "{template}"')

    _run(create)
    return with_database(admin_url, name)


class DatabaseCopies:
    """Copies of a template database, one per test: the next is made while a test runs, and
    a test's is dropped after it while the next runs. One admin connection on a loop of its own
    does both, in turn (a copy cannot be made while another session uses the template)."""

    def __init__(self, admin_url: str, template: str) -> None:
        self.admin_url = admin_url
        self.template = template
        self._thread = LoopThread("atrium-test-databases")
        self._conn: asyncpg.Connection | None = None
        self._turn: asyncio.Lock | None = None
        self._next: asyncio.Future[str] | None = None
        self._dropping: set[asyncio.Task[None]] = set()

    def start(self) -> Self:
        self._thread.start()
        return self

    def take(self) -> str:
        """The URL of a fresh copy of the template, the test's own until ``give_back``."""
        name = self._thread.run_sync(self._take())
        return with_database(self.admin_url, name)

    def give_back(self, url: str) -> None:
        """Drop the copy ``url`` names (whoever is still connected), without waiting."""
        self._thread.call_soon(self._drop_later, _name_of(url))

    def close(self) -> None:
        """Wait for the drops under way, drop the copy made ahead, close the connection."""
        try:
            self._thread.run_sync(self._close())
        finally:
            self._thread.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # On the loop.

    async def _take(self) -> str:
        made = self._next
        # The next test's copy, made while this one runs (after this one's, on the first call:
        # the lock is taken in call order).
        self._next = asyncio.ensure_future(self._create())
        if made is None:
            return await self._create()
        try:
            return await made
        except Exception:  # made ahead, and failed then (the server was away): once more now
            return await self._create()

    async def _execute(self, sql: str) -> None:
        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            if self._conn is None or self._conn.is_closed():
                import asyncpg

                self._conn = await asyncpg.connect(self.admin_url)
            await self._conn.execute(sql)

    async def _create(self) -> str:
        name = f"atrium_t_{uuid.uuid4().hex[:12]}"
        await self._execute(f'create database "{name}" template "{self.template}"')
        return name

    def _drop_later(self, name: str) -> None:
        task = asyncio.ensure_future(self._drop(name))
        self._dropping.add(task)
        task.add_done_callback(self._dropping.discard)

    async def _drop(self, name: str) -> None:
        await self._execute(f'drop database if exists "{name}" with (force)')

    async def _close(self) -> None:
        await asyncio.gather(*self._dropping, return_exceptions=True)
        if self._next is not None:
            # A copy that was never made has nothing to drop.
            with contextlib.suppress(Exception):
                await self._drop(await self._next)
        if self._conn is not None:
            await self._conn.close()


def _name_of(name_or_url: str) -> str:
    return name_or_url.partition("?")[0].rpartition("/")[2]


def drop_database(admin_url: str, name_or_url: str) -> None:
    """Drop a database (by name, or the database a URL names), whoever is still connected."""
    name = _name_of(name_or_url)

    async def drop() -> None:
        async with admin_connection(admin_url) as conn:
            await conn.execute(f'drop database if exists "{name}" with (force)')

    _run(drop)


@contextmanager
def redis_url() -> Iterator[str]:
    """A Redis for tests: ATRIUM_TEST_REDIS_URL, the local one, or a redis-server of our own."""
    url = os.environ.get("ATRIUM_TEST_REDIS_URL")
    if url:
        yield url
        return
    if port_answers("127.0.0.1", 6379):
        yield LOCAL_REDIS
        return
    with redis_server() as started:
        yield started


@contextmanager
def redis_server(*arguments: str) -> Iterator[str]:
    """A redis-server of our own on a free port (more ``arguments`` for its command line),
    stopped on the way out."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    command: list[Any] = ["redis-server", "--port", str(port), "--bind", "127.0.0.1"]
    command += ["--save", "", "--appendonly", "no", *arguments]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not port_answers("127.0.0.1", port):
            assert process.poll() is None and time.monotonic() < deadline, (
                "redis-server did not start"
            )
            time.sleep(0.02)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        process.terminate()
        process.wait(timeout=10)
