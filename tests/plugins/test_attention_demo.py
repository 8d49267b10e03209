"""What the demo (`atrium serve --demo`) points at on purpose, as the console's home asks
it: checkout's 1.38.0 failed in staging for amelia.chen of the checkout team, payments-gateway's
failed production deploy for her payments squad, search-service's waiting release, and the
crash-looping recommendations-service for its team."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.demo import seed_history
from plugins.deployments.settings import DeploymentSettings
from plugins.pincompute import PinComputePlugin
from plugins.pincompute.demo import CLUSTER, CRASH_LOOPING_SERVICE, demo_cluster
from plugins.pincompute.settings import ComputeSettings
from sources.catalog.store import apply_batch
from tests.conftest import EXAMPLES, AppFactory, Client, demo_batch

VIEWER = """{ viewer { attention(first: 100) {
  entity { ref } level title detail since href source } } }"""
GROUP = """query($ref: String!) { entity(ref: $ref) { ... on Group { attention(first: 100) {
  entity { ref } level title detail href source } } } }"""


async def group(client: Client, ref: str) -> list[dict[str, Any]]:
    body = await client.gql(GROUP, {"ref": ref})
    return body["data"]["entity"]["attention"]  # type: ignore[no-any-return]


async def test_amelia_chen_sees_checkouts_failed_staging_deploy(
    make_client: AppFactory,
) -> None:
    client = await make_client(plugins=[DeploymentsPlugin(DeploymentSettings())])
    assert not (await apply_batch(client.services.db, demo_batch())).errors
    await seed_history(client.services)

    found = (await client.gql(VIEWER, user="amelia.chen"))["data"]["viewer"]["attention"]
    by_ref = {(a["entity"]["ref"], a["title"]): a for a in found}
    checkout = by_ref["component:default/checkout", "Deploy of 1.38.0 to staging failed"]
    assert checkout["level"] == "WARNING" and checkout["source"] == "deployments"
    assert "integration tests failed" in checkout["detail"]
    assert checkout["href"] == "/catalog/default/component/checkout#deployments"
    # She is in the payments squad too: its gateway failed in production, which comes first.
    gateway = found[0]
    assert gateway["entity"]["ref"] == "component:default/payments-gateway"
    assert gateway["level"] == "CRITICAL" and gateway["title"].endswith(" to production failed")
    assert "readiness probe failed" in gateway["detail"]
    # The failed release is said once, as failed, not also as waiting.
    assert not [a for a in found if "waits for" in a["title"]]
    # The search squad's release waits for production.
    [search] = await group(client, "group:search-squad")
    assert search["level"] == "NOTICE" and search["title"].endswith(" waits for production")
    assert search["entity"]["ref"] == "component:default/search-service"


async def test_the_crash_looping_service_needs_its_team(
    make_client: AppFactory, tmp_path: Path
) -> None:
    with demo_cluster(EXAMPLES, tmp_path / "kubeconfig.yaml") as kubeconfig:
        client = await make_client(
            plugins=[PinComputePlugin(ComputeSettings(kubeconfig=kubeconfig))],
        )
        assert not (await apply_batch(client.services.db, demo_batch())).errors
        owner = await client.services.db.fetchval(
            "select owner_ref from entities where ref = $1",
            f"component:default/{CRASH_LOOPING_SERVICE}",
        )
        deadline = asyncio.get_running_loop().time() + 60
        while True:
            found = [
                a
                for a in await group(client, owner)
                if a["entity"]["ref"] == f"component:default/{CRASH_LOOPING_SERVICE}"
            ]
            # Once its pods have started (one a second), one of them never becomes ready.
            if found and "crash-looping" in (found[0]["detail"] or ""):
                break
            assert asyncio.get_running_loop().time() < deadline, found
            await asyncio.sleep(0.5)
        [crashing] = found
        assert crashing["level"] == "WARNING" and crashing["source"] == "pincompute"
        assert crashing["title"].startswith(f"{CRASH_LOOPING_SERVICE} in ")
        assert crashing["href"].startswith("/workloads/demo%20%28emulated%29/")
        assert CLUSTER in crashing["title"]
