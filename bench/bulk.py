"""Bulk loading for generated data: COPY on parallel connections into tables whose indexes and
constraints are dropped first and rebuilt after, which PostgreSQL does in bulk (sorted B-tree
builds, GIN built in memory). The catalog's generator and the deployments' history use it; the
definitions rebuilt are read from the catalog, so the schema under test is the migrations'.
"""

from __future__ import annotations

import asyncio
import collections
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import asyncpg
import orjson

__all__ = ["CONSTRAINTS", "INDEXES", "Job", "chunks", "connect", "copy_rows", "parallel", "run_sql"]

# DDL to drop and to recreate every index and constraint of the tables (and foreign keys of
# other tables that point at them), built server-side with format() from the catalog:
# nothing here comes from input.
CONSTRAINTS: Final = """
select format('alter table %s drop constraint %I', c.conrelid::regclass, c.conname) as drop,
       format('alter table %s add constraint %I %s', c.conrelid::regclass, c.conname,
              pg_get_constraintdef(c.oid)) as create,
       c.contype = 'f' as foreign,
       c.conrelid::regclass::text as table_name
from pg_constraint c
where c.contype in ('p', 'u', 'f')
  and (c.conrelid = any($1::regclass[]) or c.confrelid = any($1::regclass[]))
order by c.conname
"""
INDEXES: Final = """
select format('drop index %s', i.indexrelid::regclass) as drop,
       pg_get_indexdef(i.indexrelid) as create,
       i.indrelid::regclass::text as table_name
from pg_index i
where i.indrelid = any($1::regclass[])
  and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid
                  and c.conrelid = i.indrelid)
order by i.indexrelid::regclass::text
"""


async def connect(url: str) -> asyncpg.Connection:
    conn = await asyncpg.connect(url)
    # COPY is binary; jsonb's binary form is a version byte (1) and the JSON text.
    await conn.set_type_codec(
        "jsonb",
        schema="pg_catalog",
        format="binary",
        encoder=lambda value: b"\x01" + orjson.dumps(value),
        decoder=lambda data: orjson.loads(data[1:]),
    )
    # Session settings for the load only; the server's configuration is what gets measured.
    await conn.execute("set synchronous_commit = off")
    await conn.execute("set maintenance_work_mem = '256MB'")
    return conn


Job = Callable[[asyncpg.Connection], Awaitable[Any]]


async def parallel(conns: Sequence[asyncpg.Connection], jobs: Sequence[Job]) -> None:
    """Run ``jobs`` on ``conns``, each connection taking the next job when it is free."""
    queue: collections.deque[Job] = collections.deque(jobs)

    async def worker(conn: asyncpg.Connection) -> None:
        while queue:
            await queue.popleft()(conn)

    await asyncio.gather(*(worker(c) for c in conns))


def copy_rows(table: str, records: list[Any], columns: Sequence[str]) -> Job:
    async def job(conn: asyncpg.Connection) -> None:
        await conn.copy_records_to_table(table, records=records, columns=list(columns))

    return job


def run_sql(sql: str, *args: Any) -> Job:
    async def job(conn: asyncpg.Connection) -> None:
        await conn.execute(sql, *args)

    return job


def chunks(records: list[Any], size: int) -> list[list[Any]]:
    return [records[i : i + size] for i in range(0, len(records), size)]
