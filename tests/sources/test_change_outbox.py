"""The outbox of change events: every committed change to an entity is written for each hook in
the transaction that makes it, whoever writes (imports, deletions, the directory sync), and
nothing when the change is rolled back or no hook is registered."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sources.catalog.documents import ParsedBatch, parse_documents
from sources.catalog.model import validate_entity
from sources.catalog.store import apply_batch, delete_entity
from sources.catalog.uids import entity_uid
from sources.changes.hooks import create_hook
from sources.changes.secrets import SecretBox
from sources.db import Database, Executor
from sources.errors import SyncBraked
from sources.ldap.sync import sync_directory
from tests.conftest import demo_batch
from tests.slapd import Slapd, group, group_dn, person, start_slapd, user_dn
from tests.sources.test_ldap_sync import config_for

TEAM = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a}
spec: {type: team, children: [], members: [ada]}
"""
ADA = """
apiVersion: backstage.io/v1alpha1
kind: User
metadata: {name: ada}
spec: {memberOf: [team-a]}
"""
SERVICE = """
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout, title: Checkout}
spec: {type: service, lifecycle: production, owner: team-a}
"""


async def hook(db: Database, kinds: list[str] | None = None) -> int:
    return await create_hook(
        db,
        SecretBox(None),
        url="http://127.0.0.1:9/events",
        secret="s" * 16,
        kinds=kinds,
        created_by="test",
    )


async def outbox(db: Executor, hook_id: int | None = None) -> list[dict[str, Any]]:
    rows = await db.fetch(
        "select * from change_deliveries where $1::bigint is null or hook_id = $1 order by id",
        hook_id,
    )
    return [dict(row) for row in rows]


async def test_nothing_is_written_while_no_hook_is_registered(db: Database) -> None:
    result = await apply_batch(db, demo_batch())
    assert result.created
    assert await outbox(db) == []


async def test_an_import_writes_one_event_per_change_for_each_hook_that_wants_its_kind(
    db: Database,
) -> None:
    every = await hook(db)
    groups = await hook(db, ["Group"])
    result = await apply_batch(db, demo_batch())

    events = await outbox(db, every)
    assert sorted(e["ref"] for e in events) == sorted(result.created)
    assert {e["type"] for e in events} == {"entity.created"}
    assert all(e["previous"] is None and e["state"] == "pending" for e in events)
    group_events = await outbox(db, groups)
    assert sorted(e["ref"] for e in group_events) == sorted(
        ref for ref in result.created if ref.startswith("group:")
    )
    # One event, one id, whatever the number of hooks; each delivery its own id.
    by_ref = {e["ref"]: e for e in events}
    for event in group_events:
        assert event["event_id"] == by_ref[event["ref"]]["event_id"]
        assert event["delivery_id"] != by_ref[event["ref"]]["delivery_id"]
    assert len({e["event_id"] for e in events}) == len(events)

    # The entity as Backstage's JSON shape has it, its uid the one the catalog API gives.
    checkout = by_ref["component:default/checkout"]["entity"]
    row = await db.fetchrow(
        "select id, title, spec from entities where ref = 'component:default/checkout'"
    )
    assert checkout["apiVersion"] == "backstage.io/v1alpha1" and checkout["kind"] == "Component"
    assert checkout["metadata"]["uid"] == entity_uid(row["id"])
    assert checkout["metadata"]["name"] == "checkout"
    assert checkout["metadata"]["title"] == row["title"]
    assert checkout["spec"] == row["spec"]

    # An unchanged re-import changes nothing, so it announces nothing.
    await apply_batch(db, demo_batch())
    assert len(await outbox(db)) == len(events) + len(group_events)


async def test_each_kind_of_change_has_its_type_and_carries_what_was_before(db: Database) -> None:
    hook_id = await hook(db)
    await apply_batch(db, parse_documents(TEAM + "---" + ADA + "---" + SERVICE, "a.yaml"))
    owned = SERVICE.replace("owner: team-a", "owner: team-b")
    await apply_batch(db, parse_documents(TEAM + "---" + ADA + "---" + owned, "a.yaml"))
    described = owned.replace("title: Checkout", "title: Checkout service")
    moved = TEAM.replace("members: [ada]", "members: []")
    await apply_batch(db, parse_documents(moved + "---" + ADA + "---" + described, "a.yaml"))
    left = ADA.replace("memberOf: [team-a]", "memberOf: []")
    await apply_batch(db, parse_documents(moved + "---" + left, "a.yaml"))  # checkout goes
    await delete_entity(db, "user:default/ada")

    events = [(e["ref"], e["type"]) for e in await outbox(db, hook_id)][3:]
    assert events == [
        ("component:default/checkout", "ownership.changed"),
        ("component:default/checkout", "entity.updated"),
        ("group:default/team-a", "membership.changed"),
        # One import: what it writes, then what it deletes.
        ("user:default/ada", "membership.changed"),
        ("component:default/checkout", "entity.deleted"),
        ("user:default/ada", "entity.deleted"),
    ]
    rows = await outbox(db, hook_id)
    owner_change = rows[3]
    assert owner_change["previous"]["spec"]["owner"] == "team-a"
    assert owner_change["entity"]["spec"]["owner"] == "team-b"
    deleted = rows[7]
    assert deleted["entity"] is None
    assert deleted["previous"]["metadata"]["title"] == "Checkout service"
    # Ids ascend with the changes: the order deliveries keep per ref.
    assert [r["id"] for r in rows] == sorted(r["id"] for r in rows)


async def test_a_change_rolled_back_leaves_nothing_to_deliver(db: Database) -> None:
    await hook(db)

    async def refuse(tx: Executor, doomed: list[tuple[str, str]]) -> None:
        raise SyncBraked("no")

    with pytest.raises(SyncBraked):
        await apply_batch(db, parse_documents(TEAM, "a.yaml"), guard=refuse)
    assert await db.fetchval("select count(*) from entities") == 0
    assert await outbox(db) == []


async def test_ten_thousand_changes_cost_the_import_no_extra_statement(db: Database) -> None:
    def batch(version: str) -> ParsedBatch:
        entities = [
            (
                "big.yaml",
                validate_entity(
                    {
                        "apiVersion": "backstage.io/v1alpha1",
                        "kind": "Component",
                        "metadata": {"name": f"service-{i}", "description": version},
                        "spec": {"type": "service", "lifecycle": "production", "owner": "a"},
                    }
                ),
            )
            for i in range(10_000)
        ]
        return ParsedBatch(entities, [], {"big.yaml"})

    await apply_batch(db, batch("first"))
    before = db.queries
    await apply_batch(db, batch("second"))
    without_hook = db.queries - before

    await hook(db)
    before = db.queries
    result = await apply_batch(db, batch("third"))
    with_hook = db.queries - before

    assert len(result.updated) == 10_000
    assert with_hook == without_hook  # the outbox rows ride on the import's own statements
    events = await db.fetch("select type, count(*) from change_deliveries group by type")
    assert [tuple(e) for e in events] == [("entity.updated", 10_000)]


# The directory sync: users and groups, memberships from both sides.
DIRECTORY = "\n".join(
    [
        person("ada", "Ada Lovelace"),
        person("grace", "Grace Hopper"),
        *(person(f"user{i:02d}", f"User {i}") for i in range(10)),
        group("platform", [user_dn("ada")]),
        group("sre", [user_dn("grace")]),
    ]
)


@pytest.fixture
def slapd(tmp_path: Path) -> Iterator[Slapd]:
    server = start_slapd(tmp_path / "slapd", DIRECTORY)
    yield server
    server.stop()


async def test_the_directory_sync_writes_its_changes_and_a_braked_run_none(
    db: Database, slapd: Slapd
) -> None:
    hook_id = await hook(db)
    await sync_directory(db, config_for(slapd), brake=0.1)
    created = await outbox(db, hook_id)
    assert len(created) == 12 + 2 and {e["type"] for e in created} == {"entity.created"}

    with slapd.connection() as conn:
        conn.modify(group_dn("sre"), {"member": [("MODIFY_ADD", [user_dn("ada")])]})
        conn.modify(user_dn("grace"), {"displayName": [("MODIFY_REPLACE", ["Amazing Grace"])]})
    report = await sync_directory(db, config_for(slapd), brake=0.1)
    assert report.outcome == "succeeded"
    changes = {(e["ref"], e["type"]) for e in (await outbox(db, hook_id))[len(created) :]}
    assert changes == {
        ("group:default/sre", "membership.changed"),
        ("user:default/ada", "membership.changed"),
        ("user:default/grace", "entity.updated"),
    }

    written = len(await outbox(db))
    with slapd.connection() as conn:
        for i in range(5):
            conn.delete(user_dn(f"user{i:02d}"))
    braked = await sync_directory(db, config_for(slapd), brake=0.1)
    assert braked.outcome == "braked"
    assert len(await outbox(db)) == written
