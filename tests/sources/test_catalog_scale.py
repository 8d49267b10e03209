"""What keeps the catalog fast at a million entities: totals the facet counts can give come
from them, exactly; a search ranks and counts its matches in one pass; a word being typed is
recognised from one step of the vocabulary's prefix index; a team's entities of a kind are a
range of one index."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from sources.catalog import store, vocabulary
from sources.catalog.documents import read_paths
from sources.catalog.listing import Order, keyset_sql, ranked_page
from sources.catalog.queries import EntityFilter, count_entities, count_sql, prepare_search
from sources.catalog.store import apply_batch
from sources.db import Database
from tests.conftest import EXAMPLES


class _Recorder:
    """An executor that writes down the statements it is given."""

    def __init__(self, db: Database) -> None:
        self.db = db
        self.statements: list[str] = []

    async def fetchval(self, sql: str, *args: Any) -> Any:
        self.statements.append(sql)
        return await self.db.fetchval(sql, *args)

    async def fetch(self, sql: str, *args: Any) -> Any:
        self.statements.append(sql)
        return await self.db.fetch(sql, *args)


@pytest.fixture
async def demo(db: Database) -> Database:
    result = await apply_batch(db, read_paths([EXAMPLES]))
    assert not result.errors
    return db


COUNTED = [
    EntityFilter(kinds=["Component"], owners=["group:default/payments-squad"]),
    EntityFilter(kinds=["Component"], lifecycles=["production"]),
    EntityFilter(kinds=["Component", "API"], lifecycles=["production", "experimental"]),
    EntityFilter(owners=["group:default/payments-squad", "group:default/checkout-team"]),
    EntityFilter(kinds=["API"], types=["openapi"]),
    EntityFilter(systems=["system:default/checkout"]),
    EntityFilter(namespaces=["default"]),
    EntityFilter(kinds=["Component"], tags=["go"]),
    EntityFilter(kinds=["Component"], owners=["group:default/nobody-at-all"]),
]
NOT_COUNTED = [
    # Two tags: an entity with both would be counted twice.
    EntityFilter(kinds=["Component"], tags=["go", "kafka"]),
    # Two fields: the counts are per field.
    EntityFilter(
        kinds=["Component"], owners=["group:default/payments-squad"], lifecycles=["production"]
    ),
    EntityFilter(kinds=["Component"], labels={"tier": "1"}),
    EntityFilter(owners=["group:default/payments-squad"], refs=["component:default/checkout"]),
]


@pytest.mark.parametrize("entity_filter", COUNTED)
async def test_totals_of_kinds_and_one_counted_field_come_from_the_counts(
    demo: Database, entity_filter: EntityFilter
) -> None:
    where = entity_filter.where(None)
    assert where.counted is not None
    recorder = _Recorder(demo)
    total = await count_entities(recorder, where)  # type: ignore[arg-type]
    assert total == await demo.fetchval(count_sql(where.sql), *where.params)
    assert len(recorder.statements) == 1 and "facet_counts" in recorder.statements[0]


@pytest.mark.parametrize("entity_filter", NOT_COUNTED)
async def test_other_totals_are_counted_from_the_entities(
    demo: Database, entity_filter: EntityFilter
) -> None:
    where = entity_filter.where(None)
    assert where.counted is None
    recorder = _Recorder(demo)
    total = await count_entities(recorder, where)  # type: ignore[arg-type]
    assert total == await demo.fetchval(count_sql(where.sql), *where.params)
    assert "facet_counts" not in recorder.statements[0]


async def test_a_search_is_never_counted_from_the_counts(demo: Database) -> None:
    search = await prepare_search(demo, "checkout")
    assert EntityFilter(kinds=["Component"]).where(search).counted is None


# The order relevance had when every match was ranked and counted by statements of their own.
_RANKED_ALONE = """
select e.ref from entities e where {where}
order by (lower(e.name) = ${text}) desc, ts_rank(e.search, to_tsquery('english', {rank})) desc,
         e.ref
"""


@pytest.mark.parametrize("text", ["checkout", "chekout", "payments api", "service", "zzzz"])
async def test_a_search_page_is_ranked_and_counted_in_one_pass(demo: Database, text: str) -> None:
    search = await prepare_search(demo, text)
    where = EntityFilter().where(search)
    assert where.rank is not None
    expected = [
        r["ref"]
        for r in await demo.fetch(
            _RANKED_ALONE.format(where=where.sql, text=len(where.params) + 1, rank=where.rank),
            *where.params,
            text,
        )
    ]
    recorder = _Recorder(demo)
    pages, seen = [], 0
    while True:
        records, total = await ranked_page(recorder, where, search, start=seen, limit=4)  # type: ignore[arg-type]
        if not records:
            assert total is None
            break
        assert total == len(expected)
        pages += [r.ref for r in records]
        seen += len(records)
    assert pages == expected
    assert len(recorder.statements) == -(-len(expected) // 4) + 1


async def test_a_word_being_typed_is_found_from_one_step_of_the_prefix_index(
    db: Database,
) -> None:
    async with db.transaction() as tx:
        await vocabulary.record_terms(tx, ["checkout service", "payments gateway"])
        await tx.execute("set local enable_seqscan = off")
        words = ["check", "chekout"]
        rows = [(w, g, 3) for w in words for g in sorted(vocabulary.trigrams(w))]
        plan = await tx.fetch(
            f"explain {vocabulary._CORRECTIONS}",
            [r[0] for r in rows],
            [r[1] for r in rows],
            [r[2] for r in rows],
            0.3,
            3,
        )
    text = "\n".join(r[0] for r in plan)
    assert "search_terms_prefix" in text and "Seq Scan on search_terms" not in text, text
    assert await vocabulary.corrections(db, ["check", "chekout", "gatewya", "zzzz"]) == {
        "chekout": ["checkout"],
        "gatewya": ["gateway"],
    }


async def test_a_page_of_a_team_s_entities_of_a_kind_reads_one_index_range(
    demo: Database,
) -> None:
    where = EntityFilter(kinds=["Component"], owners=["group:default/payments-squad"]).where(None)
    n = len(where.params)
    sql = keyset_sql(Order.NAME_ASC, where.sql, n)
    params = (*where.params, None, None, 51, 0)
    async with demo.transaction() as tx:
        # The demo's rows are few: a scan would be cheapest, as no index is for a million.
        await tx.execute("set local enable_seqscan = off")
        plan = "\n".join(r[0] for r in await tx.fetch(f"explain {sql}", *params))
    assert "entities_owner_name" in plan and "Sort" not in plan, plan
    page = await demo.fetch(sql, *params)
    assert [r["ref"] for r in page] == [
        r["ref"]
        for r in await demo.fetch(
            "select ref from entities where kind = 'Component' and owner_ref = $1 "
            "order by lower(name), ref",
            "group:default/payments-squad",
        )
    ]


async def test_an_unchanged_import_leaves_its_rows_untouched(demo: Database) -> None:
    """Locking a row writes a mark into it: a million unchanged entities read under lock were
    a million rows written, for nothing. Only the rows to be written are locked."""
    batch = read_paths([EXAMPLES])
    result = await apply_batch(demo, batch)
    assert not result.changed and len(result.unchanged) == len(batch.entities)
    assert await demo.fetchval("select count(*) from entities where xmax <> 0") == 0


_TABLES = {
    "entities": "select ref, kind, owner_ref, system_ref, tags, spec, hash, origin from entities",
    "relations": "select * from relations",
    "facet_counts": "select * from facet_counts",
    "search_terms": "select * from search_terms",
}


async def _tables(db: Database) -> dict[str, list[Any]]:
    return {t: sorted(map(tuple, await db.fetch(sql))) for t, sql in _TABLES.items()}


def _components(names: list[str], owner: str) -> str:
    return "\n---\n".join(
        f"apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata: {{name: {n}, "
        f"tags: [go, {n}]}}\nspec: {{type: service, lifecycle: production, owner: {owner}, "
        f"system: shop, dependsOn: ['component:{names[0]}'], providesApis: [{n}-api]}}"
        for n in names
    )


async def test_a_batch_is_written_a_slice_at_a_time_as_if_whole(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Written in slices of 7 entities and 11 relations, a batch leaves what it leaves written
    whole: created, then edited and shrunk (updates, deletions, relations dropped)."""
    names = [f"c{i:02}" for i in range(30)]
    catalog = tmp_path / "catalog-info.yaml"
    results: dict[bool, list[Any]] = {}
    for sliced in (False, True):
        await db.execute(
            "truncate entities, relations, facet_counts, search_terms, search_trigrams"
        )
        if sliced:
            monkeypatch.setattr(store, "ENTITY_SLICE", 7)
            monkeypatch.setattr(store, "RELATION_SLICE", 11)
        catalog.write_text(_components(names, "team-a"))
        first = await apply_batch(db, read_paths([catalog]))
        after_first = await _tables(db)
        catalog.write_text(_components(names[:12], "team-b"))
        second = await apply_batch(db, read_paths([catalog]))
        results[sliced] = [
            (sorted(first.created), sorted(first.related)),
            after_first,
            (sorted(second.updated), sorted(second.deleted), sorted(second.related)),
            await _tables(db),
        ]
        assert len(first.created) == 30 and len(second.updated) == 12
        assert len(second.deleted) == 18
    assert results[True] == results[False]
