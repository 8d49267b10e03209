from __future__ import annotations

import pytest

from sources.catalog.documents import parse_documents
from sources.catalog.queries import entities_by_refs, relations_of
from sources.catalog.store import apply_batch
from sources.db import Database

# Also run through PgBouncer in transaction pooling mode (tests/conftest.py).
pytestmark = pytest.mark.pgbouncer


TEAM = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a}
spec: {type: team}
"""
SERVICE = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout, title: Checkout}
spec: {type: service, lifecycle: production, owner: team-a, dependsOn: ["component:cart"]}
"""
CART = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: cart}
spec: {type: service, lifecycle: production, owner: team-a}
"""


async def test_reimporting_an_unchanged_file_writes_nothing(db: Database) -> None:
    text = TEAM + "---" + SERVICE
    first = await apply_batch(db, parse_documents(text, "a.yaml"))
    assert sorted(first.created) == ["component:default/checkout", "group:default/team-a"]
    versions = await db.fetch("select ref, xmin::text, updated_at from entities order by ref")
    relations = await db.fetch("select xmin::text from relations order by 1")

    again = await apply_batch(db, parse_documents(text, "a.yaml"))
    assert again.created == again.updated == again.deleted == []
    assert sorted(again.unchanged) == ["component:default/checkout", "group:default/team-a"]
    # Row versions prove nothing was rewritten, not even with identical values.
    assert (
        await db.fetch("select ref, xmin::text, updated_at from entities order by ref") == versions
    )
    assert await db.fetch("select xmin::text from relations order by 1") == relations


async def test_a_relation_to_a_missing_entity_waits_for_it(db: Database) -> None:
    await apply_batch(db, parse_documents(SERVICE, "a.yaml"))
    assert await relations_of(db, [("component:default/checkout", "dependsOn")]) == {
        ("component:default/checkout", "dependsOn"): ["component:default/cart"]
    }
    assert await entities_by_refs(db, ["component:default/cart"]) == {}

    await apply_batch(db, parse_documents(CART, "b.yaml"))
    # The inverse relation was stored with the declaring entity, before cart existed.
    assert await relations_of(db, [("component:default/cart", "dependencyOf")]) == {
        ("component:default/cart", "dependencyOf"): ["component:default/checkout"]
    }
    assert "component:default/cart" in await entities_by_refs(db, ["component:default/cart"])


async def test_changing_an_entity_replaces_its_relations(db: Database) -> None:
    await apply_batch(db, parse_documents(SERVICE, "a.yaml"))
    changed = SERVICE.replace('dependsOn: ["component:cart"]', 'dependsOn: ["component:tax"]')
    result = await apply_batch(db, parse_documents(changed, "a.yaml"))
    assert result.updated == ["component:default/checkout"]
    found = await relations_of(
        db,
        [("component:default/checkout", "dependsOn"), ("component:default/cart", "dependencyOf")],
    )
    assert found == {("component:default/checkout", "dependsOn"): ["component:default/tax"]}


async def test_invalid_documents_are_skipped_and_the_rest_imported(db: Database) -> None:
    bad = SERVICE.replace("name: checkout", "name: 'bad name'")
    result = await apply_batch(db, parse_documents(TEAM + "---" + bad + "---" + CART, "mixed.yaml"))
    assert sorted(result.created) == ["component:default/cart", "group:default/team-a"]
    [error] = result.errors
    assert (error.location, error.document, error.field) == ("mixed.yaml", 2, "metadata.name")


async def test_an_entity_removed_from_its_file_is_deleted(db: Database) -> None:
    await apply_batch(db, parse_documents(TEAM + "---" + CART, "a.yaml"))
    result = await apply_batch(db, parse_documents(TEAM, "a.yaml"))
    assert result.deleted == ["component:default/cart"]
    assert (
        await db.fetchval(
            "select count(*) from relations where origin_ref = 'component:default/cart'"
        )
        == 0
    )


async def test_a_file_with_a_broken_document_deletes_nothing(db: Database) -> None:
    await apply_batch(db, parse_documents(TEAM + "---" + CART, "a.yaml"))
    result = await apply_batch(db, parse_documents(TEAM + "---\nkind: [broken\n", "a.yaml"))
    assert result.deleted == [] and len(result.errors) == 1
    assert await db.fetchval("select count(*) from entities") == 2


async def test_the_same_ref_twice_keeps_the_first(db: Database) -> None:
    result = await apply_batch(
        db, parse_documents(CART + "---" + CART.replace("team-a", "team-b"), "a.yaml")
    )
    assert result.created == ["component:default/cart"]
    assert "defined twice" in result.errors[0].message
    assert await db.fetchval("select owner_ref from entities") == "group:default/team-a"


async def test_a_failure_mid_batch_writes_nothing(db: Database) -> None:
    await db.execute(
        "create function refuse() returns trigger language plpgsql as "
        "$$ begin if new.name = 'cart' then raise exception 'refused'; end if; return new; end $$"
    )
    await db.execute(
        "create trigger refuse before insert on entities for each row execute function refuse()"
    )
    try:
        await apply_batch(db, parse_documents(TEAM + "---" + CART, "a.yaml"))
    except Exception as exc:
        assert "refused" in str(exc)
    else:
        raise AssertionError("the trigger should have failed the batch")
    assert await db.fetchval("select count(*) from entities") == 0
    assert await db.fetchval("select count(*) from relations") == 0


LIVE_FACETS = """
select f.field, e.kind, f.value, count(*) as count
from entities e cross join lateral facet_rows(e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags) f group by 1, 2, 3 order by 1, 2, 3
"""
KEPT_FACETS = "select field, kind, value, count from facet_counts order by 1, 2, 3"


async def test_facet_counts_follow_every_kind_of_write(db: Database) -> None:
    await apply_batch(db, parse_documents(TEAM + "---" + SERVICE + "---" + CART, "a.yaml"))
    assert await db.fetch(KEPT_FACETS) == await db.fetch(LIVE_FACETS)
    assert ("owner", "Component", "group:default/team-a", 2) in [
        tuple(r) for r in await db.fetch(KEPT_FACETS)
    ]

    moved = CART.replace("owner: team-a", "owner: team-b") + "\n  tags: [x]"
    moved = moved.replace("metadata: {name: cart}", "metadata: {name: cart, tags: [go, pci]}")
    await apply_batch(db, parse_documents(TEAM + "---" + SERVICE + "---" + moved, "a.yaml"))
    assert await db.fetch(KEPT_FACETS) == await db.fetch(LIVE_FACETS)

    await apply_batch(db, parse_documents(TEAM, "a.yaml"))  # both components deleted
    kept = await db.fetch(KEPT_FACETS)
    assert kept == await db.fetch(LIVE_FACETS)
    assert all(r["kind"] == "Group" for r in kept), "no zero counts are left behind"


async def test_recount_rebuilds_the_same_counts(db: Database) -> None:
    await apply_batch(db, parse_documents(TEAM + "---" + SERVICE + "---" + CART, "a.yaml"))
    before = await db.fetch(KEPT_FACETS)
    await db.execute("select recount_facets()")
    assert await db.fetch(KEPT_FACETS) == before
