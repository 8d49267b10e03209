"""Backstage's filter syntax, read as its backend reads it and turned into one condition: what
it accepts, what it refuses (and says why), and which indexes answer it."""

from __future__ import annotations

from typing import Any

import pytest

from sources.catalog.documents import parse_documents
from sources.catalog.listing import Order, keyset_sql, list_entities
from sources.catalog.predicates import Condition, parse_filters, to_where
from sources.catalog.queries import EntityFilter, count_entities, count_sql
from sources.catalog.search_keys import FilterError
from sources.catalog.store import apply_batch
from sources.db import Database
from tests.conftest import demo_batch


def test_statements_and_filters_combine_as_backstage_reads_them() -> None:
    [first, second] = parse_filters(
        ["kind=Component, spec.type=service,kind=API", "relations.ownedBy=group:default/a,x"]
    )
    assert first == (
        Condition("kind", ("component", "api")),
        Condition("spec.type", ("service",)),
    )
    assert second == (Condition("relations.ownedBy", ("group:default/a",)), Condition("x", None))
    # A bare key wins over values of the same key, whichever comes first; empty filters and
    # empty statements are nothing.
    assert parse_filters(["a=1,a", "b,b=2", "", " , "]) == [
        (Condition("a", None),),
        (Condition("b", None),),
    ]
    # Only the first = splits: values may hold more.
    assert parse_filters(["metadata.annotations.x=a=b"]) == [
        (Condition("metadata.annotations.x", ("a=b",)),)
    ]


@pytest.mark.parametrize(
    ("filters", "message"),
    [
        (["=value"], "not a valid statement"),
        (["kind=a\x00b"], "NUL"),
        (["spec.type\x00=x"], "NUL"),
        (["kind=\ud800"], "lone surrogate"),
        ([f"metadata.name={'x' * 201}"], "at most 200 characters"),
        ([f"spec.{'k' * 200}=x"], "at most 200 characters"),
        ([",".join(["kind=a"] * 101)], "at most 100 statements"),
        (["kind=a"] * 101, "at most 100 statements"),
    ],
)
def test_what_cannot_be_a_filter_is_refused_saying_why(filters: list[str], message: str) -> None:
    with pytest.raises(FilterError, match=message):
        parse_filters(filters)


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("status.items", "not a field Atrium can filter on"),
        ("attachments", "not a field Atrium can filter on"),
        ("metadata.generation", "Atrium keeps no such metadata"),
        ("relations", "name a relation type"),
        ("relations.likes", "name a relation type"),
    ],
)
def test_keys_atrium_keeps_nothing_under_are_refused(key: str, message: str) -> None:
    with pytest.raises(FilterError, match=message):
        to_where(parse_filters([f"{key}=x"]))


def test_values_never_reach_sql_as_text() -> None:
    hostile = "x' or '1'='1"
    where = to_where(parse_filters([f"metadata.name={hostile}", f"spec.owner={hostile}"]))
    assert hostile.lower() in where.params
    assert "'1'" not in where.sql and hostile not in where.sql


@pytest.fixture
async def demo(db: Database) -> Database:
    result = await apply_batch(db, demo_batch())
    assert not result.errors
    return db


async def _plan(
    db: Database, sql: str, params: tuple[Any, ...], *, ruled_out: tuple[str, ...] = ()
) -> str:
    """The plan PostgreSQL would choose at scale: a sequential scan of the demo's 190 rows is
    cheaper than any index, so it is ruled out, as it is by a quarter of a million rows; so are
    the ``ruled_out`` plan types (``enable_<type>``)."""
    async with db.transaction() as tx:
        for kind in ("seqscan", *ruled_out):
            await tx.execute(f"set local enable_{kind} = off")
        rows = await tx.fetch(f"explain {sql}", *params)
    return "\n".join(row[0] for row in rows)


async def test_graphqls_annotation_filter_is_answered_from_the_annotations_index(
    demo: Database,
) -> None:
    where = EntityFilter(annotations={"github.com/project-slug": "juniper/checkout"}).where(None)
    assert await count_entities(demo, where) == 2
    plan = await _plan(demo, count_sql(where.sql), where.params)
    assert "entities_annotations" in plan and "entities_annotations_folded" not in plan, plan


async def test_backstage_annotation_filters_are_answered_from_the_folded_index(
    demo: Database,
) -> None:
    where = to_where(
        parse_filters(["metadata.annotations.GitHub.com/Project-Slug=JUNIPER/checkout"])
    )
    assert await count_entities(demo, where) == 2
    plan = await _plan(demo, count_sql(where.sql), where.params)
    assert "entities_annotations_folded" in plan, plan
    exists = to_where(parse_filters(["metadata.labels.tier"]))
    plan = await _plan(demo, count_sql(exists.sql), exists.params)
    assert "entities_labels_folded" in plan, plan


async def test_a_kind_and_name_page_reads_an_index_in_order(demo: Database) -> None:
    where = to_where(parse_filters(["kind=component,spec.type=service"]))
    n = len(where.params)
    params = (*where.params, "checkout", "component:default/checkout", 20, 0)
    # At 190 rows, a bitmap scan of the index and a sort of its few rows costs less than
    # reading the index in order, once autovacuum has analysed the table (and not before: the
    # plan changed from run to run). Ruled out as they are by a quarter of a million rows, the
    # sort stays in the plan unless the index gives the order.
    sql = keyset_sql(Order.NAME_ASC, where.sql, n)
    plan = await _plan(demo, sql, params, ruled_out=("bitmapscan", "sort"))
    assert "entities_kind_name" in plan and "Sort" not in plan, plan


async def test_a_cursor_page_starts_after_its_entity_whatever_was_added(demo: Database) -> None:
    """Keyset, not offset: entities added before the position do not shift the next page."""
    where = to_where(parse_filters(["kind=component"]))
    first = await list_entities(demo, where, order=Order.NAME_ASC, after=None, limit=10)
    last, key = first[-1]
    position = (key, last.ref)
    before = await list_entities(demo, where, order=Order.NAME_ASC, after=position, limit=5)
    docs = "\n---\n".join(
        f"apiVersion: backstage.io/v1alpha1\nkind: Component\nmetadata: {{name: aaa-{i}}}\n"
        "spec: {type: service, lifecycle: production, owner: team-a}"
        for i in range(3)
    )
    assert not (await apply_batch(demo, parse_documents(docs, "new.yaml"))).errors
    following = await list_entities(demo, where, order=Order.NAME_ASC, after=position, limit=5)
    assert [r.ref for r, _ in following] == [r.ref for r, _ in before]
    # What was added sorts before the position, so an offset would have shifted by three.
    everything = await list_entities(demo, where, order=Order.NAME_ASC, after=None, limit=100)
    refs = [r.ref for r, _ in everything]
    assert refs.index(last.ref) == 12 and refs[:3] == [
        f"component:default/aaa-{i}" for i in range(3)
    ]
