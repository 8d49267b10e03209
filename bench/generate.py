"""Loading the generated catalog: COPY into bare tables, then index, then VACUUM ANALYZE.

The normal import (``apply_batch``) upserts row by row and maintains eight indexes as it goes;
at 250,000 entities and two million relation rows that takes many minutes. Here the tables'
indexes and constraints are read from the catalog, dropped, the rows COPYed in on parallel
connections, and the very same definitions rebuilt, which PostgreSQL does in bulk (sorted
B-tree builds, GIN built in memory). The schema under test is still the migrations'.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Final

import asyncpg

from bench.bulk import CONSTRAINTS, INDEXES, chunks, connect, copy_rows, parallel, run_sql
from bench.catalog import CatalogPlan, Shape
from bench.rows import ENTITY_COLUMNS, RELATION_COLUMNS, Rows, build_rows

__all__ = ["LoadReport", "generate", "print_load"]

TABLES: Final = ("entities", "relations", "search_terms", "search_trigrams", "facet_counts")


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


async def _ddl(conn: asyncpg.Connection) -> tuple[list[str], list[str], list[tuple[str, str]]]:
    """(drops in a safe order, creates grouped per table for parallel builds, foreign keys)."""
    constraints = await conn.fetch(CONSTRAINTS, list(TABLES))
    indexes = await conn.fetch(INDEXES, list(TABLES))
    foreign = [c for c in constraints if c["foreign"]]
    keys = [c for c in constraints if not c["foreign"]]
    drops = [c["drop"] for c in foreign] + [c["drop"] for c in keys] + [i["drop"] for i in indexes]
    creates = [(c["table_name"], c["create"]) for c in keys]
    creates += [(i["table_name"], i["create"]) for i in indexes]
    return drops, [c["create"] for c in foreign], creates


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

    conns = [await connect(url) for _ in range(connections)]
    try:
        drops, foreign_keys, creates = await _ddl(conns[0])
        for sql in drops:
            await conns[0].execute(sql)
        # The facet-count triggers would upsert into a table whose key is dropped for the
        # load; the counts are rebuilt in one pass once the indexes are back.
        await conns[0].execute("alter table entities disable trigger user")
        # Entities in one COPY, so ids and heap order follow the documents as an import's
        # would, the same in every run; relations in slices on the other connections.
        await parallel(
            conns,
            [
                copy_rows("entities", rows.entities, ENTITY_COLUMNS),
                *(
                    copy_rows("relations", c, RELATION_COLUMNS)
                    for c in chunks(rows.relations, 250_000)
                ),
                copy_rows("search_terms", rows.terms, ("term", "trigram_count")),
                copy_rows("search_trigrams", rows.trigrams, ("trigram", "term")),
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
        await parallel(conns, [run_sql(sql) for _, sql in _by_cost(creates)])
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


def print_load(report: LoadReport) -> None:
    total = sum(report.kinds.values())
    kinds = ", ".join(f"{count:,} {kind}" for kind, count in report.kinds.items())
    print(f"entities: {total:,} ({kinds})")
    print(
        f"relation rows: {report.relations:,} (both directions); search vocabulary: "
        f"{report.terms:,} terms, {report.trigrams:,} trigram rows"
    )
    steps = ", ".join(f"{step} {seconds:.1f} s" for step, seconds in report.steps.items())
    print(
        f"generated in {report.seconds:.1f} s ({steps}); "
        f"{report.checked:,} documents cross-checked against validate_entity"
    )
