"""Atrium through Debian's PgBouncer in transaction pooling mode (ATRIUM_DATABASE_POOLING=
transaction): what breaks asyncpg there by default breaks in this harness too, and Atrium's
queries, mutations, imports, migrations and locks all work through it.

The API's own tests run through it as well: the modules marked ``pgbouncer`` (README,
"Running in production") run twice, the second time with ``db`` and ``make_client`` here.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator

import asyncpg
import pytest

from atrium.testing.databases import new_database_name
from sources.db import Database, DatabaseOptions
from sources.errors import DatabaseUnavailable
from sources.migrations import apply_migrations, core_migrations
from tests.conftest import AppFactory, _admin, _with_database, demo_batch
from tests.production.pgbouncer import POOL_SIZE, PgBouncer

POOLED = DatabaseOptions(transaction_pooling=True)
CONCURRENT = 300

ENTITY = """query Entity($ref: String!) {
  entity(ref: $ref) { ref ... on Component { owner { ref } system { ref } } }
}"""
SEARCH = "query Search($q: String!) { entities(search: $q, first: 5) { totalCount } }"
STAR = "mutation Star($ref: String!) { starEntity(ref: $ref) { ref viewerStarred } }"
CATALOG = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: pooled-%d}
spec: {type: service, lifecycle: production, owner: group:default/checkout-team}
"""


@pytest.fixture
def bounced(pgbouncer: PgBouncer, database_url: str) -> str:
    """The test's database through PgBouncer."""
    return pgbouncer.url(database_url)


@pytest.fixture
async def empty_database(pg_admin_url: str) -> AsyncIterator[str]:
    """A database with nothing in it, not even the migrations."""
    name = new_database_name()
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}"')
    yield _with_database(pg_admin_url, name)
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'drop database if exists "{name}" with (force)')


async def test_asyncpg_as_it_connects_directly_fails_here(bounced: str) -> None:
    """The harness is a real transaction pooler: Atrium's direct settings are refused, and
    asyncpg's cache of named prepared statements breaks as soon as clients interleave."""
    with pytest.raises(DatabaseUnavailable, match="unsupported startup parameter"):
        await Database.connect(bounced)
    pool = await asyncpg.create_pool(bounced, min_size=4, max_size=10)
    try:

        async def one(n: int) -> object:
            try:
                return await pool.fetchval("select $1::int + 1", n)
            except asyncpg.PostgresError as exc:
                return exc

        answers = await asyncio.gather(*(one(n) for n in range(CONCURRENT)))
    finally:
        await pool.close()
    failed = [a for a in answers if isinstance(a, asyncpg.InvalidSQLStatementNameError)]
    assert failed, f"none of {CONCURRENT} statements met another client's server session"


async def test_300_concurrent_requests_all_succeed(
    make_client: AppFactory, pgbouncer: PgBouncer, database_url: str
) -> None:
    client = await make_client(
        database_url=pgbouncer.url(database_url), database_pooling="transaction"
    )
    from sources.catalog.store import apply_batch

    assert not (await apply_batch(client.services.db, demo_batch())).errors
    admin = {"Authorization": f"Bearer {await client.admin_token()}"}
    user = {"X-Forwarded-User": "user:default/alice"}

    # Imports one at a time among themselves (concurrent imports of entities sharing an owner
    # can deadlock in the catalog store, directly as through the pooler), interleaved with
    # everything else.
    importing = asyncio.Lock()

    async def request(n: int) -> int:
        kind = n % 4
        if kind == 0:
            body = {"query": ENTITY, "variables": {"ref": "component:default/checkout"}}
        elif kind == 1:
            body = {"query": SEARCH, "variables": {"q": f"pay{n}"}}
        elif kind == 2:
            body = {"query": STAR, "variables": {"ref": "component:default/checkout"}}
        else:
            query = "mutation Apply($y: String!, $at: String!) {"
            query += " applyEntities(yaml: $y, location: $at) { created } }"
            body = {"query": query, "variables": {"y": CATALOG % n, "at": f"api/pooled-{n}"}}
        if kind == 3:
            async with importing:
                response = await client.post("/graphql", json=body, headers=admin)
        else:
            response = await client.post("/graphql", json=body, headers=user)
        assert "errors" not in response.json(), response.text
        return response.status_code

    statuses = await asyncio.gather(*(request(n) for n in range(CONCURRENT)))
    assert statuses == [200] * CONCURRENT
    created = await client.services.db.fetchval(
        "select count(*) from entities where ref like 'component:default/pooled-%'"
    )
    assert created == CONCURRENT // 4


async def test_nothing_is_left_in_the_servers_sessions(bounced: str) -> None:
    """After a burst of statements with arguments, no server session PgBouncer hands out holds
    a prepared statement, an advisory lock or a changed setting: every one of its server
    connections is looked at, at once (so each is a different one)."""
    db = await Database.connect(bounced, POOLED, min_size=2, max_size=8)
    try:
        await asyncio.gather(*(db.fetchval("select $1::int", n) for n in range(100)))
        async with db.try_lock(12345) as held:
            assert held

        async def look(started: asyncio.Barrier) -> tuple[int, int, int]:
            async with db.transaction() as tx:
                await started.wait()  # every transaction open: each on its own server session
                row = await tx.fetchrow(
                    "select (select count(*) from pg_prepared_statements),"
                    " (select count(*) from pg_locks where locktype = 'advisory' and database ="
                    " (select oid from pg_database where datname = current_database())),"
                    " pg_backend_pid()"
                )
                assert row is not None
                return row[0], row[1], row[2]

        barrier = asyncio.Barrier(POOL_SIZE)
        sessions = await asyncio.gather(*(look(barrier) for _ in range(POOL_SIZE)))
    finally:
        await db.close()
    assert len({pid for _, _, pid in sessions}) == POOL_SIZE
    assert [(prepared, locks) for prepared, locks, _ in sessions] == [(0, 0)] * POOL_SIZE


async def test_replicas_starting_together_on_an_empty_database_migrate_once(
    pgbouncer: PgBouncer, empty_database: str
) -> None:
    replicas = [
        await Database.connect(pgbouncer.url(empty_database), POOLED, min_size=1, max_size=2)
        for _ in range(3)
    ]
    migrations = core_migrations()
    try:
        applied = await asyncio.gather(*(apply_migrations(r, migrations) for r in replicas))
        recorded = await replicas[0].fetchval("select count(*) from atrium_migrations")
    finally:
        for replica in replicas:
            await replica.close()
    assert sorted(m.version for batch in applied for m in batch) == [m.version for m in migrations]
    assert recorded == len(migrations)


async def test_a_lock_holds_across_the_poolers_server_connections(bounced: str) -> None:
    """The directory sync's lock: held by one replica for as long as its run lasts, while both
    replicas' other statements go through the same few server connections."""
    one = await Database.connect(bounced, POOLED, min_size=1, max_size=3)
    other = await Database.connect(bounced, POOLED, min_size=1, max_size=3)
    try:
        async with one.try_lock(7) as held:
            assert held
            for _ in range(3):
                # Busy server connections between the two attempts: the lock stays put.
                await asyncio.gather(*(d.fetchval("select 1") for d in (one, other) * 10))
                async with other.try_lock(7) as also:
                    assert not also
        async with other.try_lock(7) as afterwards:
            assert afterwards
    finally:
        await one.close()
        await other.close()


def _jit_warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "jit is on" in r.getMessage()]


async def test_jit_is_left_to_the_role_and_said_when_on(
    bounced: str, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """Behind the pooler Atrium cannot turn jit off per session: it says so when it is on, and
    says nothing once the database (or the role) has it off."""
    with caplog.at_level(logging.WARNING, logger="sources.db"):
        db = await Database.connect(bounced, POOLED, min_size=1, max_size=1)
        await db.close()
    assert len(_jit_warnings(caplog)) == 1
    caplog.clear()
    name = database_url.rpartition("/")[2]
    async with _admin(database_url) as conn:
        await conn.execute(f'alter database "{name}" set jit = off')
        # PgBouncer's server sessions opened before keep their settings: end them.
        await conn.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity"
            " where datname = current_database() and pid <> pg_backend_pid()"
        )
    with caplog.at_level(logging.WARNING, logger="sources.db"):
        db = await Database.connect(bounced, POOLED, min_size=1, max_size=1)
        off = await db.fetchval("select current_setting('jit')")
        await db.close()
    assert off == "off"
    assert _jit_warnings(caplog) == []


async def test_a_statement_past_its_timeout_is_cancelled_by_atrium(bounced: str) -> None:
    """The pooler takes no statement_timeout at start-up: asyncpg times the statement."""
    options = DatabaseOptions(transaction_pooling=True, statement_timeout=0.2)
    db = await Database.connect(bounced, options, min_size=1, max_size=1)
    try:
        with pytest.raises(DatabaseUnavailable, match="no answer in time"):
            await db.fetchval("select pg_sleep(2)")
        assert await db.fetchval("select 1") == 1
    finally:
        await db.close()
