"""Delivering change events to a real receiver on 127.0.0.1, driven by hand (no background
job): signed JSON with its headers, order per ref, retries and backoff, giving up and
re-delivering, claims one replica at a time, and leases that run out."""

from __future__ import annotations

import asyncio
import itertools
import uuid
from collections.abc import AsyncIterator
from dataclasses import replace
from ipaddress import ip_network
from pathlib import Path

import pytest
import trustme

from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from sources.changes.delivery import IN_FLIGHT, Deliverer, DeliveryPolicy
from sources.changes.hooks import create_hook, get_hook, redeliver
from sources.changes.outbox import Backoff, claim, record
from sources.changes.secrets import SecretBox
from sources.changes.targets import Target, resolve_target
from sources.db import Database
from tests.change_receiver import SECRET, Answer, Receiver, eventually

pytestmark = pytest.mark.pgbouncer

POLICY = DeliveryPolicy(
    timeout=1.0,
    lease=30.0,
    batch=100,
    backoff=Backoff(base=0.02, cap=0.1, retry_for=3600.0),
    allowed_networks=(ip_network("127.0.0.1/32"),),
)


def component(name: str, description: str = "first") -> str:
    return f"""
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: {name}, description: {description}}}
spec: {{type: service, lifecycle: production, owner: team-a}}
"""


async def import_components(db: Database, names: list[str], description: str) -> None:
    text = "---".join(component(name, description) for name in names)
    result = await apply_batch(db, parse_documents(text, "c.yaml"))
    assert not result.errors


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    found = Receiver()
    await found.start()
    yield found
    await found.stop()


async def register(db: Database, receiver: Receiver, box: SecretBox | None = None) -> int:
    return await create_hook(
        db,
        box or SecretBox(None),
        url=receiver.url,
        secret=SECRET,
        kinds=None,
        created_by="test",
    )


async def pending(db: Database) -> int:
    return int(await db.fetchval("select count(*) from change_deliveries"))


async def deliver_all(db: Database, deliverer: Deliverer) -> None:
    async def done() -> bool:
        await deliverer.deliver_due()
        return await pending(db) == 0

    await eventually(done, "every delivery taken")


async def test_a_delivery_is_signed_json_with_its_headers(db: Database, receiver: Receiver) -> None:
    box = SecretBox("a key of at least sixteen characters")
    hook_id = await register(db, receiver, box)
    await import_components(db, ["checkout"], "first")
    deliverer = Deliverer(db, POLICY, box)
    try:
        assert await deliverer.deliver_due() == 1
    finally:
        await deliverer.aclose()
    [got] = receiver.received
    assert got.status == 200 and got.signed_with(SECRET) and not got.signed_with(SECRET + "x")
    assert got.event == "entity.created"
    uuid.UUID(got.delivery)
    body = got.payload
    assert set(body) == {"id", "type", "ref", "occurredAt", "entity", "previous"}
    assert (body["type"], body["ref"], body["previous"]) == (
        "entity.created",
        "component:default/checkout",
        None,
    )
    assert body["occurredAt"].endswith("Z")
    assert body["entity"]["metadata"]["description"] == "first"
    assert await pending(db) == 0
    hook = await get_hook(db, hook_id)
    assert hook is not None and hook.last_delivered_at is not None and not hook.failing


async def test_deliveries_keep_their_connections_from_one_to_the_next(
    db: Database, receiver: Receiver
) -> None:
    """An answer is read to its end, so its connection takes the next delivery, in this batch
    and the next: never more connections than requests out at once."""
    await register(db, receiver)
    await import_components(db, [f"service-{i}" for i in range(250)], "first")
    deliverer = Deliverer(db, POLICY, SecretBox(None))  # batches of 100
    try:
        assert await deliverer.deliver_due() == 250
    finally:
        await deliverer.aclose()
    assert [r.status for r in receiver.received] == [200] * 250
    connections = {r.connection for r in receiver.received}
    assert 0 not in connections and len(connections) <= IN_FLIGHT


async def test_a_later_change_of_a_ref_waits_until_the_earlier_one_is_taken(
    db: Database, receiver: Receiver
) -> None:
    await register(db, receiver)
    for description in ("first", "second", "third"):
        await import_components(db, ["checkout"], description)
    receiver.script.extend([Answer(500), Answer(302)])
    deliverer = Deliverer(db, POLICY, SecretBox(None))
    try:
        await deliverer.deliver_due()
        # The first change failed: neither later one was sent, though both were due.
        assert [r.payload["entity"]["metadata"]["description"] for r in receiver.received] == [
            "first"
        ]
        assert await pending(db) == 3
        await deliver_all(db, deliverer)
    finally:
        await deliverer.aclose()
    sent = [(r.payload["entity"]["metadata"]["description"], r.status) for r in receiver.received]
    assert sent == [("first", 500), ("first", 302), ("first", 200), ("second", 200), ("third", 200)]
    first = [
        r for r in receiver.received if r.payload["entity"]["metadata"]["description"] == "first"
    ]
    assert len({r.delivery for r in first}) == 1 and len({r.id for r in first}) == 1
    assert len({r.body for r in first}) == 1  # the same bytes, signed the same, each time


async def test_a_receiver_that_is_down_is_probed_with_one_delivery_not_the_backlog(
    db: Database,
) -> None:
    receiver = Receiver()  # not started: nothing listens
    hook_id = await register(db, receiver)
    await import_components(db, [f"service-{i}" for i in range(20)], "first")
    deliverer = Deliverer(db, POLICY, SecretBox(None))

    async def attempts() -> int:
        return int(await db.fetchval("select sum(attempts) from change_deliveries"))

    try:
        await deliverer.deliver_due()
        assert await attempts() == 20  # the first batch, before anything was known
        hook = await get_hook(db, hook_id)
        assert hook is not None and hook.failing and hook.failures == 1
        assert hook.retry_at is not None and "could not be reached" in (hook.last_error or "")

        seen = [20]

        async def probed_twice() -> bool:
            await deliverer.deliver_due()
            seen.append(await attempts())
            return seen[-1] >= 22

        await eventually(probed_twice, "two probes after backoffs")
        # Then one delivery at a time, each after its wait: never the backlog again.
        assert all(later - earlier in (0, 1) for earlier, later in itertools.pairwise(seen))
        await receiver.start()
        await deliver_all(db, deliverer)
    finally:
        await deliverer.aclose()
        await receiver.stop()
    assert len({r.id for r in receiver.accepted}) == 20
    hook = await get_hook(db, hook_id)
    assert hook is not None and not hook.failing and hook.failures == 0


async def test_what_fails_past_the_retry_period_is_kept_failed_until_redelivered(
    db: Database, receiver: Receiver
) -> None:
    hook_id = await register(db, receiver)
    for description in ("first", "second"):
        await import_components(db, ["checkout", "cart"], description)
    receiver.then = Answer(500)
    policy = replace(POLICY, backoff=replace(POLICY.backoff, retry_for=0.2))
    deliverer = Deliverer(db, policy, SecretBox(None))
    try:

        async def given_up() -> bool:
            await deliverer.deliver_due()
            states = await db.fetch("select distinct state from change_deliveries")
            return [s["state"] for s in states] == ["failed"]

        await eventually(given_up, "every delivery given up")
        hook = await get_hook(db, hook_id)
        assert hook is not None and hook.failing and hook.failed == 4 and hook.pending == 0
        assert hook.last_error == "answered HTTP 500"

        # The receiver recovers: what was given up on stays so until an admin says otherwise.
        receiver.then = Answer(200)
        sent = len(receiver.received)
        await deliverer.deliver_due()
        assert len(receiver.received) == sent

        assert await redeliver(db, hook_id)
        await deliver_all(db, deliverer)
    finally:
        await deliverer.aclose()
    for ref in ("component:default/checkout", "component:default/cart"):
        taken = [
            r.payload["entity"]["metadata"]["description"]
            for r in receiver.accepted
            if r.payload["ref"] == ref
        ]
        assert taken == ["first", "second"]
    hook = await get_hook(db, hook_id)
    assert hook is not None and not hook.failing


async def test_replicas_share_the_work_and_deliver_each_change_once_in_order(
    db: Database, receiver: Receiver
) -> None:
    await register(db, receiver)
    names = [f"service-{i}" for i in range(30)]
    for description in ("first", "second", "third"):
        await import_components(db, names, description)
    receiver.then = Answer(200, delay=0.01)
    replicas = [Deliverer(db, replace(POLICY, batch=7), SecretBox(None)) for _ in range(3)]
    try:
        await asyncio.gather(*(replica.deliver_due() for replica in replicas))
        await deliver_all(db, replicas[0])
    finally:
        for replica in replicas:
            await replica.aclose()
    # No lease ran out: every change was sent exactly once, and each ref's in order.
    assert len(receiver.received) == 90 and len({r.id for r in receiver.received}) == 90
    for name in names:
        sent = [
            r.payload["entity"]["metadata"]["description"]
            for r in receiver.received
            if r.payload["ref"] == f"component:default/{name}"
        ]
        assert sent == ["first", "second", "third"]


async def test_a_claim_whose_lease_ran_out_is_delivered_by_another_with_the_same_id(
    db: Database, receiver: Receiver
) -> None:
    hook_id = await register(db, receiver)
    await import_components(db, ["checkout"], "first")
    # A replica claims the change, then dies: it never sends it, never records anything.
    dead = uuid.uuid4()
    [claimed] = await claim(db, hook_id, 10, dead, 30.0)
    deliverer = Deliverer(db, POLICY, SecretBox(None))
    try:
        assert await deliverer.deliver_due() == 0  # claimed: nobody else may send it
        await db.execute("update change_deliveries set claimed_until = now() - interval '1 s'")
        assert await deliverer.deliver_due() == 1
    finally:
        await deliverer.aclose()
    [got] = receiver.received
    assert got.delivery == str(claimed.delivery_id) and got.id == str(claimed.event_id)
    # The dead replica's late word changes nothing: the row is no longer its claim.
    outcome = await record(db, hook_id, dead, {claimed.id: "late"}, [], POLICY.backoff)
    assert (outcome.delivered, outcome.failed) == (0, 0)


async def test_an_outcome_recorded_after_another_replica_claimed_again_is_ignored(
    db: Database, receiver: Receiver
) -> None:
    hook_id = await register(db, receiver)
    await import_components(db, ["checkout"], "first")
    first, second = uuid.uuid4(), uuid.uuid4()
    [claimed] = await claim(db, hook_id, 10, first, 30.0)
    await db.execute("update change_deliveries set claimed_until = now() - interval '1 s'")
    [again] = await claim(db, hook_id, 10, second, 30.0)
    assert again.id == claimed.id and again.attempts == 2
    await record(db, hook_id, first, {claimed.id: None}, [], POLICY.backoff)
    assert await pending(db) == 1  # still the second claim's
    await record(db, hook_id, second, {claimed.id: None}, [], POLICY.backoff)
    assert await pending(db) == 0


async def test_the_target_is_checked_again_before_each_delivery(
    db: Database, receiver: Receiver
) -> None:
    hook_id = await register(db, receiver)
    await import_components(db, ["checkout"], "first")
    # The same hook, on a replica that does not allow the network it resolves to now.
    deliverer = Deliverer(db, replace(POLICY, allowed_networks=()), SecretBox(None))
    try:
        assert await deliverer.deliver_due() == 0
    finally:
        await deliverer.aclose()
    assert receiver.received == []
    hook = await get_hook(db, hook_id)
    assert hook is not None and "not a public address" in (hook.last_error or "")


async def test_a_stored_url_the_client_cannot_send_to_is_a_failure_said_not_a_crash(
    db: Database, receiver: Receiver
) -> None:
    # Stored as a hook from before URLs were held to what the client accepts.
    hook_id = await create_hook(
        db, SecretBox(None), url=receiver.url + "\x18", secret=SECRET, kinds=None, created_by="t"
    )
    await import_components(db, ["checkout"], "first")
    deliverer = Deliverer(db, POLICY, SecretBox(None))
    try:
        assert await deliverer.deliver_due() == 0
    finally:
        await deliverer.aclose()
    hook = await get_hook(db, hook_id)
    assert hook is not None and "non-printable" in (hook.last_error or ""), hook
    assert await pending(db) == 1  # kept, to be delivered once the URL is mended


async def test_an_answer_slower_than_the_timeout_is_a_failure_retried(
    db: Database, receiver: Receiver
) -> None:
    hook_id = await register(db, receiver)
    await import_components(db, ["checkout"], "first")
    receiver.script.append(Answer(200, delay=0.5))
    deliverer = Deliverer(db, replace(POLICY, timeout=0.2, lease=5.0), SecretBox(None))
    try:
        await deliverer.deliver_due()
        hook = await get_hook(db, hook_id)
        assert hook is not None and hook.last_error == "no answer within 0.2 s"
        await deliver_all(db, deliverer)
    finally:
        await deliverer.aclose()
    assert len(receiver.accepted) == 1 and len(receiver.received) == 2


async def test_a_delivery_goes_to_the_address_checked_not_where_the_name_leads_now(
    db: Database, receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The name is resolved once, by the check; the connection goes to that address (here a
    name that resolves nowhere at all), and the request still names the host."""
    from sources.changes import delivery

    checked = await resolve_target(receiver.url, POLICY.allowed_networks, 5.0)
    rebound = f"http://receiver.invalid:{receiver.port}/events"
    pinned = replace(checked, url=rebound, host="receiver.invalid")

    async def resolved(url: str, allowed: object, within: float) -> Target:
        assert url == rebound
        return pinned

    monkeypatch.setattr(delivery, "resolve_target", resolved)
    await create_hook(
        db, SecretBox(None), url=rebound, secret=SECRET, kinds=None, created_by="test"
    )
    await import_components(db, ["checkout"], "first")
    deliverer = Deliverer(db, POLICY, SecretBox(None))
    try:
        assert await deliverer.deliver_due() == 1
    finally:
        await deliverer.aclose()
    [got] = receiver.received
    assert got.status == 200 and got.host == f"receiver.invalid:{receiver.port}"


@pytest.mark.parametrize("named", ["localhost", "elsewhere.example"])
async def test_https_verifies_the_host_name_though_the_address_was_pinned(
    db: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, named: str
) -> None:
    ca = trustme.CA()
    ca.cert_pem.write_to_path(str(tmp_path / "ca.pem"))
    monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "ca.pem"))  # httpx trusts it then
    receiver = Receiver(host="localhost", tls=ca.issue_cert(named))
    await receiver.start()
    hook_id = await register(db, receiver)
    await import_components(db, ["checkout"], "first")
    local = (ip_network("127.0.0.0/8"), ip_network("::1/128"))
    deliverer = Deliverer(db, replace(POLICY, allowed_networks=local), SecretBox(None))
    try:
        taken = await deliverer.deliver_due()
    finally:
        await deliverer.aclose()
        await receiver.stop()
    if named == "localhost":
        assert taken == 1 and receiver.accepted[0].signed_with(SECRET)
    else:  # a certificate for another name is refused, whatever address was connected to
        assert taken == 0 and receiver.received == []
        hook = await get_hook(db, hook_id)
        assert hook is not None and "CERTIFICATE_VERIFY_FAILED" in (hook.last_error or "")


async def test_a_replica_stopping_releases_what_it_had_out_at_once(
    db: Database, receiver: Receiver
) -> None:
    await register(db, receiver)
    await import_components(db, ["checkout", "cart"], "first")
    receiver.hold()
    stopping = Deliverer(db, POLICY, SecretBox(None))
    task = asyncio.create_task(stopping.deliver_due())

    async def both_out() -> bool:
        return len(receiver.received) == 2

    await eventually(both_out, "both deliveries out")
    task.cancel()  # as the app's lifespan stops its jobs
    with pytest.raises(asyncio.CancelledError):
        await task
    await stopping.aclose()
    rows = await db.fetch("select claim, attempts from change_deliveries")
    assert [(r["claim"], r["attempts"]) for r in rows] == [(None, 0), (None, 0)]

    receiver.release()
    other = Deliverer(db, POLICY, SecretBox(None))
    try:
        assert await other.deliver_due() == 2  # no lease to wait for
    finally:
        await other.aclose()
    held = {r.delivery for r in receiver.received if r.status is None}
    assert held <= {r.delivery for r in receiver.accepted} and len(held) == 2
