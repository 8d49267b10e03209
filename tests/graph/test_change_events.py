"""Change events end to end, delivered by apps' own background jobs to a real receiver on
127.0.0.1: through a receiver that is down for a while, then answers 500 twice, then answers
slowly; through a replica killed while delivering; and 10,000 changes from one import."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from typing import Any

import pytest

from sources.catalog.documents import ParsedBatch
from sources.catalog.model import validate_entity
from sources.catalog.store import apply_batch
from sources.changes.hooks import create_hook
from sources.changes.secrets import SecretBox
from sources.db import Database
from tests.change_receiver import SECRET, Answer, Received, Receiver, eventually
from tests.conftest import AppFactory, Client
from tests.http_files import free_port

pytestmark = pytest.mark.pgbouncer

KEY = "a key of at least sixteen characters"
# Tiny waits, so that retries happen within a test's time.
FAST = {
    "change_hooks_allowed_networks": ["127.0.0.1/32"],
    "change_hooks_key": KEY,
    "change_hooks_interval": 0.02,
    "change_hooks_backoff_base": 0.02,
    "change_hooks_backoff_max": 0.2,
    "change_hooks_timeout": 2.0,
    "change_hooks_lease": 10.0,
}
APPLY = """
mutation($y: String!, $l: String!) { applyEntities(yaml: $y, location: $l) { errors { message } } }
"""
DELETE = "mutation($r: String!) { deleteEntity(ref: $r) { deleted } }"
HOOK = "{ changeHooks { failing lastError lastDeliveredAt pendingDeliveries failedDeliveries } }"


def document(kind: str, name: str, spec: str, description: str = "v1") -> str:
    return f"""
apiVersion: backstage.io/v1alpha1
kind: {kind}
metadata: {{name: {name}, description: {description}}}
spec: {spec}
"""


def components(names: list[str], description: str) -> ParsedBatch:
    entities = [
        (
            "generated.yaml",
            validate_entity(
                {
                    "apiVersion": "backstage.io/v1alpha1",
                    "kind": "Component",
                    "metadata": {"name": name, "description": description},
                    "spec": {"type": "service", "lifecycle": "production", "owner": "team-a"},
                }
            ),
        )
        for name in names
    ]
    return ParsedBatch(entities, [], {"generated.yaml"})


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    yield found
    await found.stop()


async def outbox(db: Database) -> list[dict[str, Any]]:
    rows = await db.fetch("select event_id, type, ref from change_deliveries order by id")
    return [dict(row) for row in rows]


def check_delivered(received: list[Received], expected: dict[str, list[str]]) -> None:
    """Every event taken at least once, signed; per ref, no request for a change ever
    arrives after one for a later change, and the changes were taken in their order."""
    assert received and all(r.signed_with(SECRET) for r in received)
    assert all(r.event == r.payload["type"] for r in received)
    delivery_of: dict[str, str] = {}
    for request in received:  # one delivery id per event and hook, retries included
        assert delivery_of.setdefault(request.id, request.delivery) == request.delivery
    for ref, ids in expected.items():
        arrived = [r.id for r in received if r.payload["ref"] == ref]
        positions = [ids.index(i) for i in arrived]
        assert positions == sorted(positions), ref
        taken = [r.id for r in received if r.payload["ref"] == ref and r.status == 200]
        assert list(dict.fromkeys(taken)) == ids, ref


async def expected_events(db: Database) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for row in await outbox(db):
        found.setdefault(row["ref"], []).append(str(row["event_id"]))
    return found


async def test_every_change_arrives_through_a_receiver_down_then_failing_then_slow(
    make_client: AppFactory, receiver: Receiver
) -> None:
    client: Client = await make_client(**FAST)
    db: Database = client.services.db
    token = await client.admin_token()
    hook = await client.gql(
        "mutation($u: String!, $s: String!) { createChangeHook(url: $u, secret: $s) { id } }",
        {"u": receiver.url, "s": SECRET},
        token=token,
    )
    assert hook["data"]["createChangeHook"]["id"]

    # Changes of every kind, by every writer, while nothing listens at the hook's URL.
    team = document("Group", "team-a", "{type: team, children: [], members: [ada]}")
    ada = document("User", "ada", "{memberOf: [team-a]}")
    service = document(
        "Component", "checkout", "{type: service, lifecycle: production, owner: team-a}"
    )
    for text, where in ((team, "team.yaml"), (ada, "ada.yaml"), (service, "checkout.yaml")):
        body = await client.gql(APPLY, {"y": text, "l": where}, token=token)
        assert body["data"]["applyEntities"]["errors"] == []
    names = [f"service-{i}" for i in range(12)]
    await apply_batch(db, components(names, "v1"))
    await apply_batch(db, components(names, "v2"))
    moved = service.replace("owner: team-a", "owner: team-b")
    await client.gql(APPLY, {"y": moved, "l": "checkout.yaml"}, token=token)
    left = team.replace("members: [ada]", "members: []")
    await client.gql(APPLY, {"y": left, "l": "team.yaml"}, token=token)
    await client.gql(DELETE, {"r": "component:checkout"}, token=token)
    expected = await expected_events(db)
    assert sum(len(ids) for ids in expected.values()) == 3 + 24 + 3

    async def tried_while_down() -> bool:
        return bool(await db.fetchval("select max(attempts) >= 3 from change_deliveries"))

    await eventually(tried_while_down, "three attempts while the receiver was down")
    down = (await client.gql(HOOK, token=token))["data"]["changeHooks"][0]
    assert down["failing"] and "could not be reached" in down["lastError"]
    assert down["lastDeliveredAt"] is None and down["pendingDeliveries"] == 30

    receiver.script.extend([Answer(500), Answer(500)])
    receiver.then = Answer(200, delay=0.05)
    await receiver.start()

    async def all_taken() -> bool:
        return await db.fetchval("select count(*) from change_deliveries") == 0

    await eventually(all_taken, "every change taken")
    check_delivered(receiver.received, expected)
    assert [r.status for r in receiver.received[:2]] == [500, 500]
    types = {r.payload["ref"]: r.payload["type"] for r in receiver.accepted}
    assert types["component:default/checkout"] == "entity.deleted"
    assert types["group:default/team-a"] == "membership.changed"
    owner_change = next(r.payload for r in receiver.accepted if r.event == "ownership.changed")
    assert owner_change["previous"]["spec"]["owner"] == "team-a"
    assert owner_change["entity"]["spec"]["owner"] == "team-b"
    after = (await client.gql(HOOK, token=token))["data"]["changeHooks"][0]
    assert not after["failing"] and after["pendingDeliveries"] == after["failedDeliveries"] == 0
    assert after["lastDeliveredAt"] is not None


def start_replica(database_url: str, cwd: str) -> subprocess.Popen[bytes]:
    """Another replica: `atrium serve` in a process of its own, delivering with a short lease."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("ATRIUM_")}
    env.update(
        ATRIUM_DATABASE_URL=database_url,
        ATRIUM_DISABLED_PLUGINS="deployments,observability,pincompute",
        ATRIUM_CHANGE_HOOKS_ALLOWED_NETWORKS="127.0.0.1/32",
        ATRIUM_CHANGE_HOOKS_INTERVAL="0.05",
        ATRIUM_CHANGE_HOOKS_TIMEOUT="1",
        ATRIUM_CHANGE_HOOKS_LEASE="2",
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "atrium.cli",
            "serve",
            "--host",
            "127.0.0.1",
            "--port",
            str(free_port()),
        ],
        cwd=cwd,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def test_a_replica_killed_while_delivering_loses_nothing(
    database_url: str, db: Database, make_client: AppFactory, receiver: Receiver
) -> None:
    await create_hook(
        db, SecretBox(None), url=receiver.url, secret=SECRET, kinds=None, created_by="test"
    )
    names = [f"service-{i}" for i in range(20)]
    for version in ("v1", "v2", "v3"):
        await apply_batch(db, components(names, version))
    expected = await expected_events(db)
    receiver.hold()  # requests are read, and never answered while holding
    await receiver.start()

    with tempfile.TemporaryDirectory(prefix="atrium-replica-") as tmp:
        replica = start_replica(database_url, tmp)
        try:

            async def sending() -> bool:
                assert replica.poll() is None, "the replica stopped by itself"
                return len(receiver.received) >= 5

            await eventually(sending, "the replica sending")
            replica.send_signal(signal.SIGKILL)  # no goodbye: its claims stay until the lease ends
            await asyncio.to_thread(replica.wait, 30)
        finally:
            if replica.poll() is None:
                replica.kill()
                replica.wait()
    held = list(receiver.received)
    assert all(r.status is None for r in held)
    claimed = await db.fetchval("select count(*) from change_deliveries where claim is not null")
    assert claimed >= len(held)
    receiver.release()

    # Another replica (an app in this process) takes over once the dead one's lease ran out.
    await make_client(**FAST)

    async def all_taken() -> bool:
        return await db.fetchval("select count(*) from change_deliveries") == 0

    await eventually(all_taken, "every change taken after the kill")
    check_delivered(receiver.received, expected)
    # What the dead replica had out was sent again, under the same delivery ids.
    taken = {r.delivery for r in receiver.accepted}
    assert {r.delivery for r in held} <= taken
    assert len({r.id for r in receiver.accepted}) == 60


async def test_ten_thousand_changes_from_one_import_are_delivered_after_it(
    make_client: AppFactory, receiver: Receiver
) -> None:
    client: Client = await make_client(**FAST, change_hooks_batch=500)
    db: Database = client.services.db
    await client.gql(
        "mutation($u: String!, $s: String!) { createChangeHook(url: $u, secret: $s) { id } }",
        {"u": receiver.url, "s": SECRET},
        token=await client.admin_token(),
    )
    receiver.hold()
    await receiver.start()
    # The import commits while the receiver answers nothing: it never waits for deliveries.
    result = await apply_batch(db, components([f"service-{i}" for i in range(10_000)], "v1"))
    assert len(result.created) == 10_000
    assert await db.fetchval("select count(*) from change_deliveries") == 10_000
    receiver.release()

    async def all_taken() -> bool:
        return await db.fetchval("select count(*) from change_deliveries") == 0

    await eventually(all_taken, "10,000 changes taken", within=300)
    ids = {r.id for r in receiver.accepted}
    assert len(ids) == 10_000
    assert all(r.signed_with(SECRET) for r in receiver.received)
    assert {r.payload["type"] for r in receiver.received} == {"entity.created"}
