"""The demo's generated deploy history: thousands of deploys over ninety days for every
component with a repository, failures and rollbacks among them, written once."""

from __future__ import annotations

import asyncio

import asyncpg

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.demo import seed_history
from plugins.deployments.settings import DeploymentSettings
from sources.catalog.documents import read_paths
from sources.catalog.store import apply_batch
from tests.conftest import EXAMPLES, AppFactory


async def test_the_demo_history_is_written_once_and_reads_as_a_real_one(
    make_client: AppFactory,
) -> None:
    client = await make_client(plugins=[DeploymentsPlugin(DeploymentSettings())])
    db = client.services.db
    assert not (await apply_batch(db, read_paths([EXAMPLES]))).errors
    await seed_history(client.services)
    figures = await db.fetchrow(
        "select count(*) as deploys, count(distinct component_ref) as components,"
        " count(*) filter (where state = 'failed') as failed,"
        " count(*) filter (where state = 'rolled_back') as rolled_back,"
        " count(*) filter (where is_rollback) as rollbacks,"
        " min(started_at) > now() - interval '91 days' as recent,"
        " max(finished_at) <= now() as past from deployment_deploys"
    )
    with_repository = await db.fetchval(
        "select count(*) from entities where kind = 'Component'"
        " and annotations ? 'github.com/project-slug'"
    )
    assert 2000 <= figures["deploys"] <= 6000, dict(figures)
    assert figures["components"] == with_repository
    assert figures["failed"] > 0 and figures["rolled_back"] > 0, dict(figures)
    assert figures["rollbacks"] >= figures["rolled_back"]
    assert figures["recent"] and figures["past"]
    await seed_history(client.services)  # a history exists: nothing more is written
    assert await db.fetchval("select count(*) from deployment_deploys") == figures["deploys"]

    body = await client.gql(
        """{ entity(ref: "group:checkout-team") { ... on Group { dora(days: 90) {
            deploys leadTimeSeconds changeFailureRate timeToRestoreSeconds } } } }"""
    )
    dora = body["data"]["entity"]["dora"]
    assert dora["deploys"] > 10 and 0 < dora["changeFailureRate"] < 0.5, dora
    assert dora["leadTimeSeconds"] > 3600 and dora["timeToRestoreSeconds"] > 0, dora


async def test_stopping_while_the_history_is_written_stops_at_once_and_writes_nothing(
    make_client: AppFactory, database_url: str
) -> None:
    """Stopping the server cancels the demo's writer wherever it is. Cancelled while its rows
    are on their way (held here by a lock, as a busy server would hold them), it must end and
    write nothing; the next start writes the history whole. (It used asyncpg's executemany,
    which, cancelled while it streams more rows than the socket takes, never returns: the
    server's shutdown hung on it under load.)"""
    client = await make_client(plugins=[DeploymentsPlugin(DeploymentSettings())])
    db = client.services.db
    assert not (await apply_batch(db, read_paths([EXAMPLES]))).errors
    blocker = await asyncpg.connect(database_url)
    try:
        transaction = blocker.transaction()
        await transaction.start()
        await blocker.execute("lock table deployment_deploys in exclusive mode")
        task = asyncio.create_task(seed_history(client.services))
        while not await db.fetchval(  # not the blocker's: its transaction sees one snapshot
            "select count(*) from pg_stat_activity where wait_event_type = 'Lock'"
            " and query like 'insert into deployment_deploys%'"
        ):
            assert not task.done(), task
            await asyncio.sleep(0.02)
        task.cancel()
        # The bound only catches a writer that never ends; the lock is still held.
        done, _ = await asyncio.wait([task], timeout=60)
        assert done and task.cancelled()
        await transaction.rollback()
    finally:
        await blocker.close()
    assert await db.fetchval("select count(*) from deployment_deploys") == 0
    assert await db.fetchval("select count(*) from deployment_releases") == 0
    await seed_history(client.services)
    assert await db.fetchval("select count(*) from deployment_deploys") > 2000
