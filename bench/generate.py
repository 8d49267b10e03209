"""Bulk-loading the generated catalog: COPY into bare tables, then index, then VACUUM ANALYZE.

The normal import (``apply_batch``) upserts row by row and maintains eight indexes as it goes;
at 250,000 entities and two million relation rows that takes many minutes. Here the tables'
indexes and constraints are read from the catalog, dropped, the rows COPYed in on parallel
connections, and the very same definitions rebuilt, which PostgreSQL does in bulk (sorted
B-tree builds, GIN built in memory). The schema under test is still the migrations'.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Final

import asyncpg
import orjson

from bench.catalog import CatalogPlan, Shape
from bench.rows import ENTITY_COLUMNS, RELATION_COLUMNS, Rows, build_rows

__all__ = ["LoadReport", "generate"]

TABLES: Final = ("entities", "relations", "search_terms", "search_trigrams", "facet_counts")

# DDL to drop and to recreate every index and constraint of the tables (and foreign keys of
# other tables that point at them), built server-side with format() from the catalog:
# nothing here comes from input.
_CONSTRAINTS = """
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
_INDEXES = """
select format('drop index %s', i.indexrelid::regclass) as drop,
       pg_get_indexdef(i.indexrelid) as create,
       i.indrelid::regclass::text as table_name
from pg_index i
where i.indrelid = any($1::regclass[])
  and not exists (select 1 from pg_constraint c where c.conindid = i.indexrelid
                  and c.conrelid = i.indrelid)
order by i.indexrelid::regclass::text
"""


@dataclass(slots=True)
class LoadReport:
    shape: Shape
    kinds: dict[str, int] = field(default_factory=dict)
    relations: int = 0
    terms: int = 0
    trigrams: int = 0
    checked: int = 0
    steps: dict[str, float] = field(default_factory=dict)

    @property
    def seconds(self) -> float:
        return sum(self.steps.values())


async def _connect(url: str) -> asyncpg.Connection:
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


async def _ddl(conn: asyncpg.Connection) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """(drops in a safe order, creates grouped per table for parallel builds, foreign keys)."""
    constraints = await conn.fetch(_CONSTRAINTS, list(TABLES))
    indexes = await conn.fetch(_INDEXES, list(TABLES))
    foreign = [c for c in constraints if c["foreign"]]
    keys = [c for c in constraints if not c["foreign"]]
    drops = [c["drop"] for c in foreign] + [c["drop"] for c in keys] + [i["drop"] for i in indexes]
    creates = [(c["table_name"], c["create"]) for c in keys]
    creates += [(i["table_name"], i["create"]) for i in indexes]
    return drops, [c["create"] for c in foreign], creates


Job = Callable[[asyncpg.Connection], Awaitable[Any]]


async def _parallel(conns: Sequence[asyncpg.Connection], jobs: Sequence[Job]) -> None:
    """Run ``jobs`` on ``conns``, each connection taking the next job when it is free."""
    queue: collections.deque[Job] = collections.deque(jobs)

    async def worker(conn: asyncpg.Connection) -> None:
        while queue:
            await queue.popleft()(conn)

    await asyncio.gather(*(worker(c) for c in conns))


def _copy(table: str, records: list[Any], columns: Sequence[str]) -> Job:
    async def job(conn: asyncpg.Connection) -> None:
        await conn.copy_records_to_table(table, records=records, columns=list(columns))

    return job


def _execute(sql: str) -> Job:
    async def job(conn: asyncpg.Connection) -> None:
        await conn.execute(sql)

    return job


def _chunks(records: list[Any], size: int) -> list[list[Any]]:
    return [records[i : i + size] for i in range(0, len(records), size)]


async def generate(url: str, total: int, *, seed: int = 7, connections: int = 3) -> LoadReport:
    """Fill the (migrated, empty) database at ``url`` with a catalog of ``total`` entities."""
    report = LoadReport(Shape.for_total(total))
    clock = time.perf_counter()

    def lap(step: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        report.steps[step] = now - clock
        clock = now

    # Millions of new objects, none of them garbage: collection would only rescan them.
    gc.disable()
    try:
        rows: Rows = build_rows(CatalogPlan(report.shape, seed).documents())
    finally:
        gc.enable()
    report.checked = rows.checked
    lap("documents and rows")

    conns = [await _connect(url) for _ in range(connections)]
    try:
        drops, foreign_keys, creates = await _ddl(conns[0])
        for sql in drops:
            await conns[0].execute(sql)
        # The facet-count triggers would upsert into a table whose key is dropped for the
        # load; the counts are rebuilt in one pass once the indexes are back.
        await conns[0].execute("alter table entities disable trigger user")
        # Entities in one COPY, so ids and heap order follow the documents as an import's
        # would, the same in every run; relations in slices on the other connections.
        await _parallel(
            conns,
            [
                _copy("entities", rows.entities, ENTITY_COLUMNS),
                *(
                    _copy("relations", c, RELATION_COLUMNS)
                    for c in _chunks(rows.relations, 250_000)
                ),
                _copy("search_terms", rows.terms, ("term", "trigram_count")),
                _copy("search_trigrams", rows.trigrams, ("trigram", "term")),
            ],
        )
        lap("copy")
        report.relations, report.terms, report.trigrams = (
            len(rows.relations),
            len(rows.terms),
            len(rows.trigrams),
        )
        del rows
        gc.collect()
        # Largest builds first so the last one to finish is a small one.
        await _parallel(conns, [_execute(sql) for _, sql in _by_cost(creates)])
        for sql in foreign_keys:
            await conns[0].execute(sql)
        await conns[0].execute("alter table entities enable trigger user")
        await conns[0].execute("select recount_facets()")
        lap("indexes and facet counts")
        for table in TABLES:
            await conns[0].execute(f"vacuum (analyze) {table}")
        lap("vacuum analyze")
        report.kinds = {
            r["kind"]: r["count"]
            for r in await conns[0].fetch(
                "select kind, count(*) as count from entities group by kind order by count desc"
            )
        }
    finally:
        for conn in conns:
            await conn.close()
    return report


_COST: Final = {"relations": 0, "entities": 1, "search_trigrams": 2, "search_terms": 3}


def _by_cost(creates: list[tuple[str, str]]) -> list[tuple[str, str]]:
    def cost(item: tuple[str, str]) -> tuple[int, int]:
        table, sql = item
        gin = " using gin " in sql.lower()
        return (_COST.get(table, 9), 0 if gin or "primary key" in sql.lower() else 1)

    return sorted(creates, key=cost)
