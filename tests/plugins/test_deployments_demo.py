"""The demo's generated deploy history: thousands of deploys over ninety days for every
component with a repository, failures and rollbacks among them, written once; and a demo that
tells the truth: what the demo cluster runs is what the history says each stage runs, both
stages can be deployed, few releases wait, and a few things need attention on purpose."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.demo import seed_history
from plugins.deployments.settings import DeploymentSettings
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.demo import CLUSTER, demo_cluster
from plugins.pincompute.settings import ComputeSettings
from sources.catalog.store import apply_batch
from tests.conftest import EXAMPLES, AppFactory, Client, demo_batch

PIPELINES = """{ entities(filter: {kind: ["component"]}, first: 100) { nodes { ref name
  ... on Component { type pipeline { source stages { name deployable notDeployableReason
    workload { cluster namespace name }
    current { release { version artifact } }
    latest { state message finishedAt release { version } }
    waiting { version } } }
  releases(first: 1) { edges { node { version } } } %s } } } }"""
WORKLOADS = "workloads { namespace name image }"  # PinCompute's, when it runs


async def _components(client: Client, workloads: bool = False) -> dict[str, dict[str, Any]]:
    body = await client.gql(PIPELINES % (WORKLOADS if workloads else ""))
    return {node["name"]: node for node in body["data"]["entities"]["nodes"]}


def _stages(component: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {s["name"]: s for s in component["pipeline"]["stages"]}


def _recent(stamp: str, hours: float) -> bool:
    return datetime.now(UTC) - datetime.fromisoformat(stamp) < timedelta(hours=hours)


def _check_attention(components: dict[str, dict[str, Any]]) -> None:
    """What the console's home has to point at, deliberately; and no more waiting than that."""
    checkout = _stages(components["checkout"])
    assert components["checkout"]["releases"]["edges"][0]["node"]["version"] == "1.38.0"
    staged = checkout["staging"]["latest"]
    assert (staged["state"], staged["release"]["version"]) == ("FAILED", "1.38.0")
    assert "integration tests failed" in staged["message"] and _recent(staged["finishedAt"], 6)
    assert checkout["production"]["current"]["release"]["version"].startswith("1.37.")
    assert checkout["production"]["waiting"] == []

    gateway = _stages(components["payments-gateway"])["production"]
    assert gateway["latest"]["state"] == "FAILED" and _recent(gateway["latest"]["finishedAt"], 6)
    assert "readiness probe failed" in gateway["latest"]["message"]
    assert gateway["current"]["release"]["version"] != gateway["latest"]["release"]["version"]

    waiting = {
        name: [r["version"] for s in c["pipeline"]["stages"] for r in s["waiting"]]
        for name, c in components.items()
        if c["pipeline"]["stages"]
    }
    assert len(waiting) > 50  # every component with a repository has a history
    assert {name: w for name, w in waiting.items() if w} == {
        "payments-gateway": [gateway["latest"]["release"]["version"]],  # it failed; it waits
        "search-service": [
            _stages(components["search-service"])["staging"]["current"]["release"]["version"]
        ],
    }


async def test_the_demo_history_is_written_once_and_reads_as_a_real_one(
    make_client: AppFactory,
) -> None:
    client = await make_client(plugins=[DeploymentsPlugin(DeploymentSettings())])
    db = client.services.db
    assert not (await apply_batch(db, demo_batch())).errors
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
    # Without the demo cluster, no stage has anything to deploy it.
    components = await _components(client)
    _check_attention(components)
    stages = _stages(components["checkout"])
    assert components["checkout"]["pipeline"]["source"] == "EVENTS"
    assert not stages["staging"]["deployable"] and not stages["production"]["deployable"]
    # Deploys are by people of the owning team (shown by name), staging's by the CI.
    people = await db.fetch(
        "select distinct actor from deployment_deploys where component_ref ="
        " 'component:default/checkout' and stage = 'production'"
    )
    assert "amelia.chen" in {r["actor"] for r in people}
    actors = """{ entity(ref: "component:checkout") { ... on Component { deployments(first: 50,
        stage: "production") { edges { node { actorUser { profile { displayName } } } } } } } }"""
    edges = (await client.gql(actors))["data"]["entity"]["deployments"]["edges"]
    assert all(e["node"]["actorUser"]["profile"]["displayName"] for e in edges)


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
    assert not (await apply_batch(db, demo_batch())).errors
    blocker = await asyncpg.connect(database_url)
    try:
        transaction = blocker.transaction()
        await transaction.start()
        await blocker.execute("lock table deployment_deploys in exclusive mode")
        task = asyncio.create_task(seed_history(client.services))
        while not await db.fetchval(  # not the blocker's: its transaction sees one snapshot
            "select count(*) from pg_stat_activity where wait_event_type = 'Lock'"
            " and query like 'insert into deployment_deploys%' and datname = current_database()"
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


async def test_the_demo_cluster_runs_what_the_history_says_and_both_stages_deploy(
    make_client: AppFactory, tmp_path: Path
) -> None:
    with demo_cluster(EXAMPLES, tmp_path / "kubeconfig.yaml") as kubeconfig:
        compute = ComputeSettings(kubeconfig=kubeconfig, compute_pod_cache_seconds=0)
        deployments = DeploymentSettings(deployments_check_interval=0.2)
        client = await make_client(
            plugins=[PinComputePlugin(compute), DeploymentsPlugin(deployments)]
        )
        assert not (await apply_batch(client.services.db, demo_batch())).errors
        started = asyncio.get_running_loop().time()
        await seed_history(client.services)
        assert asyncio.get_running_loop().time() - started < 10  # start-up stays quick

        components = await _components(client, workloads=True)
        services = {name: c for name, c in components.items() if c["type"] == "service"}
        assert len(services) > 20
        for name, component in services.items():
            stages = _stages(component)
            running = {(w["namespace"], w["name"]): w["image"] for w in component["workloads"]}
            for stage_name in ("staging", "production"):
                stage = stages[stage_name]
                assert stage["deployable"], (name, stage)
                workload = stage["workload"]
                assert workload["cluster"] == CLUSTER
                assert workload["namespace"].endswith("-staging") == (stage_name == "staging")
                release = stage["current"]["release"]
                assert release["artifact"] == (
                    f"registry.junipermarket.example/{name}:{release['version']}"
                )
                # The truth: the PinApp runs what the history says the stage runs.
                assert running[workload["namespace"], workload["name"]] == release["artifact"]
        _check_attention(components)

        # A restart (the emulated cluster starts afresh; the history stays) changes nothing.
        await seed_history(client.services)
        assert await _components(client, workloads=True) == components

        await _roll_back_staging(client, services["cart-service"])


async def _roll_back_staging(client: Client, component: dict[str, Any]) -> None:
    """Rolling back staging works in the demo: its PinApp rolls, the deploy succeeds."""
    query = """{ entity(ref: "component:cart-service") { ... on Component { pipeline {
        stages { name rollbackTo { version artifact } } } } } }"""
    body = await client.gql(query)
    stages = {s["name"]: s for s in body["data"]["entity"]["pipeline"]["stages"]}
    target = stages["staging"]["rollbackTo"]
    assert target is not None
    rollback = """mutation { rollbackStage(component: "component:cart-service",
        stage: "staging") { id state release { version } } }"""
    deploy = (await client.gql(rollback, user="amelia.chen"))["data"]["rollbackStage"]
    assert (deploy["state"], deploy["release"]["version"]) == ("IN_PROGRESS", target["version"])
    state = f'{{ deploy(id: "{deploy["id"]}") {{ state }} }}'
    for _ in range(150):
        if (await client.gql(state))["data"]["deploy"]["state"] == "SUCCEEDED":
            break
        await asyncio.sleep(0.1)
    assert (await client.gql(state))["data"]["deploy"]["state"] == "SUCCEEDED"
    workloads = (await _components(client, workloads=True))["cart-service"]["workloads"]
    staging = _stages(component)["staging"]["workload"]
    [image] = [w["image"] for w in workloads if w["namespace"] == staging["namespace"]]
    assert image == target["artifact"]
