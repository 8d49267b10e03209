"""The observability and PinCompute parts of Viewer.attention: alerts firing on a team's
components in a real Alertmanager (one call a request, silenced ones left out, nothing and
no error when it is down or not configured), and PinApps short of ready replicas in an
emulated cluster, read from the informers' stores without a call to the cluster."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from plugins.observability import ObservabilityPlugin
from plugins.observability.alertmanager import Alertmanager, Matcher
from plugins.observability.settings import ObservabilitySettings
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.settings import ComputeSettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.alertmanager import RunningAlertmanager, alertmanager
from tests.conftest import AppFactory, Client
from tests.kube import kubeconfig, start_clusters

ORG = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {name: team-a}
spec: {type: team, members: [alice]}
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
metadata:
  name: ledger
  annotations: {atrium.dev/alert-selector: 'app="ledger-api", env=~"prod|canary"'}
spec: {type: service, lifecycle: production, owner: team-a}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {name: search}
spec: {type: service, lifecycle: production, owner: team-b}
"""
QUERY = """{ viewer { attention { entity { ref } level title detail since href source } } }"""


async def attention(client: Client, user: str) -> list[dict[str, Any]]:
    body = await client.gql(QUERY, user=user)
    return body["data"]["viewer"]["attention"]  # type: ignore[no-any-return]


async def eventually(check: Callable[[], Awaitable[bool]], within: float = 10.0) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not await check():
        assert asyncio.get_running_loop().time() < deadline, "condition not reached in time"
        await asyncio.sleep(0.05)


class CountingAlertmanager(Alertmanager):
    """The plugin's own client, counting the alert lists it asks for."""

    calls = 0

    async def alerts(self, matchers: list[Matcher] | None = None) -> list[dict[str, Any]]:
        self.calls += 1
        return await super().alerts(matchers)


@pytest.fixture
async def alerts_env(
    make_client: AppFactory, tmp_path: Path
) -> AsyncIterator[tuple[Client, RunningAlertmanager, CountingAlertmanager]]:
    with alertmanager(tmp_path / "alertmanager") as am:
        am.fire(
            {
                "labels": {"alertname": "HighErrorRate", "service": "checkout", "severity": "page"},
                "annotations": {
                    "summary": "5% of checkouts fail",
                    "description": "Errors rose after the 14:02 deploy.",
                },
            },
            {"labels": {"alertname": "SlowP99", "service": "checkout", "severity": "ticket"}},
            {"labels": {"alertname": "LedgerLag", "app": "ledger-api", "env": "prod"}},
            {"labels": {"alertname": "LedgerLag", "app": "ledger-api", "env": "staging"}},
            {"labels": {"alertname": "IndexStale", "service": "search", "severity": "critical"}},
        )
        settings = ObservabilitySettings(alertmanager_url=am.url, observability_timeout=2.0)
        client: Client = await make_client(plugins=[ObservabilityPlugin(settings)])
        assert not (await apply_batch(client.services.db, parse_documents(ORG, "o.yaml"))).errors
        observability = client.services.extras["observability"]
        counting = CountingAlertmanager(am.url, observability.alertmanager.http, 2.0)
        observability.alertmanager = counting
        yield client, am, counting


async def test_alerts_firing_on_a_teams_components(
    alerts_env: tuple[Client, RunningAlertmanager, CountingAlertmanager],
) -> None:
    client, am, counting = alerts_env
    # SlowP99 is silenced: suppressed, not firing at anyone.
    now = datetime.now(UTC)
    silence = {
        "matchers": [{"name": "alertname", "value": "SlowP99", "isRegex": False}],
        "startsAt": now.isoformat(),
        "endsAt": (now + timedelta(hours=1)).isoformat(),
        "createdBy": "tests",
        "comment": "known",
    }
    async with httpx.AsyncClient() as http:
        assert (await http.post(f"{am.url}/api/v2/silences", json=silence)).status_code == 200

    async def silenced() -> bool:
        return all("SlowP99" not in a["title"] for a in await attention(client, "alice"))

    await eventually(silenced)
    before = counting.calls
    found = await attention(client, "alice")
    assert counting.calls == before + 1  # one call for both components
    assert [(a["entity"]["ref"], a["level"], a["title"]) for a in found] == [
        ("component:default/checkout", "CRITICAL", "HighErrorRate: 5% of checkouts fail"),
        ("component:default/ledger", "WARNING", "LedgerLag"),
    ]
    high = found[0]
    assert high["detail"] == "Errors rose after the 14:02 deploy."
    assert high["href"] == "/catalog/default/component/checkout#alerts"
    assert high["source"] == "observability"
    started = datetime.fromisoformat(high["since"])
    assert timedelta(minutes=4) < now - started < timedelta(minutes=6)  # fired 5 minutes ago
    [search] = await attention(client, "mallory")
    assert (search["level"], search["title"]) == ("CRITICAL", "IndexStale")


async def test_alertmanager_down_or_unconfigured_is_nothing_and_no_error(
    alerts_env: tuple[Client, RunningAlertmanager, CountingAlertmanager],
    make_client: AppFactory,
    caplog: pytest.LogCaptureFixture,
) -> None:
    client, am, _ = alerts_env
    assert await attention(client, "alice")
    am.stop()
    with caplog.at_level(logging.WARNING):
        assert await attention(client, "alice") == []
    said = [r for r in caplog.records if r.name.startswith("atrium.")]
    assert [(r.name, r.getMessage()) for r in said] == [
        ("atrium.observability", "alerts left out of attention")
    ]
    assert getattr(said[0], "error", "").startswith("alertmanager: cannot reach it")
    caplog.clear()
    unconfigured: Client = await make_client(plugins=[ObservabilityPlugin(ObservabilitySettings())])
    with caplog.at_level(logging.WARNING):
        assert await attention(unconfigured, "alice") == []
    assert not [r for r in caplog.records if r.name in ("atrium.observability", "atrium.attention")]


def pinapp(name: str, entity: str, desired: int, ready: int, **status: Any) -> dict[str, Any]:
    return {
        "apiVersion": "compute.atrium.dev/v1",
        "kind": "PinApp",
        "metadata": {
            "name": name,
            "namespace": "shop",
            "annotations": {"atrium.dev/entity-ref": entity},
        },
        "spec": {"image": f"registry.example/{name}:1.0", "replicas": desired},
        "status": {"replicas": desired, "readyReplicas": ready, **status},
    }


async def test_workloads_short_of_ready_replicas(make_client: AppFactory, tmp_path: Path) -> None:
    broken = {
        "type": "Available",
        "status": "False",
        "reason": "MinimumReplicasUnavailable",
        "message": "1 of 1 pods crash-looping (CrashLoopBackOff)",
        "lastTransitionTime": "2026-11-20T10:00:00Z",
    }
    async with start_clusters("east") as (east,):
        await east.put("pinapps", "shop", pinapp("checkout", "component:checkout", 3, 2))
        await east.put(
            "pinapps",
            "shop",
            pinapp("checkout-canary", "component:default/checkout", 1, 0, conditions=[broken]),
        )
        await east.put("pinapps", "shop", pinapp("ledger", "component:ledger", 2, 2))
        await east.put("pinapps", "shop", pinapp("search", "component:search", 2, 0))
        path = tmp_path / "kubeconfig"
        path.write_text(yaml.safe_dump(kubeconfig(east)))
        # Watches long enough that nothing but this test's query could talk to the cluster.
        settings = ComputeSettings(kubeconfig=str(path), compute_watch_timeout=300)
        client: Client = await make_client(plugins=[PinComputePlugin(settings)])
        assert not (await apply_batch(client.services.db, parse_documents(ORG, "o.yaml"))).errors

        async def synced() -> bool:
            body = await client.gql("{ clusters { synced } }")
            return all(c["synced"] for c in body["data"]["clusters"])

        await eventually(synced)
        # Listed, then watching: from here on the informers send nothing more.
        await east.wait_for_watches("pinapps")
        await east.wait_for_watches("pinscalers")
        sent = len(east.requests)
        found = await attention(client, "alice")
        assert len(east.requests) == sent  # the stores answered, not the cluster
        assert [(a["level"], a["title"]) for a in found] == [
            ("CRITICAL", "checkout-canary in shop on east: 0 of 1 replicas ready"),
            ("WARNING", "checkout in shop on east: 2 of 3 replicas ready"),
        ]
        canary = found[0]
        assert canary["entity"] == {"ref": "component:default/checkout"}
        assert canary["detail"] == "1 of 1 pods crash-looping (CrashLoopBackOff)"
        assert canary["since"].startswith("2026-11-20T10:00:00")
        assert canary["href"] == "/workloads/east/shop/checkout-canary"
        assert canary["source"] == "pincompute"
        assert found[1]["since"] is None and found[1]["detail"] is None
        # Ready again: nothing to say.
        await east.modify("pinapps", "shop", "checkout", {"status": {"readyReplicas": 3}})

        async def recovered() -> bool:
            return len(await attention(client, "alice")) == 1

        await eventually(recovered)
        [search] = await attention(client, "mallory")
        assert search["level"] == "CRITICAL"
