"""The demo's cluster (atrium serve --demo): PinApps for the demo's services in production and
staging, valid against the CRDs, watched by PinCompute like any cluster, and a controller that
moves their status when an owner scales one, with one pod crash-looping on purpose.
(tests/test_cli.py runs it under `atrium serve --demo` itself; tests/plugins/
test_deployments_demo.py checks that they run what the deploy history says.)"""

from __future__ import annotations

import asyncio
from pathlib import Path

from plugins.pincompute import PinComputePlugin
from plugins.pincompute.demo import CLUSTER, CRASH_LOOPING_SERVICE, demo_cluster, demo_workloads
from plugins.pincompute.settings import ComputeSettings
from plugins.pincompute.validation import validate_body
from sources.catalog.store import apply_batch
from tests.conftest import EXAMPLES, AppFactory, Client, demo_batch

APP = '{ pinApp(cluster: "demo (emulated)", namespace: "checkout", name: "checkout") { replicas readyReplicas pods { name } scaler { minReplicas } } }'
SCALE = 'mutation($r: Int) { scaleWorkload(cluster: "demo (emulated)", namespace: "checkout", name: "checkout", minReplicas: $r) { id } }'


def test_the_demo_workloads_are_valid_and_belong_to_the_demos_services() -> None:
    objects = demo_workloads(EXAMPLES)
    apps = [o for o in objects if o["kind"] == "PinApp"]
    assert len(apps) > 20 and any(o["kind"] == "PinScaler" for o in objects)
    for obj in objects:
        validate_body(obj["kind"], obj)
    refs = {a["metadata"]["annotations"]["atrium.dev/entity-ref"] for a in apps}
    assert "component:default/checkout" in refs
    # Each service runs in production (its system's namespace) and in staging beside it.
    where = {(a["metadata"]["name"], a["metadata"]["namespace"]) for a in apps}
    assert ("checkout", "checkout") in where and ("checkout", "checkout-staging") in where
    assert len(where) == 2 * len(refs)
    staging = [a for a in apps if a["metadata"]["namespace"].endswith("-staging")]
    assert len(staging) == len(refs) and all(a["spec"]["replicas"] == 1 for a in staging)
    scalers = [o for o in objects if o["kind"] == "PinScaler"]
    assert not any(s["metadata"]["namespace"].endswith("-staging") for s in scalers)
    crashing = [
        a["metadata"]["name"]
        for a in apps
        if "demo.atrium.dev/crash-looping-pods" in a["metadata"]["annotations"]
    ]
    assert crashing == [CRASH_LOOPING_SERVICE]


async def test_an_owner_scales_a_demo_workload_and_the_cluster_follows(
    make_client: AppFactory, tmp_path: Path
) -> None:
    with demo_cluster(EXAMPLES, tmp_path / "kubeconfig.yaml") as kubeconfig:
        compute = ComputeSettings(kubeconfig=kubeconfig, compute_pod_cache_seconds=0)
        client = await make_client(plugins=[PinComputePlugin(compute)])
        assert not (await apply_batch(client.services.db, demo_batch())).errors
        for _ in range(100):
            clusters = (await client.gql("{ clusters { name synced } }"))["data"]["clusters"]
            if clusters == [{"name": CLUSTER, "synced": True}]:
                break
            await asyncio.sleep(0.1)
        assert clusters == [{"name": CLUSTER, "synced": True}]

        refused = await client.gql(SCALE, {"r": 6}, user="marcus.johnson", expect_errors=True)
        assert refused["errors"][0]["extensions"]["code"] == "FORBIDDEN"
        await client.gql(SCALE, {"r": 6}, user="amelia.chen")  # checkout-team owns checkout
        for _ in range(150):
            app = (await client.gql(APP))["data"]["pinApp"]
            if app["readyReplicas"] == 6 and len(app["pods"]) == 6:
                break
            await asyncio.sleep(0.1)
        assert (app["replicas"], app["readyReplicas"], len(app["pods"])) == (6, 6, 6), app
        assert app["scaler"]["minReplicas"] == 6
        # The pods write as they run.
        pod = app["pods"][0]["name"]
        logs = '{ podLogs(cluster: "demo (emulated)", namespace: "checkout", pod: "%s") { text } }'
        first = (await client.gql(logs % pod))["data"]["podLogs"]["text"].splitlines()
        assert "started" in first[0], first
        for _ in range(150):
            later = (await client.gql(logs % pod))["data"]["podLogs"]["text"].splitlines()
            if len(later) > len(first):
                break
            await asyncio.sleep(0.1)
        assert len(later) > len(first), (first, later)

        await _crash_loop_shows(client)


async def _crash_loop_shows(client: Client) -> None:
    """One pod of a service crash-loops in production: not ready, restarted, said so (and its
    staging, like every other workload, is ready)."""
    query = """query($c: String!, $ns: String!, $n: String!) { pinApp(cluster: $c,
        namespace: $ns, name: $n) { readyReplicas desiredReplicas
        conditions { status reason message } pods { ready restarts }
        events { type reason message } } }"""
    variables = {"c": CLUSTER, "ns": "marketing", "n": CRASH_LOOPING_SERVICE}
    for _ in range(150):
        app = (await client.gql(query, variables))["data"]["pinApp"]
        broken = [p for p in app["pods"] if not p["ready"] and p["restarts"] > 0]
        if broken and app["readyReplicas"] == app["desiredReplicas"] - 1:
            break
        await asyncio.sleep(0.1)
    assert broken and app["readyReplicas"] == app["desiredReplicas"] - 1, app
    assert len(app["pods"]) == app["desiredReplicas"]
    [condition] = app["conditions"]
    assert condition["status"] == "False" and "CrashLoopBackOff" in condition["message"]
    [backoff] = [e for e in app["events"] if e["reason"] == "BackOff"]
    assert backoff["type"] == "Warning"
    assert backoff["message"].startswith("Back-off restarting failed container")
    logs = await client.gql(
        """query($c: String!, $ns: String!, $n: String!) { pinApp(cluster: $c, namespace: $ns,
        name: $n) { logs { lines { text } } } }""",
        variables,
    )
    texts = [line["text"] for line in logs["data"]["pinApp"]["logs"]["lines"]]
    assert any("MemoryError" in text for text in texts), texts
    staging = await client.gql(query, variables | {"ns": "marketing-staging"})
    app = staging["data"]["pinApp"]
    for _ in range(100):
        if app["readyReplicas"] == app["desiredReplicas"] == 1:
            break
        await asyncio.sleep(0.1)
        app = (await client.gql(query, variables | {"ns": "marketing-staging"}))["data"]["pinApp"]
    assert app["readyReplicas"] == app["desiredReplicas"] == 1, app
    assert not [e for e in app["events"] if e["reason"] == "BackOff"]
