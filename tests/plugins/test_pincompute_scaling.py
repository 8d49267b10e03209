"""Scaling within limits: a PinApp with a PinScaler is scaled by its bounds, never its
replicas; bounds stay within the CRD's limits, in order, and within what the owning team's
quota leaves, which PinApp.maxReplicasAllowed tells the console. Every refusal is audited."""

from __future__ import annotations

from typing import Any

from plugins.pincompute.settings import Quota
from tests.plugins.test_pincompute import Env, env, eventually, pinapp

__all__ = ["env"]  # the fixture, shared with the module it comes from

SCALE = """mutation($c: String!, $n: String!, $r: Int, $min: Int, $max: Int) {
  scaleWorkload(cluster: $c, namespace: "shop", name: $n, replicas: $r, minReplicas: $min,
    maxReplicas: $max) { id replicas maxReplicasAllowed scaler { minReplicas maxReplicas } } }"""
ALLOWED = """query($c: String!, $ns: String!, $n: String!) {
  pinApp(cluster: $c, namespace: $ns, name: $n) { maxReplicasAllowed } }"""


async def _allowed(env: Env, cluster: str, name: str, namespace: str = "shop") -> Any:
    body = await env.client.gql(ALLOWED, {"c": cluster, "ns": namespace, "n": name})
    return body["data"]["pinApp"]["maxReplicasAllowed"]


async def _refused(env: Env, variables: dict[str, Any]) -> str:
    body = await env.client.gql(SCALE, variables, user="alice", expect_errors=True)
    [error] = body["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    return str(error["message"])


def _bounds(env: Env) -> tuple[int, int]:
    spec = env.east.get("pinscalers", "shop", "checkout")["spec"]
    return spec["minReplicas"], spec["maxReplicas"]


async def test_a_scaled_app_takes_bounds_within_limits_and_refuses_the_rest(env: Env) -> None:
    checkout = {"c": "east", "n": "checkout"}
    # team-a's quota is 10 replicas; checkout-west (1 replica) takes one of them.
    assert await _allowed(env, "east", "checkout") == 9

    message = await _refused(env, checkout | {"r": 5})
    assert "has a PinScaler" in message and "give minReplicas and maxReplicas" in message
    assert "has a PinScaler" in await _refused(env, checkout | {"r": 5, "max": 8})
    assert "has a PinScaler" in await _refused(env, checkout)
    assert (
        await _refused(env, checkout | {"min": 7, "max": 3})
        == "minReplicas 7 must not exceed maxReplicas 3"
    )
    # One bound given: the other is the scaler's (2 to 6).
    assert (
        await _refused(env, checkout | {"min": 8}) == "minReplicas 8 must not exceed maxReplicas 6"
    )
    assert (
        await _refused(env, checkout | {"max": 2000})
        == "maxReplicas 2000 is above the PinScaler limit of 1000"
    )
    assert (
        await _refused(env, checkout | {"min": -1})
        == "minReplicas -1 is below the PinScaler limit of 0"
    )
    assert await _refused(env, checkout | {"max": 40}) == (
        "maxReplicas 40 is more than PinApp east/shop/checkout may have: at most 9, within "
        "group:default/team-a's quota of 10 replicas (1 taken by its other workloads)"
    )
    assert _bounds(env) == (2, 6)
    assert [r for r in env.east.requests if r.method == "PATCH"] == []

    done = await env.client.gql(SCALE, checkout | {"min": 3, "max": 9}, user="alice")
    assert done["data"]["scaleWorkload"]["scaler"] == {"minReplicas": 3, "maxReplicas": 9}
    assert _bounds(env) == (3, 9)
    await env.client.gql(SCALE, checkout | {"max": 7}, user="alice")
    assert _bounds(env) == (3, 7)
    patches = [r.json() for r in env.east.requests if r.method == "PATCH"]
    assert patches == [
        {"spec": {"minReplicas": 3, "maxReplicas": 9}},
        {"spec": {"maxReplicas": 7}},  # only what was given
    ]

    rows = await env.client.services.db.fetch(
        "select outcome, message from audit_log where action = 'pincompute.scale' order by id"
    )
    assert [r["outcome"] for r in rows] == ["failed"] * 8 + ["allowed"] * 2
    assert "maxReplicas 40" in rows[7]["message"]


async def test_an_app_without_a_scaler_takes_replicas_within_what_the_quota_leaves(
    env: Env,
) -> None:
    west = {"c": "west", "n": "checkout-west"}
    # checkout counts at its PinScaler's maximum (6) against team-a's 10.
    assert await _allowed(env, "west", "checkout-west") == 4
    message = await _refused(env, west | {"min": 1, "max": 3})
    assert message.startswith("PinApp west/shop/checkout-west has no PinScaler: give replicas")
    assert await _refused(env, west | {"r": 5}) == (
        "replicas 5 is more than PinApp west/shop/checkout-west may have: at most 4, within "
        "group:default/team-a's quota of 10 replicas (6 taken by its other workloads)"
    )
    assert await _refused(env, west | {"r": 1001}) == (
        "replicas 1001 is above the PinApp limit of 1000"
    )
    done = await env.client.gql(SCALE, west | {"r": 4}, user="alice")
    assert done["data"]["scaleWorkload"]["replicas"] == 4
    # What checkout-west now asks for leaves checkout less.
    assert await _allowed(env, "east", "checkout") == 6


async def test_max_replicas_allowed_is_the_tightest_quota_and_null_without_one(env: Env) -> None:
    compute = env.client.services.extras["pincompute"]
    # A CPU quota of one core, at 250m a replica with 250m taken by checkout-west: 3.
    compute.settings.compute_quotas["group:default/team-a"] = Quota(replicas=10, cpu="1")
    assert await _allowed(env, "east", "checkout") == 3
    message = await _refused(env, {"c": "east", "n": "checkout", "max": 4})
    assert message.endswith(
        "at most 3, within group:default/team-a's CPU quota of 1 at 250m a replica "
        "(250m taken by its other workloads)"
    )
    # Owners over their quota already: nothing left, never less than nothing.
    compute.settings.compute_quotas["group:default/team-a"] = Quota(replicas=1)
    assert await _allowed(env, "east", "checkout") == 0
    # team-b has the default quota (200 replicas) and one workload.
    assert await _allowed(env, "west", "search", namespace="search") == 200
    # A PinApp no catalog entity owns is under no quota.
    await env.west.put("pinapps", "shop", pinapp("orphan", "component:default/nobody"))

    async def seen() -> bool:
        found = await env.client.gql(
            '{ pinApp(cluster: "west", namespace: "shop", name: "orphan") { id } }'
        )
        return found["data"]["pinApp"] is not None

    await eventually(seen)
    assert await _allowed(env, "west", "orphan") is None
