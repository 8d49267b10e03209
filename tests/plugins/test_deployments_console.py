"""What the console needs to offer only actions that can work and to name what they change:
whether a stage can be deployed (and why not), the release a rollback would deploy, and the
people behind deploys."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.settings import DeploymentSettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client
from tests.plugins.deploy_env import ORG, Env, deploy_env, eventually

STAGES = """query($r: String!) { entity(ref: $r) { ... on Component { pipeline { source stages {
  name deployable notDeployableReason rollbackTo { version artifact }
  current { release { version } } } } } } }"""
PROMOTE = """mutation($c: String!, $r: String!, $s: String!) {
  promoteRelease(component: $c, release: $r, stage: $s) { id state release { version } } }"""
ROLLBACK = """mutation($c: String!, $s: String!) {
  rollbackStage(component: $c, stage: $s) { id state isRollback release { version } } }"""
PEOPLE = """
apiVersion: backstage.io/v1alpha1
kind: User
metadata: {name: alice}
spec: {profile: {displayName: Alice Liddell}, memberOf: [team-a]}
---
apiVersion: backstage.io/v1alpha1
kind: User
metadata: {name: bob}
spec: {profile: {displayName: Bob Marley}, memberOf: [team-a-sre]}
"""
NOT_BOUND = "not bound to a workload and no CD system is configured"


def _now() -> str:
    return datetime.now(UTC).isoformat()


@pytest.fixture
async def env(make_client: AppFactory, tmp_path: Path) -> AsyncIterator[Env]:
    async with deploy_env(make_client, tmp_path) as environment:
        yield environment


async def _stages(client: Client, ref: str = "component:checkout") -> dict[str, Any]:
    body = await client.gql(STAGES, {"r": ref})
    pipeline = body["data"]["entity"]["pipeline"]
    return {s["name"]: s for s in pipeline["stages"]} | {"source": pipeline["source"]}


async def _event(
    env: Env,
    version: str,
    stage: str,
    *,
    actor: str | None = None,
    component: str = "component:checkout",
    state: str = "succeeded",
) -> None:
    """A deploy the CD system reports (Atrium's own webhook)."""
    deploy: dict[str, Any] = {"id": f"cd-{uuid.uuid4().hex}", "state": state}
    if actor is not None:
        deploy["actor"] = actor
    event = {
        "component": component,
        "stage": stage,
        "deploy": deploy,
        "release": {
            "version": version,
            "commitSha": hashlib.sha1(version.encode()).hexdigest(),
            "artifact": f"registry.example/checkout:{version}",
        },
    }
    assert (await env.hook(event)).json()["outcome"] == "applied"


async def test_a_stage_says_whether_atrium_can_deploy_to_it_and_the_mutations_agree(
    env: Env,
) -> None:
    await _event(env, "5.0.0", "canary")
    stages = await _stages(env.client)
    # canary and production roll PinApps the cluster reports; staging has nothing to deploy it.
    assert (stages["canary"]["deployable"], stages["canary"]["notDeployableReason"]) == (True, None)
    assert stages["production"]["deployable"] is True
    assert stages["staging"]["deployable"] is False
    assert stages["staging"]["notDeployableReason"] == NOT_BOUND

    for mutation, variables in (
        (PROMOTE, {"c": "component:checkout", "r": "5.0.0", "s": "staging"}),
        (ROLLBACK, {"c": "component:checkout", "s": "staging"}),
    ):
        refused = await env.client.gql(mutation, variables, user="alice", expect_errors=True)
        [error] = refused["errors"]
        assert error["extensions"]["code"] == "FAILED_PRECONDITION", error
        assert error["message"] == (
            f"stage staging of component:default/checkout cannot be deployed: {NOT_BOUND}"
        )
    assert [r.method for r in env.east.requests if r.method == "PATCH"] == []
    audit = await env.client.services.db.fetch(
        "select action, outcome, message from audit_log order by id"
    )
    assert [(r["action"], r["outcome"]) for r in audit] == [
        ("deployments.promote", "failed"),
        ("deployments.rollback", "failed"),
    ]
    assert NOT_BOUND in audit[0]["message"]

    # A pipeline of the API's: a PinApp no cluster reports, and one of another component.
    set_pipeline = """mutation($s: [StageInput!]!) { setPipeline(component: "component:search",
        stages: $s) { stages { name deployable notDeployableReason } } }"""
    stages_in = [
        {"name": "qa", "pinAppCluster": "east", "pinAppNamespace": "shop", "pinAppName": "gone"},
        {
            "name": "live",
            "pinAppCluster": "east",
            "pinAppNamespace": "shop",
            "pinAppName": "checkout",
        },
    ]
    body = await env.client.gql(set_pipeline, {"s": stages_in}, user="mallory")
    shown = body["data"]["setPipeline"]["stages"]
    assert shown == [
        {
            "name": "qa",
            "deployable": False,
            "notDeployableReason": "bound to workload east/shop/gone, which no cluster reports",
        },
        {
            "name": "live",
            "deployable": False,
            "notDeployableReason": "bound to workload east/shop/checkout, which belongs to "
            "component:default/checkout",
        },
    ]


async def test_stages_known_only_from_deploys_cannot_be_deployed(env: Env) -> None:
    await _event(env, "1.0", "production", component="component:search")
    stages = await _stages(env.client, "component:search")
    assert stages["source"] == "EVENTS"
    assert stages["production"]["deployable"] is False
    assert "pipeline is not declared" in stages["production"]["notDeployableReason"]
    refused = await env.client.gql(
        PROMOTE,
        {"c": "component:search", "r": "1.0", "s": "production"},
        user="mallory",
        expect_errors=True,
    )
    assert refused["errors"][0]["extensions"]["code"] == "FAILED_PRECONDITION"


async def test_a_stage_bound_to_a_pinapp_without_pincompute_says_so(
    make_client: AppFactory,
) -> None:
    settings = DeploymentSettings(deployments_cd_url="http://127.0.0.1:9/deploy")
    client: Client = await make_client(plugins=[DeploymentsPlugin(settings)])
    assert not (await apply_batch(client.services.db, parse_documents(ORG, "org.yaml"))).errors
    stages = await _stages(client)
    assert stages["canary"]["notDeployableReason"] == (
        "bound to workload east/shop/checkout-canary, and PinCompute is not installed"
    )
    # A CD system with no secret to sign its calls is not one Atrium can use.
    assert stages["staging"]["notDeployableReason"] == (
        "not bound to a workload, and the CD system's signing secret is not configured"
    )


async def test_rollback_to_is_the_release_rollback_stage_deploys(env: Env) -> None:
    stages = await _stages(env.client)
    assert all(stages[name]["rollbackTo"] is None for name in ("canary", "staging", "production"))
    for version in ("6.0.0", "6.1.0", "6.1.0", "6.2.0"):  # 6.1.0 twice: still one release
        await _event(env, version, "production")
    stages = await _stages(env.client)
    assert stages["production"]["current"]["release"]["version"] == "6.2.0"
    assert stages["production"]["rollbackTo"] == {
        "version": "6.1.0",
        "artifact": "registry.example/checkout:6.1.0",
    }
    assert stages["canary"]["rollbackTo"] is None

    body = await env.client.gql(
        ROLLBACK, {"c": "component:checkout", "s": "production"}, user="alice"
    )
    rollback = body["data"]["rollbackStage"]
    assert rollback["isRollback"] is True
    assert rollback["release"]["version"] == stages["production"]["rollbackTo"]["version"]
    assert env.east.get("pinapps", "shop", "checkout")["spec"]["image"].endswith(":6.1.0")

    # Nothing earlier to go back to: both say so.
    nothing = await env.client.gql(
        ROLLBACK, {"c": "component:checkout", "s": "canary"}, user="alice", expect_errors=True
    )
    assert nothing["errors"][0]["extensions"]["code"] == "FAILED_PRECONDITION"

    # The controller's part: every replica updated and ready, in a status written after the
    # patch. Then the rollback succeeds, and what runs is 6.1.0 again.
    replicas = env.east.get("pinapps", "shop", "checkout")["spec"]["replicas"]
    available = {"type": "Available", "status": "True", "lastTransitionTime": _now()}
    status = {"replicas": replicas, "updatedReplicas": replicas, "readyReplicas": replicas}
    await env.east.modify(
        "pinapps", "shop", "checkout", {"status": {**status, "conditions": [available]}}
    )

    async def rolled_back() -> bool:
        body = await env.client.gql(f'{{ deploy(id: "{rollback["id"]}") {{ state }} }}')
        return bool(body["data"]["deploy"]["state"] == "SUCCEEDED")

    await eventually(rolled_back)
    after = await _stages(env.client)
    # 6.2.0 was rolled back: the last good release before 6.1.0 is 6.0.0.
    assert after["production"]["rollbackTo"]["version"] == "6.0.0"


ACTORS = """query($n: Int!) { entity(ref: "component:checkout") { ... on Component {
  deployments(first: $n) { edges { node { actor actorUser { ref profile { displayName } } } } } } } }"""


async def test_actor_user_names_catalog_users_in_one_batch(
    make_client: AppFactory, tmp_path: Path
) -> None:
    # No rollout checks in the background: every statement counted is the query's.
    async with deploy_env(make_client, tmp_path, deployments_check_interval=3600.0) as env:
        await _actors_in_one_batch(env)


async def _actors_in_one_batch(env: Env) -> None:
    db = env.client.services.db
    assert not (await apply_batch(db, parse_documents(ORG + "\n---\n" + PEOPLE, "org.yaml"))).errors
    actors = [
        "alice",  # a CD system's login that is a user's name
        "user:default/bob",  # a viewer of Atrium's
        "token:release-bot (user:default/alice)",  # a token acting for a user
        "argo-cd",  # a name the catalog does not know
        "group:default/team-a",  # not a person
        "Not A Name!",
        None,
    ]
    for index, actor in enumerate(actors):
        await _event(env, f"7.{index}.0", "production", actor=actor)
    for index in range(len(actors), 20):
        await _event(env, f"7.{index}.0", "production", actor=("alice", "bob", "carol")[index % 3])

    body = await env.client.gql(ACTORS, {"n": 20})
    edges = body["data"]["entity"]["deployments"]["edges"]
    shown = {e["node"]["actor"]: e["node"]["actorUser"] for e in edges}
    alice = {"ref": "user:default/alice", "profile": {"displayName": "Alice Liddell"}}
    bob = {"ref": "user:default/bob", "profile": {"displayName": "Bob Marley"}}
    assert shown["alice"] == alice and shown["bob"] == bob
    assert shown["user:default/bob"] == bob
    assert shown["token:release-bot (user:default/alice)"] == alice
    for nobody in ("argo-cd", "group:default/team-a", "Not A Name!", None, "carol"):
        assert shown[nobody] is None, nobody

    async def statements(n: int) -> int:
        env.client.services.caches.clear_local()
        before = db.queries
        answer = await env.client.gql(ACTORS, {"n": n})
        assert len(answer["data"]["entity"]["deployments"]["edges"]) == n
        return int(db.queries - before)

    one, twenty = await statements(1), await statements(20)
    assert one == twenty, (one, twenty)
    assert twenty <= 6, twenty
