"""A PinApp's CPU, memory and alerts, with PinCompute's emulated cluster, a real Prometheus
(cAdvisor-shaped history backfilled with promtool) and a real Alertmanager: each pod's series,
none of a similarly named app's; requests and limits as numbers; the alerts about its pods or
about it, none of another namespace, cluster or app. Without PinCompute, the schema simply has
no PinApp, and the plugin still starts."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from plugins.observability import ObservabilityPlugin
from plugins.observability.fields import quantity
from plugins.observability.settings import ObservabilitySettings
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from tests.alertmanager import alertmanager
from tests.conftest import AppFactory, Client
from tests.kube import kubeconfig, start_clusters
from tests.plugins.test_pincompute import eventually, pinapp
from tests.prometheus import openmetrics, prometheus

POD_A, POD_B = "checkout-7d9f8-abc12", "checkout-7d9f8-xyz34"
QUERY = """{ pinApp(cluster: "east", namespace: "shop", name: "checkout") {
  metrics(since: 3600, step: 60) { name labels query points }
  resourceBounds { cpuRequest cpuLimit memoryRequest memoryLimit }
  alerts { name severity state labels } } }"""


@dataclass
class Env:
    client: Client
    queries: Any


@pytest.fixture
async def env(make_client: AppFactory, tmp_path: Path) -> AsyncIterator[Env]:
    now = int(time.time())
    times = list(range(now - 3600, now - 30, 15))
    series: dict[str, list[tuple[int, float]]] = {}
    for pod, cores, megabytes in ((POD_A, 0.25, 300), (POD_B, 0.5, 500)):
        for container in ("app", "sidecar"):
            labels = f'namespace="shop",pod="{pod}",container="{container}"'
            series[f"container_cpu_usage_seconds_total{{{labels}}}"] = [
                (t, cores / 2 * (t - times[0])) for t in times
            ]
            series[f"container_memory_working_set_bytes{{{labels}}}"] = [
                (t, megabytes / 2 * 1e6) for t in times
            ]
    # Another app whose name starts alike, the pod's cgroup total (container=""), another
    # namespace: none of them is checkout's.
    for labels in (
        'namespace="shop",pod="checkout-worker-5f5f5-aaaaa",container="app"',
        f'namespace="shop",pod="{POD_A}",container=""',
        f'namespace="other",pod="{POD_A}",container="app"',
    ):
        series[f"container_cpu_usage_seconds_total{{{labels}}}"] = [
            (t, 9.0 * (t - times[0])) for t in times
        ]
    with (
        prometheus(tmp_path / "prometheus", openmetrics(series)) as prom,
        alertmanager(tmp_path / "alertmanager") as am,
    ):
        am.fire(
            {"labels": {"alertname": "CrashLooping", "namespace": "shop", "pod": POD_A}},
            {"labels": {"alertname": "Replicas", "namespace": "shop", "deployment": "checkout"}},
            {
                "labels": {
                    "alertname": "Worker",
                    "namespace": "shop",
                    "pod": "checkout-worker-5f5f5-a",
                }
            },
            {"labels": {"alertname": "Elsewhere", "namespace": "other", "pinapp": "checkout"}},
            {
                "labels": {
                    "alertname": "West",
                    "namespace": "shop",
                    "pinapp": "checkout",
                    "cluster": "west",
                }
            },
        )
        async with start_clusters("east") as (east,):
            app = pinapp("checkout", "component:checkout")
            app["spec"]["resources"] = {
                "requests": {"cpu": "250m", "memory": "256Mi"},
                "limits": {"cpu": "1", "memory": "1Gi"},
            }
            await east.put("pinapps", "shop", app)
            path = tmp_path / "kubeconfig"
            path.write_text(yaml.safe_dump(kubeconfig(east)))
            compute = ComputeSettings(kubeconfig=str(path), compute_watch_timeout=2)
            observability = ObservabilitySettings(
                prometheus_url=prom.url, alertmanager_url=am.url, observability_timeout=2.0
            )
            client: Client = await make_client(
                plugins=[PinComputePlugin(compute), ObservabilityPlugin(observability)]
            )

            async def synced() -> bool:
                body = await client.gql(
                    '{ pinApp(cluster: "east", namespace: "shop", name: "checkout") { name } }'
                )
                return body["data"]["pinApp"] is not None

            await eventually(synced)
            yield Env(client, prom.queries)


async def test_a_pinapps_cpu_memory_and_alerts(env: Env) -> None:
    app = (await env.client.gql(QUERY))["data"]["pinApp"]
    by_pod: dict[tuple[str, str], list[Any]] = {
        (s["name"], s["labels"]["pod"]): s["points"] for s in app["metrics"]
    }
    assert set(by_pod) == {(n, p) for n in ("cpu", "memory") for p in (POD_A, POD_B)}
    settled = time.time() - 600
    for pod, cores, megabytes in ((POD_A, 0.25, 300), (POD_B, 0.5, 500)):
        cpu = [v for t, v in by_pod["cpu", pod] if t > settled - 2400 and t < settled]
        assert cpu and all(v == pytest.approx(cores, rel=0.02) for v in cpu), cpu
        memory = [v for t, v in by_pod["memory", pod] if t < settled]
        assert memory and all(v == pytest.approx(megabytes * 1e6) for v in memory)
    cpu_query = next(s["query"] for s in app["metrics"] if s["name"] == "cpu")
    assert cpu_query == (
        "sum by (pod) (rate(container_cpu_usage_seconds_total"
        '{namespace="shop",pod=~"checkout-[a-z0-9]+-[a-z0-9]+",container!=""}[5m]))'
    )

    assert app["resourceBounds"] == {
        "cpuRequest": 0.25,
        "cpuLimit": 1.0,
        "memoryRequest": 256 * 2**20,
        "memoryLimit": 2**30,
    }
    assert sorted(a["name"] for a in app["alerts"]) == ["CrashLooping", "Replicas"]

    # One series by name; an unknown name is the client's mistake, said with the list.
    one = await env.client.gql(
        """{ pinApp(cluster: "east", namespace: "shop", name: "checkout") {
        metrics(names: ["memory"]) { name } } }"""
    )
    assert {s["name"] for s in one["data"]["pinApp"]["metrics"]} == {"memory"}
    bad = await env.client.gql(
        """{ pinApp(cluster: "east", namespace: "shop", name: "checkout") {
        metrics(names: ["cpu", "disk"]) { name } } }""",
        expect_errors=True,
    )
    assert bad["errors"][0]["extensions"]["code"] == "BAD_USER_INPUT"
    assert "no series disk; there are cpu, memory" in bad["errors"][0]["message"]


async def test_without_pincompute_there_is_no_pinapp_and_the_plugin_starts(
    make_client: AppFactory,
) -> None:
    client = await make_client(plugins=[ObservabilityPlugin(ObservabilitySettings())])
    body = await client.gql('{ __type(name: "PinApp") { name } }')
    assert body["data"]["__type"] is None


def test_kubernetes_quantities() -> None:
    assert [quantity(v) for v in ("250m", "2", "1.5", "512Mi", "1G", "1e3", 3)] == [
        0.25,
        2.0,
        1.5,
        512 * 2**20,
        1e9,
        1000.0,
        3.0,
    ]
    assert [quantity(v) for v in (None, "", "lots", "5Q", "1.2.3")] == [None] * 5
