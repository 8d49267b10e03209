"""The deployments API: cached answers dropped in every replica by a deploy event, the live
subscription over a real websocket, DORA figures, filters across components, pipelines set
through the API."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.settings import DeploymentSettings
from tests.conftest import AppFactory, Client
from tests.plugins.deploy_env import GITHUB_SECRET, Env, deploy_env, github_event

# Also run through PgBouncer in transaction pooling mode (tests/conftest.py).
pytestmark = pytest.mark.pgbouncer


PAGE = """query Deploys($ref: String!) { entity(ref: $ref) { ... on Component {
  pipeline { stages { name current { release { version } } } }
  deployments(first: 20) { totalCount edges { node { id state stage release { version } } } } } } }"""


@pytest.fixture
async def env(make_client: AppFactory, tmp_path: Path) -> AsyncIterator[Env]:
    async with deploy_env(make_client, tmp_path) as environment:
        yield environment


def _hits(client: Client, level: str) -> int:
    return int(client.services.caches.stats.counts.get((level, "hit"), 0))


async def _page(client: Client) -> dict[str, Any]:
    response = await client.persisted_get(PAGE, {"ref": "component:checkout"})
    assert response.status_code == 200, response.text
    assert "max-age" in response.headers["cache-control"], response.headers["cache-control"]
    return response.json()["data"]["entity"]  # type: ignore[no-any-return]


async def test_a_deploy_event_drops_cached_answers_in_every_replica(
    make_client: AppFactory, tmp_path: Path, redis_url: str, cache_prefix: str
) -> None:
    shared = {"redis_url": redis_url, "cache_prefix": cache_prefix}
    async with deploy_env(make_client, tmp_path, app_settings=shared) as env:
        settings = DeploymentSettings(deployments_github_secret=GITHUB_SECRET)
        other: Client = await make_client(plugins=[DeploymentsPlugin(settings)], **shared)
        await env.github.send(
            "deployment_status", github_event("deployment_status", state="success")
        )
        for replica in (env.client, other):
            assert (await _page(replica))["deployments"]["totalCount"] == 1
        before = _hits(other, "response")
        assert (await _page(other))["deployments"]["totalCount"] == 1
        assert _hits(other, "response") == before + 1, "the second look is a cached answer"

        # The event reaches one replica; both drop what showed the component's deploys.
        await env.github.send(
            "deployment_status",
            github_event(
                "deployment_status",
                deployment_id=9,
                ref="v9",
                state="success",
                at="2026-11-20T16:00:00Z",
            ),
        )
        for _ in range(100):
            if (await _page(other))["deployments"]["totalCount"] == 2:
                break
            await asyncio.sleep(0.02)
        for replica in (env.client, other):
            shown = await _page(replica)
            assert shown["deployments"]["totalCount"] == 2
            production = shown["pipeline"]["stages"][2]
            assert production["current"] == {"release": {"version": "v9"}}


async def test_the_subscription_follows_a_components_deploys(env: Env) -> None:
    query = """subscription($c: String!) { componentDeploys(component: $c) {
        state stage release { version } } }"""
    await env.github.send(
        "deployment_status", github_event("deployment_status", state="in_progress")
    )
    async with (
        aiohttp.ClientSession() as session,
        session.ws_connect(
            f"{env.base.replace('http', 'ws')}/graphql", protocols=["graphql-transport-ws"]
        ) as ws,
    ):
        await ws.send_json({"type": "connection_init"})
        assert (await ws.receive_json(timeout=5))["type"] == "connection_ack"
        await ws.send_json(
            {
                "id": "1",
                "type": "subscribe",
                "payload": {"query": query, "variables": {"c": "component:checkout"}},
            }
        )
        seen = []
        # In progress before the subscription was in place: its catch-up sends it; the success
        # comes as it happens.
        for state in ("in_progress", "success"):
            if state == "success":
                await env.github.send(
                    "deployment_status", github_event("deployment_status", state=state)
                )
            message = await ws.receive_json(timeout=5)
            assert message["type"] == "next", message
            seen.append(message["payload"]["data"]["componentDeploys"])
        assert seen == [
            {"state": "IN_PROGRESS", "stage": "production", "release": {"version": "main"}},
            {"state": "SUCCEEDED", "stage": "production", "release": {"version": "main"}},
        ]
        # Another component's deploys are not this subscription's.
        await env.github.send(
            "deployment_status",
            github_event(
                "deployment_status", deployment_id=5, repository="juniper/search", state="success"
            ),
        )
        with pytest.raises(asyncio.TimeoutError):
            await ws.receive_json(timeout=0.5)


def _at(days_ago: float) -> str:
    return (datetime.now(UTC) - timedelta(days=days_ago)).isoformat()


async def test_dora_figures_per_component_and_team(env: Env) -> None:
    """Production deploys over ten days: one fails and is fixed two hours later, one is rolled
    back half an hour later (to a release committed five days before)."""
    plan = [
        # (id, version, commit days ago, finished days ago, state, rollback)
        ("p1", "1.0", 10 + 1 / 24, 10, "succeeded", False),
        ("p2", "1.1", 8 + 2 / 24, 8, "failed", False),
        ("p3", "1.2", 8, 8 - 2 / 24, "succeeded", False),
        ("p4", "1.3", 3 + 1 / 24, 3, "succeeded", False),
        ("p5", "1.2", 8, 3 - 0.5 / 24, "succeeded", True),
        ("old", "0.9", 60, 59, "succeeded", False),  # outside the window
        ("s1", "1.3", 4, 4, "succeeded", False),  # staging: not counted
    ]
    for deploy_id, version, commit, finished, state, rollback in plan:
        answer = await env.hook(
            {
                "component": "component:checkout",
                "stage": "staging" if deploy_id.startswith("s") else "production",
                "deploy": {
                    "id": deploy_id,
                    "state": state,
                    "at": _at(finished),
                    "startedAt": _at(finished + 0.01),
                    "rollback": rollback,
                },
                "release": {"version": version, "commitTime": _at(commit)},
            }
        )
        assert answer.json()["outcome"] == "applied", answer.text
    query = """{ entity(ref: "component:checkout") { ... on Component { dora(days: 30) {
        days deploys failures deploysPerDay leadTimeSeconds changeFailureRate timeToRestoreSeconds } } }
      team: entity(ref: "group:team-a") { ... on Group { dora(days: 30) { deploys failures } } }
      other: entity(ref: "group:team-b") { ... on Group { dora(days: 30) { deploys } } } }"""
    body = (await env.client.gql(query))["data"]
    dora = body["entity"]["dora"]
    # p1, p3, p5 succeeded; p4 succeeded and was rolled back by p5; p2 failed.
    assert (dora["deploys"], dora["failures"]) == (4, 2)
    assert dora["changeFailureRate"] == pytest.approx(2 / 5)
    assert dora["deploysPerDay"] == pytest.approx(4 / 30)
    # Lead times (commit → finished) of p1, p4, p3, p5: 1 h, 1 h, 2 h, 5 days: median 1.5 h.
    assert dora["leadTimeSeconds"] == pytest.approx(1.5 * 3600, rel=0.01)
    # p2 fixed by p3 two hours later; p4 restored by p5 half an hour later: median 1.25 h.
    assert dora["timeToRestoreSeconds"] == pytest.approx(1.25 * 3600, rel=0.01)
    assert body["team"]["dora"] == {"deploys": 4, "failures": 2}
    assert body["other"]["dora"] == {"deploys": 0}
    bad = await env.client.gql(
        '{ entity(ref: "component:checkout") { ... on Component { dora(days: 0) { deploys } } } }',
        expect_errors=True,
    )
    assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_deployments_across_components_by_owner_stage_state_and_time(env: Env) -> None:
    for deploy_id, repository, environment, state, days in (
        (1, "juniper/checkout-service", "production", "success", 1),
        (2, "juniper/checkout-service", "staging", "failure", 2),
        (3, "juniper/search", "production", "success", 3),
        (4, "juniper/search", "production", "in_progress", 0),
    ):
        await env.github.send(
            "deployment_status",
            github_event(
                "deployment_status",
                deployment_id=deploy_id,
                repository=repository,
                environment=environment,
                state=state,
                created_at=_at(days),
                at=_at(days),
            ),
        )
    query = """query($f: DeploymentFilter, $first: Int!, $after: String) {
        deployments(filter: $f, first: $first, after: $after) {
          totalCount pageInfo { hasNextPage endCursor } edges { node { componentRef stage state } } } }"""

    async def found(filter_: dict[str, Any], first: int = 10, after: str | None = None) -> Any:
        body = await env.client.gql(query, {"f": filter_, "first": first, "after": after})
        return body["data"]["deployments"]

    everything = await found({})
    assert everything["totalCount"] == 4
    assert [e["node"]["componentRef"] for e in everything["edges"]] == [
        "component:default/search",
        "component:default/checkout",
        "component:default/checkout",
        "component:default/search",
    ]
    # bob owns checkout through team-a-sre, nested in team-a.
    assert (await found({"owner": "user:bob"}))["totalCount"] == 2
    assert (await found({"owner": "group:team-b", "state": ["SUCCEEDED"]}))["totalCount"] == 1
    assert (await found({"stage": "staging"}))["edges"][0]["node"]["state"] == "FAILED"
    assert (await found({"since": _at(1.5)}))["totalCount"] == 2
    first = await found({}, first=3)
    assert first["pageInfo"]["hasNextPage"] is True
    rest = await found({}, first=3, after=first["pageInfo"]["endCursor"])
    assert [e["node"]["componentRef"] for e in rest["edges"]] == ["component:default/search"]
    bad = await env.client.gql(
        query, {"f": {}, "first": 3, "after": "bm9wZQ=="}, expect_errors=True
    )
    assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    hostile = await found(
        {"stage": "'; drop table deployment_deploys; --", "component": "component:checkout"}
    )
    assert hostile["totalCount"] == 0


async def test_a_pipeline_set_through_the_api_and_one_declared_in_yaml(env: Env) -> None:
    mutation = """mutation($c: String!, $s: [StageInput!]!) { setPipeline(component: $c, stages: $s) {
        source stages { name production } } }"""
    stages = [{"name": "qa"}, {"name": "live", "production": True}]
    declared = await env.client.gql(
        mutation, {"c": "component:checkout", "s": stages}, user="alice", expect_errors=True
    )
    assert declared["errors"][0]["extensions"]["code"] == "FAILED_PRECONDITION"
    denied = await env.client.gql(
        mutation, {"c": "component:search", "s": stages}, user="alice", expect_errors=True
    )
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    body = await env.client.gql(mutation, {"c": "component:search", "s": stages}, user="mallory")
    assert body["data"]["setPipeline"] == {
        "source": "API",
        "stages": [{"name": "qa", "production": False}, {"name": "live", "production": True}],
    }
    twice = await env.client.gql(
        mutation,
        {"c": "component:search", "s": [{"name": "qa"}, {"name": "qa"}]},
        user="mallory",
        expect_errors=True,
    )
    assert "appears twice" in twice["errors"][0]["message"]
    rows = await env.client.services.db.fetch("select action, outcome from audit_log order by id")
    assert [r["outcome"] for r in rows] == ["failed", "denied", "allowed", "failed"]
    assert json.loads(json.dumps([r["action"] for r in rows])) == ["deployments.setPipeline"] * 4

    # The audit log pictures what the plugin changed (its snapshot hook), not the entity's row.
    again = [{"name": "staging"}, {"name": "live", "production": True}]
    await env.client.gql(mutation, {"c": "component:search", "s": again}, user="mallory")
    allowed = await env.client.services.db.fetch(
        "select before, after from audit_log where outcome = 'allowed' order by id"
    )
    pictures = [(r["before"], r["after"]) for r in allowed]
    first = {"declared_in": "api", "stages": [{"name": "qa"}, {"name": "live", "production": True}]}
    assert pictures == [
        (None, first),
        (
            first,
            {
                "declared_in": "api",
                "stages": [{"name": "staging"}, {"name": "live", "production": True}],
            },
        ),
    ]
