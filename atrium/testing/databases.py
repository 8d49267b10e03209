"""Databases and Redis for tests, made as Atrium's own suite makes them.

PostgreSQL: ``ATRIUM_TEST_DATABASE_URL`` (an admin URL tests may create databases on), else the
one answering on 127.0.0.1:5432 (user postgres), else an embedded one (``pgserver``) in a
temporary folder. A template database is migrated once per session; each test's database is
as fresh as the template: a copy of it, or one another test gave back with its rows and
sequences put back as the template has them (``atrium.testing.copies``).

Redis: ``ATRIUM_TEST_REDIS_URL``, else the one answering on 127.0.0.1:6379, else a
``redis-server`` of our own on a free port. Tests keep apart by key prefix.

The database work runs on an event loop of its own in a worker thread, so these helpers serve
synchronous fixtures whatever event loop (and loop scope) the tests use.
"""

from __future__ import annotations

import asyncio
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
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import asyncpg

__all__ = [
    "admin_connection",
    "create_database",
    "create_template",
    "drop_database",
    "new_database_name",
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
    name = new_database_name()

    async def create() -> None:
        async with admin_connection(admin_url) as conn:
            await conn.execute(f'create database "{name}" template "{template}"')

    _run(create)
    return with_database(admin_url, name)


def new_database_name() -> str:
    """A name for a test's database that no other has."""
    return f"atrium_t_{uuid.uuid4().hex[:12]}"


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
