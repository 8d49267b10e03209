"""Tenancy in the clusters, as the platform's job submission enforces it: a manifest is applied
only when the viewer may change the entity it names, what it points at (a PinScaler's PinApp)
and the namespace it lands in; nobody, admins included, takes over a PinApp that has a
PinScaler of another owner, or a host another owner's PinApp serves. Each refusal is FORBIDDEN
with its reason, audited under the object it would have touched, and leaves the clusters as
they were.

The emulated clusters of test_pincompute: east holds team-a's checkout in namespace shop (with
a PinScaler of no owner), west team-a's checkout-west in shop and team-b's search in search.
mallory is in team-b, alice in team-a."""

from __future__ import annotations

from typing import Any

import yaml

from tests.conftest import Client
from tests.plugins.test_pincompute import Env, env, pinapp

__all__ = ["env"]  # the fixture, shared with test_pincompute

APPLY = """mutation($c: String!, $m: String!) { applyWorkloadManifest(cluster: $c, manifest: $m) {
    created pinApp { id } pinScaler { id } } }"""


def scaler(name: str, entity: str, target: str, namespace: str = "shop") -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "compute.atrium.dev/v1",
            "kind": "PinScaler",
            "metadata": {
                "name": name,
                "namespace": namespace,
                "annotations": {"atrium.dev/entity-ref": entity},
            },
            "spec": {"targetRef": {"name": target}, "minReplicas": 1, "maxReplicas": 1},
        }
    )


def app(name: str, entity: str, namespace: str, host: str | None = None) -> str:
    body = pinapp(name, entity, namespace=namespace) | {"status": {}}
    if host:
        body["spec"]["ingress"] = {"host": host, "path": "/"}
    return yaml.safe_dump(body)


async def refused(client: Client, cluster: str, manifest: str, **as_: Any) -> dict[str, Any]:
    """The refusal of ``manifest``, checked FORBIDDEN; the audit row it left."""
    body = await client.gql(APPLY, {"c": cluster, "m": manifest}, expect_errors=True, **as_)
    [error] = body["errors"]
    assert error["extensions"]["code"] == "FORBIDDEN", body
    assert body["data"] is None
    row = await client.services.db.fetchrow(
        "select action, outcome, target_ref, message from audit_log order by id desc limit 1"
    )
    assert (row["action"], row["outcome"]) == ("pincompute.apply", "denied")
    assert row["message"] == error["message"]
    return dict(row)


async def test_a_scaler_of_ones_own_entity_cannot_take_another_teams_workload(env: Env) -> None:
    before = env.east.get("pinapps", "shop", "checkout")
    row = await refused(
        env.client,
        "west",
        scaler("mallory-scaler", "component:search", "checkout-west"),
        user="mallory",
    )
    assert row["target_ref"] == "pinapp:west/shop/checkout-west"
    assert "owned by group:default/team-a" in row["message"]
    assert env.west.get("pinscalers", "shop", "mallory-scaler") is None
    assert env.east.get("pinapps", "shop", "checkout") == before


async def test_nobody_takes_over_a_workload_that_has_a_scaler_of_another_owner(env: Env) -> None:
    # checkout's own PinScaler names no entity: even its team's member and an admin are
    # refused a second one that would fight it.
    for who in ({"user": "alice"}, {"token": await env.client.admin_token()}):
        row = await refused(
            env.client, "east", scaler("second", "component:checkout", "checkout"), **who
        )
        assert row["target_ref"] == "pinapp:east/shop/checkout"
        assert "already has PinScaler checkout, owned by nobody" in row["message"]
    assert env.east.get("pinscalers", "shop", "second") is None
    # A PinApp without one takes its team's scaler.
    done = await env.client.gql(
        APPLY,
        {"c": "west", "m": scaler("checkout-west", "component:checkout", "checkout-west")},
        user="alice",
    )
    assert done["data"]["applyWorkloadManifest"]["pinScaler"] == {"id": "west/shop/checkout-west"}


async def test_a_namespace_is_its_teams(env: Env) -> None:
    row = await refused(
        env.client, "east", app("checkout-shadow", "component:search", "shop"), user="mallory"
    )
    assert row["target_ref"] == "namespace:east/shop"
    assert "it belongs to group:default/team-a" in row["message"]
    assert env.east.get("pinapps", "shop", "checkout-shadow") is None
    # In her team's namespace, and in one nobody uses yet, she may.
    for cluster, namespace in (("west", "search"), ("east", "mallory-new")):
        done = await env.client.gql(
            APPLY,
            {"c": cluster, "m": app("search-2", "component:search", namespace)},
            user="mallory",
        )
        assert done["data"]["applyWorkloadManifest"]["created"] is True, done


async def test_a_host_another_team_serves_cannot_be_claimed(env: Env) -> None:
    host = "checkout.junipermarket.example"
    served = await env.client.gql(
        APPLY,
        {"c": "east", "m": app("checkout", "component:checkout", "shop", host)},
        user="alice",
    )
    assert "errors" not in served, served
    # In her own namespace, of another cluster: still checkout's host. (The CRD's pattern
    # admits lowercase names only, without a final dot: one spelling of each host.)
    row = await refused(
        env.client, "west", app("search-web", "component:search", "search", host), user="mallory"
    )
    assert row["target_ref"] == "pinapp:east/shop/checkout"
    assert f"host {host} is served by PinApp east/shop/checkout" in row["message"]
    assert env.west.get("pinapps", "search", "search-web") is None
    # Another host is hers to take.
    other = app("search-web", "component:search", "search", "search.junipermarket.example")
    taken = await env.client.gql(APPLY, {"c": "west", "m": other}, user="mallory")
    assert taken["data"]["applyWorkloadManifest"]["created"] is True, taken
    assert env.west.get("pinapps", "search", "search-web") is not None
