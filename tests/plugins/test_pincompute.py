"""PinCompute against two emulated clusters (kmock over HTTP, kubernetes-asyncio as in
production), booted as the only plugin besides the core."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from plugins.pincompute import PinComputePlugin
from plugins.pincompute.logs import FOLLOW_BUFFER, FOLLOW_OVERLAP
from plugins.pincompute.settings import ComputeSettings, Quota
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client
from tests.kube import Cluster, kubeconfig, start_clusters

ORG = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a}
spec: {type: team, members: [alice], children: [team-a-sre]}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a-sre}
spec: {type: team, members: [bob]}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-b}
spec: {type: team, members: [mallory]}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: checkout}
spec: {type: service, lifecycle: production, owner: team-a}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: search}
spec: {type: service, lifecycle: production, owner: team-b}
"""


def pinapp(name: str, entity: str, *, replicas: int = 2, namespace: str = "shop") -> dict[str, Any]:
    return {
        "apiVersion": "compute.atrium.dev/v1",
        "kind": "PinApp",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"atrium.dev/entity-ref": entity},
        },
        "spec": {
            "image": f"registry.example/{name}:1.0",
            "replicas": replicas,
            "resources": {"requests": {"cpu": "250m", "memory": "256Mi"}},
            "env": [
                {"name": "LOG_LEVEL", "value": "info"},
                {"name": "DB_PASSWORD", "value": "hunter2"},
                {"name": "API_KEY", "valueFrom": {"secretKeyRef": {"name": "keys", "key": "api"}}},
            ],
        },
        "status": {
            "replicas": replicas,
            "readyReplicas": replicas - 1,
            "updatedReplicas": replicas,
        },
    }


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


class Env:
    def __init__(self, client: Client, east: Cluster, west: Cluster) -> None:
        self.client, self.east, self.west = client, east, west

    async def apps(self, filter_: dict[str, Any] | None = None, **kw: Any) -> dict[str, Any]:
        query = """query($f: WorkloadFilter) { pinApps(filter: $f, first: 50) {
            totalCount nodes { id cluster name entityRef replicas } clusterErrors { cluster message } } }"""
        body = await self.client.gql(query, {"f": filter_}, **kw)
        return body["data"]["pinApps"]  # type: ignore[no-any-return]


@pytest.fixture
async def env(make_client: AppFactory, tmp_path: Path) -> AsyncIterator[Env]:
    async with start_clusters("east", "west") as (east, west):
        await east.put("pinapps", "shop", pinapp("checkout", "component:default/checkout"))
        await east.put(
            "pinscalers",
            "shop",
            {
                "apiVersion": "compute.atrium.dev/v1",
                "kind": "PinScaler",
                "metadata": {"name": "checkout", "namespace": "shop"},
                "spec": {"targetRef": {"name": "checkout"}, "minReplicas": 2, "maxReplicas": 6},
                "status": {
                    "currentReplicas": 2,
                    "desiredReplicas": 3,
                    "lastDecision": {"replicas": 3, "reason": "cpu above target"},
                },
            },
        )
        await west.put("pinapps", "shop", pinapp("checkout-west", "component:checkout", replicas=1))
        await west.put(
            "pinapps", "search", pinapp("search", "component:default/search", namespace="search")
        )
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(east, west)))
        settings = ComputeSettings(
            kubeconfig=str(path),
            compute_watch_timeout=2,
            compute_request_timeout=1.0,
            compute_quotas={"group:default/team-a": Quota(replicas=10, cpu="4", memory="8Gi")},
        )
        client: Client = await make_client(plugins=[PinComputePlugin(settings)])
        assert not (await apply_batch(client.services.db, parse_documents(ORG, "org.yaml"))).errors
        environment = Env(client, east, west)

        async def synced() -> bool:
            clusters = (await client.gql("{ clusters { name synced healthy } }"))["data"][
                "clusters"
            ]
            return all(c["synced"] and c["healthy"] for c in clusters) and len(clusters) == 2

        await eventually(synced)
        yield environment


async def test_workloads_of_a_team_across_clusters(env: Env) -> None:
    team = await env.apps({"owner": "group:team-a"})
    assert sorted(n["id"] for n in team["nodes"]) == [
        "east/shop/checkout",
        "west/shop/checkout-west",
    ]
    assert team["totalCount"] == 2 and team["clusterErrors"] == []
    # bob is in team-a-sre, nested in team-a: he owns them too.
    assert (await env.apps({"owner": "user:bob"}))["totalCount"] == 2
    assert (await env.apps({"owner": "user:mallory"}))["totalCount"] == 1
    assert (await env.apps({"namespace": ["search"]}))["nodes"][0]["name"] == "search"
    assert (await env.apps({"cluster": ["west"]}))["totalCount"] == 2
    assert (await env.apps({"search": "west"}))["totalCount"] == 1


async def test_a_workload_page_and_the_component_side(env: Env) -> None:
    query = """{ pinApp(cluster: "east", namespace: "shop", name: "checkout") {
        image replicas readyReplicas desiredReplicas rolloutProgress entity { ref }
        env { name value source }
        scaler { minReplicas maxReplicas desiredReplicas decision { replicas reason } target { name } } }
      entity(ref: "component:checkout") { ... on Component { workloads { id } } } }"""
    body = (await env.client.gql(query))["data"]
    app = body["pinApp"]
    assert app["entity"] == {"ref": "component:default/checkout"}
    assert (app["readyReplicas"], app["desiredReplicas"], app["rolloutProgress"]) == (1, 2, 1.0)
    assert app["env"] == [
        {"name": "LOG_LEVEL", "value": "info", "source": "value"},
        {"name": "DB_PASSWORD", "value": None, "source": "hidden"},
        {"name": "API_KEY", "value": None, "source": "secret:keys/api"},
    ]
    assert app["scaler"]["maxReplicas"] == 6 and app["scaler"]["target"] == {"name": "checkout"}
    assert app["scaler"]["decision"] == {"replicas": 3, "reason": "cpu above target"}
    assert [w["id"] for w in body["entity"]["workloads"]] == [
        "east/shop/checkout",
        "west/shop/checkout-west",
    ]


async def test_watch_events_reach_the_store(env: Env) -> None:
    await env.east.put("pinapps", "shop", pinapp("cart", "component:checkout"))
    await eventually(lambda: _has(env, "east/shop/cart"))
    await env.east.modify("pinapps", "shop", "cart", {"spec": {"replicas": 5}})

    async def five() -> bool:
        apps = await env.apps({"search": "cart"})
        return bool(apps["nodes"]) and apps["nodes"][0]["replicas"] == 5

    await eventually(five)
    await env.east.delete("pinapps", "shop", "cart")
    await eventually(lambda: _gone(env, "east/shop/cart"))


async def _has(env: Env, workload_id: str) -> bool:
    return workload_id in [n["id"] for n in (await env.apps())["nodes"]]


async def _gone(env: Env, workload_id: str) -> bool:
    return not await _has(env, workload_id)


async def test_410_gone_relists_and_sees_deletions_made_in_the_gap(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every watch borrows its cluster's client: none makes one of its own (an SSL context and
    # an aiohttp session, some 30 ms of CPU each time).
    made = []
    rest = importlib.import_module("kubernetes_asyncio.client.rest")
    construct = rest.RESTClientObject.__init__

    def counted(self: Any, *args: Any, **kwargs: Any) -> None:
        made.append(self)
        construct(self, *args, **kwargs)

    monkeypatch.setattr(rest.RESTClientObject, "__init__", counted)
    await env.east.put("pinapps", "shop", pinapp("temp", "component:checkout"))
    await eventually(lambda: _has(env, "east/shop/temp"))
    lists_before = await env.client.gql("{ clusters { name } }")
    assert lists_before
    await env.east.go_dark()  # the informer's watch hears nothing from here
    await env.east.delete("pinapps", "shop", "temp")  # a deletion its watch never delivers
    env.east.fail_next_watch_with_gone("pinapps")  # its version will be too old when it comes back
    await env.east.resume()
    await eventually(lambda: _gone(env, "east/shop/temp"), within=15)
    watches = [r for r in env.east.requests if r.is_watch and r.path.endswith("/pinapps")]
    # Go parses "True" as true: kubernetes-asyncio writes Python booleans.
    assert watches and all(
        r.query["allowWatchBookmarks"].lower() == "true" and r.query["timeoutSeconds"] == "2"
        for r in watches
    )
    lists = [
        r
        for r in env.east.requests
        if not r.is_watch and r.method == "GET" and r.path.endswith("/pinapps")
    ]
    assert len(lists) >= 2, "a 410 makes the informer list again"
    assert all(r.query.get("limit") == "500" for r in lists)
    assert len(watches) >= 2 and made == []


async def test_a_cluster_that_stops_answering_leaves_the_other_serving(env: Env) -> None:
    await env.west.go_dark()

    async def west_failing() -> bool:
        return bool((await env.apps())["clusterErrors"])

    await eventually(west_failing, within=15)
    result = await env.apps({"owner": "group:team-a"})
    assert [e["cluster"] for e in result["clusterErrors"]] == ["west"]
    # East answers, and west's last known state is still shown.
    assert "east/shop/checkout" in [n["id"] for n in result["nodes"]]
    await env.east.put("pinapps", "shop", pinapp("fresh", "component:checkout"))
    await eventually(lambda: _has(env, "east/shop/fresh"))
    metrics = (await env.client.get("/metrics")).text
    assert 'atrium_compute_cluster_healthy{cluster="west"} 0.0' in metrics
    assert 'atrium_compute_cluster_healthy{cluster="east"} 1.0' in metrics


SCALE = """mutation($c: String!, $n: String!, $r: Int, $max: Int) {
  scaleWorkload(cluster: $c, namespace: "shop", name: $n, replicas: $r, maxReplicas: $max) { id replicas } }"""


async def test_a_non_owner_cannot_scale_and_the_owner_can_both_audited(env: Env) -> None:
    denied = await env.client.gql(
        SCALE, {"c": "west", "n": "checkout-west", "r": 3}, user="mallory", expect_errors=True
    )
    assert denied["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    assert env.west.get("pinapps", "shop", "checkout-west")["spec"]["replicas"] == 1

    allowed = await env.client.gql(SCALE, {"c": "west", "n": "checkout-west", "r": 3}, user="bob")
    assert allowed["data"]["scaleWorkload"]["replicas"] == 3
    assert env.west.get("pinapps", "shop", "checkout-west")["spec"]["replicas"] == 3
    [patch] = [r for r in env.west.requests if r.method == "PATCH"]
    assert patch.content_type == "application/merge-patch+json"
    assert patch.json() == {"spec": {"replicas": 3}}

    rows = await env.client.services.db.fetch(
        "select actor, action, target_ref, outcome, before, after from audit_log order by id"
    )
    assert [(r["actor"], r["outcome"]) for r in rows] == [
        ("user:default/mallory", "denied"),
        ("user:default/bob", "allowed"),
    ]
    assert (
        rows[1]["action"] == "pincompute.scale"
        and rows[1]["target_ref"] == "pinapp:west/shop/checkout-west"
    )
    assert (rows[1]["before"]["spec"]["replicas"], rows[1]["after"]["spec"]["replicas"]) == (1, 3)


async def test_viewer_can_manage_says_who_may_change_a_workload(env: Env) -> None:
    """What the console shows buttons by: bob (nested in the owning team) yes, mallory and
    anonymous no, an admin token yes; and each answer is private."""
    query = (
        '{ pinApp(cluster: "west", namespace: "shop", name: "checkout-west") { viewerCanManage } }'
    )
    for user, expected in (("bob", True), ("mallory", False), (None, False)):
        body = await env.client.gql(query, user=user)
        assert body["data"]["pinApp"]["viewerCanManage"] is expected, user
    token = await env.client.admin_token()
    admin = await env.client.post(
        "/graphql", json={"query": query}, headers={"Authorization": f"Bearer {token}"}
    )
    assert admin.json()["data"]["pinApp"]["viewerCanManage"] is True
    got = await env.client.get(
        "/graphql",
        params={"query": query},
        headers={"x-forwarded-user": "bob", "content-type": "application/json"},
    )
    assert got.status_code == 200, got.text
    assert "public" not in got.headers["cache-control"], got.headers["cache-control"]


async def test_restart_and_set_image(env: Env) -> None:
    restart = (
        'mutation { restartWorkload(cluster: "east", namespace: "shop", name: "checkout") { id } }'
    )
    assert "errors" not in await env.client.gql(restart, user="alice")
    annotations = env.east.get("pinapps", "shop", "checkout")["spec"]["template"]["annotations"]
    assert "atrium.dev/restartedAt" in annotations
    image = 'mutation($i: String!) { setWorkloadImage(cluster: "east", namespace: "shop", name: "checkout", image: $i) { image } }'
    done = await env.client.gql(image, {"i": "registry.example/checkout:2.0"}, user="alice")
    assert done["data"]["setWorkloadImage"]["image"] == "registry.example/checkout:2.0"
    bad = await env.client.gql(image, {"i": "Not An Image!"}, user="alice", expect_errors=True)
    assert "spec.image" in bad["errors"][0]["message"]
    assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


APPLY = "mutation($c: String!, $m: String!) { applyWorkloadManifest(cluster: $c, manifest: $m) { created pinApp { id replicas } } }"


async def test_apply_validates_checks_quota_then_creates_or_patches(env: Env) -> None:
    manifest = yaml.safe_dump(pinapp("payments", "component:checkout", replicas=2) | {"status": {}})
    created = await env.client.gql(APPLY, {"c": "east", "m": manifest}, user="alice")
    assert created["data"]["applyWorkloadManifest"] == {
        "created": True,
        "pinApp": {"id": "east/shop/payments", "replicas": 2},
    }
    assert env.east.get("pinapps", "shop", "payments") is not None

    patched = await env.client.gql(
        APPLY, {"c": "east", "m": manifest.replace("replicas: 2", "replicas: 3")}, user="alice"
    )
    assert patched["data"]["applyWorkloadManifest"]["created"] is False
    assert env.east.get("pinapps", "shop", "payments")["spec"]["replicas"] == 3

    invalid = manifest.replace("replicas: 2", "replicas: -4").replace(
        "image: registry", "imagee: registry"
    )
    refused = await env.client.gql(
        APPLY, {"c": "east", "m": invalid}, user="alice", expect_errors=True
    )
    message = refused["errors"][0]["message"]
    assert (
        "spec: 'image' is a required property" in message
        and "spec.replicas: -4 is less than the minimum of 0" in message
    )

    greedy = manifest.replace("replicas: 2", "replicas: 9")
    over = await env.client.gql(APPLY, {"c": "east", "m": greedy}, user="alice", expect_errors=True)
    assert over["errors"][0]["extensions"]["code"] == "QUOTA_EXCEEDED"

    stranger = await env.client.gql(
        APPLY, {"c": "east", "m": manifest}, user="mallory", expect_errors=True
    )
    assert stranger["errors"][0]["extensions"]["code"] == "FORBIDDEN"
    # Moving a workload to another team's entity needs that team's consent too.
    hijack = manifest.replace("component:checkout", "component:search")
    moved = await env.client.gql(
        APPLY, {"c": "east", "m": hijack}, user="alice", expect_errors=True
    )
    assert moved["errors"][0]["extensions"]["code"] == "FORBIDDEN"


@pytest.mark.parametrize(
    ("manifest", "expected"),
    [
        (
            "kind: PinApp\nmetadata: {name: [unclosed\n",
            "invalid YAML at line 3, column 1: expected ',' or ']'",
        ),
        ("[" * 5_000, "invalid YAML at line 1, column 65: values are nested more than 64 deep"),
        (
            'kind: PinApp\nmetadata: {name: "a\\0b"}\n',
            "invalid YAML at line 2, column 18: a string that holds a NUL character",
        ),
        ("&a [*a]\n", "alias *a stands for a value that contains it"),
        (
            "a: &a [1,2,3,4,5,6,7,8,9]\n"
            + "".join(
                f"{c}: &{c} [{','.join(['*' + p] * 9)}]\n"
                for p, c in zip("abcdefgh", "bcdefghi", strict=True)
            ),
            "the document stands for more than 100,000 values",
        ),
        ("kind: PinApp\nspec: {replicas: 99999999999999999999999}\n", "beyond 64 bits"),
        (
            "kind: PinApp\nmetadata: {labels: {a: [1]}, annotations: {b: 2}}\n",
            "metadata.labels.a: must be a string; metadata.annotations.b: must be a string",
        ),
        ("a: 1\n---\nb: 2\n", "expected one manifest, found 2"),
        ("- a list\n", "expected a mapping"),
        ("kind: PinApp\nmetadata: just text\n", "metadata: is required"),
    ],
)
async def test_a_manifest_that_is_not_one_is_bad_input_and_audited(
    env: Env, manifest: str, expected: str
) -> None:
    refused = await env.client.gql(
        APPLY, {"c": "east", "m": manifest}, user="alice", expect_errors=True
    )
    [error] = refused["errors"]
    assert error["extensions"]["code"] == "BAD_USER_INPUT", error
    assert error["message"].startswith("invalid manifest: ") and expected in error["message"]
    row = await env.client.services.db.fetchrow(
        "select action, outcome, message from audit_log order by id desc limit 1"
    )
    assert row["action"] == "pincompute.apply" and row["outcome"] == "failed"
    assert expected in row["message"]


async def test_pods_events_and_logs(env: Env) -> None:
    await env.east.put(
        "pods",
        "shop",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "checkout-abc",
                "namespace": "shop",
                "labels": {"atrium.dev/pinapp": "checkout"},
            },
            "spec": {"containers": [{"name": "app", "image": "x"}], "nodeName": "node-1"},
            "status": {
                "phase": "Running",
                "containerStatuses": [
                    {
                        "name": "app",
                        "ready": True,
                        "restartCount": 2,
                        "image": "x",
                        "imageID": "x",
                        "started": True,
                    }
                ],
            },
        },
    )
    await env.east.put(
        "pods",
        "shop",
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": "other-xyz",
                "namespace": "shop",
                "labels": {"atrium.dev/pinapp": "other"},
            },
            "spec": {"containers": [{"name": "app", "image": "x"}]},
            "status": {"phase": "Pending"},
        },
    )
    env.east.pod_log("shop", "checkout-abc", '{"level": "info", "msg": "started"}\nready\n')
    query = """{ pinApp(cluster: "east", namespace: "shop", name: "checkout") { pods { name phase ready restarts node containers } }
      podLogs(cluster: "east", namespace: "shop", pod: "checkout-abc", tailLines: 10) { text } }"""
    body = (await env.client.gql(query))["data"]
    assert body["pinApp"]["pods"] == [
        {
            "name": "checkout-abc",
            "phase": "Running",
            "ready": True,
            "restarts": 2,
            "node": "node-1",
            "containers": ["app"],
        }
    ]
    assert body["podLogs"]["text"] == '{"level": "info", "msg": "started"}\nready\n'
    pod_lists = [r for r in env.east.requests if r.path.endswith("/pods") and r.method == "GET"]
    assert pod_lists and pod_lists[0].query.get("labelSelector") == "atrium.dev/pinapp"
    log_reads = [r for r in env.east.requests if r.path.endswith("/log")]
    assert log_reads[0].query.get("tailLines") == "10"


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (
            "{ pinApps { nodes { events(first: -1) { reason } } } }",
            "first must be between 0 and 100",
        ),
        (
            "{ pinApps { nodes { events(first: 101) { reason } } } }",
            "first must be between 0 and 100",
        ),
        ("{ pinApps(first: 2147483647) { totalCount } }", "first must be between 0 and 100"),
        ('{ pinApps(after: "////") { totalCount } }', "after is not a cursor this API issued"),
        (
            '{ podLogs(cluster: "east", namespace: "shop", pod: "x", tailLines: 2147483647) { text } }',
            "tailLines must be between 1 and 10000",
        ),
        (
            '{ podLogs(cluster: "east", namespace: "shop", pod: "x", sinceSeconds: -5) { text } }',
            "sinceSeconds must be at least 1",
        ),
    ],
)
async def test_sizes_and_cursors_out_of_range_are_bad_input(
    env: Env, query: str, expected: str
) -> None:
    body = await env.client.gql(query, expect_errors=True)
    assert [e["extensions"]["code"] for e in body["errors"]] == ["BAD_USER_INPUT"] * len(
        body["errors"]
    )
    assert expected in body["errors"][0]["message"]


@contextlib.asynccontextmanager
async def websocket(env: Env) -> AsyncIterator[Any]:
    """A graphql-transport-ws connection to the app served by uvicorn on a free port."""
    import socket

    import aiohttp
    import uvicorn

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(env.client.app, host="127.0.0.1", port=port, lifespan="off", log_config=None)
    )
    serving = asyncio.create_task(server.serve())
    try:
        await eventually(lambda: asyncio.sleep(0, server.started))
        async with (
            aiohttp.ClientSession() as session,
            session.ws_connect(
                f"ws://127.0.0.1:{port}/graphql",
                protocols=["graphql-transport-ws"],
                headers={"X-Forwarded-User": "alice"},
            ) as ws,
        ):
            await ws.send_json({"type": "connection_init"})
            assert (await ws.receive_json(timeout=5))["type"] == "connection_ack"
            yield ws
    finally:
        server.should_exit = True
        await serving


async def test_live_log_tail_over_graphql_transport_ws(env: Env) -> None:
    """A subscription through a real server: uvicorn, a websocket, graphql-transport-ws."""
    log = env.east.pod_log("shop", "checkout-abc", "first\n")
    async with websocket(env) as ws:
        await ws.send_json(
            {
                "id": "1",
                "type": "subscribe",
                "payload": {
                    "query": 'subscription { podLogTail(cluster: "east", namespace: "shop", pod: "checkout-abc") }'
                },
            }
        )
        first = await ws.receive_json(timeout=5)
        assert first == {
            "id": "1",
            "type": "next",
            "payload": {"data": {"podLogTail": "first"}},
        }
        log.write("second\n")
        second = await ws.receive_json(timeout=5)
        assert second["payload"]["data"]["podLogTail"] == "second"
        log.finish()
        done = await ws.receive_json(timeout=5)
        assert done == {"id": "1", "type": "complete"}
    follows = [r for r in env.east.requests if r.path.endswith("/log")]
    assert follows[-1].query.get("follow", "").lower() == "true"


def pod(name: str, app: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "shop", "labels": {"atrium.dev/pinapp": app}},
        "spec": {"containers": [{"name": "app", "image": "x"}]},
        "status": {"phase": "Running"},
    }


LOGS = """query($tail: Int!, $filter: String) {
  pinApp(cluster: "east", namespace: "shop", name: "checkout") {
    logs(tailLines: $tail, filter: $filter) { lines { time pod text } truncated podErrors { pod } } } }"""


async def test_a_workloads_log_merges_its_pods_by_time(env: Env) -> None:
    for name, app in (("checkout-a", "checkout"), ("checkout-b", "checkout"), ("other-x", "other")):
        await env.east.put("pods", "shop", pod(name, app))
    t0 = 1_790_000_000.0
    a = env.east.pod_log("shop", "checkout-a")
    b = env.east.pod_log("shop", "checkout-b")
    a.write("a1 started\n", at=t0)
    b.write("b1 ERROR timeout\n", at=t0 + 1.5)
    a.write("a2 error: refused\n", at=t0 + 2.25)
    b.write("b2 ok\n", at=t0 + 3.000000001)
    env.east.pod_log("shop", "other-x", "not mine\n")

    shown = (await env.client.gql(LOGS, {"tail": 3}))["data"]["pinApp"]["logs"]
    assert [(line["pod"], line["text"]) for line in shown["lines"]] == [
        ("checkout-b", "b1 ERROR timeout"),
        ("checkout-a", "a2 error: refused"),
        ("checkout-b", "b2 ok"),
    ]
    assert shown["lines"][0]["time"].startswith("2026-09-21T")
    assert shown["truncated"] and shown["podErrors"] == []
    reads = [r for r in env.east.requests if r.path.endswith("/log")]
    assert {r.path.split("/")[-2] for r in reads} == {"checkout-a", "checkout-b"}
    assert all(r.query.get("timestamps", "").lower() == "true" for r in reads)

    # A filter, in any case, over more of each pod's log than the tail.
    found = (await env.client.gql(LOGS, {"tail": 10, "filter": "ERROR"}))["data"]["pinApp"]
    assert [line["text"] for line in found["logs"]["lines"]] == [
        "b1 ERROR timeout",
        "a2 error: refused",
    ]
    assert found["logs"]["truncated"] is False

    # A pod whose log cannot be read is named; the others' lines are still there.
    await env.east.put("pods", "shop", pod("checkout-c", "checkout"))
    env.client.services.extras["pincompute"].settings.compute_pod_cache_seconds = 0
    partial = (await env.client.gql(LOGS, {"tail": 10}))["data"]["pinApp"]["logs"]
    assert partial["podErrors"] == [{"pod": "checkout-c"}], partial
    assert len(partial["lines"]) == 4
    # The API server's refusal is an error, not a log holding its Status object.
    gone = await env.client.gql(
        '{ podLogs(cluster: "east", namespace: "shop", pod: "gone") { text } }',
        expect_errors=True,
    )
    [error] = gone["errors"]
    assert error["extensions"]["code"] == "UNAVAILABLE" and "404" in error["message"], error

    for bad in ({"tail": 5001}, {"tail": 10, "filter": "x" * 201}):
        body = await env.client.gql(LOGS, bad, expect_errors=True)
        assert body["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"


async def test_following_a_workload_sends_its_merged_tail_then_every_pods_lines(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("plugins.pincompute.logs.POD_RESCAN", 0.2)
    env.client.services.extras["pincompute"].settings.compute_pod_cache_seconds = 0
    for name in ("checkout-a", "checkout-b"):
        await env.east.put("pods", "shop", pod(name, "checkout"))
    t0 = 1_790_000_000.0
    a = env.east.pod_log("shop", "checkout-a")
    b = env.east.pod_log("shop", "checkout-b")
    a.write("old\n", at=t0)
    b.write("b1\n", at=t0 + 2)
    a.write("a1\n", at=t0 + 1)
    query = """subscription { pinAppLogTail(cluster: "east", namespace: "shop", name: "checkout",
      tailLines: 2) { pod text } }"""
    async with websocket(env) as ws:
        await ws.send_json({"id": "1", "type": "subscribe", "payload": {"query": query}})

        async def line() -> tuple[str, str]:
            message = await ws.receive_json(timeout=5)
            assert message["type"] == "next", message
            got = message["payload"]["data"]["pinAppLogTail"]
            return got["pod"], got["text"]

        assert [await line(), await line()] == [("checkout-a", "a1"), ("checkout-b", "b1")]
        b.write("b2\n")
        assert await line() == ("checkout-b", "b2")
        a.write("a2\n")
        assert await line() == ("checkout-a", "a2")
        # A pod that starts later is followed too, from its first line: what it wrote
        # before the next look for pods is not lost.
        c = env.east.pod_log("shop", "checkout-c")
        await env.east.put("pods", "shop", pod("checkout-c", "checkout"))
        c.write("c1\n")
        assert await line() == ("checkout-c", "c1")
        c.write("c2\n")
        assert await line() == ("checkout-c", "c2")
    follows = {
        r.path.split("/")[-2]: r.query.get("tailLines")
        for r in env.east.requests
        if r.path.endswith("/log") and "follow" in r.query
    }
    # The first pods are followed from a backlog (what the merged tail held is not sent again),
    # the later one from its first line.
    overlap, buffer = str(FOLLOW_OVERLAP), str(FOLLOW_BUFFER)
    assert follows == {"checkout-a": overlap, "checkout-b": overlap, "checkout-c": buffer}


async def test_a_follow_that_connects_late_loses_no_line_and_repeats_none(
    env: Env, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines written after the merged tail was read but before a pod's follow connected (a
    loaded machine, a slow API server) still arrive, once."""
    compute = type(env.client.services.extras["pincompute"])
    connect = compute.follow_log
    written = asyncio.Event()

    async def late(self: Any, *args: Any, **kwargs: Any) -> AsyncIterator[str]:
        await written.wait()
        async for chunk in connect(self, *args, **kwargs):
            yield chunk

    monkeypatch.setattr(compute, "follow_log", late)
    await env.east.put("pods", "shop", pod("checkout-a", "checkout"))
    a = env.east.pod_log("shop", "checkout-a")
    a.write("a1\n")
    query = """subscription { pinAppLogTail(cluster: "east", namespace: "shop", name: "checkout",
      tailLines: 5) { pod text } }"""
    async with websocket(env) as ws:
        await ws.send_json({"id": "1", "type": "subscribe", "payload": {"query": query}})

        async def line() -> str:
            message = await ws.receive_json(timeout=5)
            assert message["type"] == "next", message
            return str(message["payload"]["data"]["pinAppLogTail"]["text"])

        assert await line() == "a1"
        a.write("a2\n")  # the follow has not connected yet
        a.write("a3\n")
        written.set()
        assert [await line(), await line()] == ["a2", "a3"]
        a.write("a4\n")
        assert await line() == "a4"


async def test_paging_walks_every_workload_once(env: Env) -> None:
    for i in range(5):
        await env.east.put(
            "pinapps", "shop", pinapp(f"extra-{i}", "component:checkout", replicas=1)
        )
    await eventually(lambda: _has(env, "east/shop/extra-4"))
    query = """query($after: String) { pinApps(first: 3, after: $after) {
        totalCount edges { cursor node { id } } pageInfo { hasNextPage endCursor } } }"""
    seen: list[str] = []
    after = None
    while True:
        page = (await env.client.gql(query, {"after": after}))["data"]["pinApps"]
        seen += [e["node"]["id"] for e in page["edges"]]
        if not page["pageInfo"]["hasNextPage"]:
            break
        after = page["pageInfo"]["endCursor"]
    assert len(seen) == len(set(seen)) == page["totalCount"] == 8
    scalers = (
        await env.client.gql(
            '{ pinScalers(filter: {cluster: ["east"]}) { totalCount nodes { targetName } } }'
        )
    )["data"]
    assert scalers["pinScalers"] == {"totalCount": 1, "nodes": [{"targetName": "checkout"}]}
