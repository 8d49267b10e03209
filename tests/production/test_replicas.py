"""Three `atrium serve` replicas behind HAProxy answer as one.

They are started together on an empty database with a directory to sync, as a first
deployment starts: migrations are applied once, the directory is synced once, the rollout
checks run once per interval across the three; then a write through one replica is read
through the others at once, and a subscription on one hears what another accepted.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest

from atrium.testing.databases import new_database_name
from sources.jobs import LEASE_SHARE
from tests.conftest import _admin, _with_database
from tests.production.replicas import (
    Fleet,
    component,
    fleet,
    prepare,
    settings,
    subscriber,
)
from tests.slapd import (
    GROUPS_DN,
    ROOT_DN,
    ROOT_PASSWORD,
    USERS_DN,
    Slapd,
    group,
    person,
    start_slapd,
    user_dn,
)

CHECK_INTERVAL = 0.5  # the deployments' rollout checks, here
PEOPLE = [f"person{i}" for i in range(5)]


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Slapd]:
    ldif = "\n".join(
        [person(uid, uid.title()) for uid in PEOPLE]
        + [group("platform", [user_dn(uid) for uid in PEOPLE])]
    )
    server = start_slapd(tmp_path_factory.mktemp("slapd"), ldif)
    yield server
    server.stop()


@pytest.fixture(scope="module")
async def empty_database(pg_admin_url: str) -> AsyncIterator[str]:
    """A database of this module's own with nothing in it: not even the migrations."""
    name = new_database_name()
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'create database "{name}"')
    yield _with_database(pg_admin_url, name)
    async with _admin(pg_admin_url) as conn:
        await conn.execute(f'drop database if exists "{name}" with (force)')


@pytest.fixture(scope="module")
async def three(
    empty_database: str, redis_url: str, directory: Slapd, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Fleet]:
    env = settings(
        empty_database,
        redis_url,
        f"atrium-test-{uuid.uuid4().hex[:10]}",
        ATRIUM_DEPLOYMENTS_CHECK_INTERVAL=str(CHECK_INTERVAL),
        ATRIUM_LDAP_URL=directory.url,
        ATRIUM_LDAP_BIND_DN=ROOT_DN,
        ATRIUM_LDAP_BIND_PASSWORD=ROOT_PASSWORD,
        ATRIUM_LDAP_USERS_DN=USERS_DN,
        ATRIUM_LDAP_GROUPS_DN=GROUPS_DN,
    )
    async with fleet(env, tmp_path_factory.mktemp("replicas"), token="") as started:
        started.token = await prepare(empty_database)  # the schema exists now
        yield started


async def test_migrations_are_applied_once(three: Fleet, empty_database: str) -> None:
    conn = await asyncpg.connect(empty_database)
    try:
        recorded = await conn.fetch("select scope, version from atrium_migrations")
    finally:
        await conn.close()
    applied = [
        line
        for replica in three.replicas
        for line in replica.log_text().splitlines()
        if '"applied migration"' in line
    ]
    assert len(recorded) >= 9  # the core's and the deployments plugin's
    assert len(applied) == len(recorded)  # each by one replica, none by two


async def test_the_directory_is_synced_once(three: Fleet, empty_database: str) -> None:
    conn = await asyncpg.connect(empty_database)
    try:
        runs = await conn.fetch("select outcome, added from ldap_sync_runs")
    finally:
        await conn.close()
    assert [(r["outcome"], r["added"]) for r in runs] == [("succeeded", len(PEOPLE) + 1)]
    ran = [
        (await replica.metrics()).get('atrium_job_runs_total{job="ownership.ldapSync"}', 0.0)
        for replica in three.replicas
    ]
    assert sorted(ran) == [0.0, 0.0, 1.0]


async def test_rollout_checks_run_once_per_interval_across_replicas(
    three: Fleet, empty_database: str
) -> None:
    conn = await asyncpg.connect(empty_database)
    try:
        query = "select runs from job_leases where job = 'deployments.rollouts'"
        began, before = time.monotonic(), await conn.fetchval(query)
        await asyncio.sleep(8 * CHECK_INTERVAL)
        after, ended = await conn.fetchval(query), time.monotonic()
    finally:
        await conn.close()
    # Claims are at least LEASE_SHARE of an interval apart (by the database's clock, which is
    # this machine's): three replicas each checking every interval would claim three times as
    # often.
    most = (ended - began) / (LEASE_SHARE * CHECK_INTERVAL) + 1
    assert 1 <= after - before <= most
    per_replica = [
        (await replica.metrics()).get('atrium_job_runs_total{job="deployments.rollouts"}', 0.0)
        for replica in three.replicas
    ]
    assert sum(per_replica) <= after + 1  # what the replicas ran is what they claimed


async def test_a_write_through_one_replica_is_read_through_the_others_at_once(three: Fleet) -> None:
    a, b, c = three["a"], three["b"], three["c"]
    ref = "component:default/checkout"
    for replica in (a, b, c):  # every replica has the answer cached
        assert await three.description(ref, replica.base) == "Takes the money"
        assert await three.description(ref, replica.base) == "Takes the money"
    written = await three.apply(component("checkout", "Takes the money, safely"), a.base)
    assert written.json()["data"]["applyEntities"]["updated"] == [ref]
    assert await three.description(ref, b.base) == "Takes the money, safely"
    assert await three.description(ref, c.base) == "Takes the money, safely"
    assert await three.description(ref) == "Takes the money, safely"  # through HAProxy


async def test_a_subscription_on_one_replica_hears_a_change_accepted_by_another(
    three: Fleet,
) -> None:
    a, b = three["a"], three["b"]
    async with subscriber(three.ws(a.base), "component:default/checkout") as deploys:
        await deploys.until(lambda s: bool(s.of("connected")), "a connection")
        assert (await three.deploy("1.0.0", b.base)).json()["outcome"] == "applied"
        await deploys.until(lambda s: "1.0.0" in s.versions(), "the deploy made through b")
        # Heard live, not read back at subscribing: the next one comes after that read.
        assert (await three.deploy("1.0.1", three["c"].base)).json()["outcome"] == "applied"
        await deploys.until(lambda s: "1.0.1" in s.versions(), "the deploy made through c")
        assert len(deploys.of("connected")) == 1
