"""One Chromium and one `atrium serve` (development mode, the demo organisation, an emulated
cluster) for every console test; production mode has a server of its own (test_production)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, async_playwright

from tests.console.demo import CHROMIUM, CLUSTER, SCALED, pinapp
from tests.console.server import Served, atrium_serve, demo_database
from tests.kube import Cluster, start_cluster


@pytest.fixture(scope="session")
async def cluster() -> AsyncIterator[Cluster]:
    async with start_cluster(CLUSTER) as east:
        await east.put(
            "pinapps", "shop", pinapp("checkout", "shop", "component:default/checkout", 3)
        )
        namespace, name = SCALED
        await east.put(
            "pinapps", namespace, pinapp(name, namespace, "component:default/cart-service", 2)
        )
        yield east


@pytest.fixture(scope="session")
async def served(pg_admin_url: str, template_db: str, cluster: Cluster) -> AsyncIterator[Served]:
    async with (
        demo_database(pg_admin_url, template_db) as url,
        atrium_serve(url, (cluster,)) as server,
    ):
        yield server


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM)
        try:
            yield chromium
        finally:
            await chromium.close()
