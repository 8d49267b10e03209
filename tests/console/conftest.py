"""One Chromium and one `atrium serve` (development mode, the demo organisation, an emulated
cluster) for every console test; production mode has a server of its own (test_production)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator

import pytest
from playwright.async_api import Browser, async_playwright

from tests.alertmanager import alertmanager
from tests.console.demo import ALERTS, CHROMIUM, CLUSTER, SCALED, pinapp
from tests.console.server import Served, atrium_serve, demo_database
from tests.kube import Cluster, start_cluster
from tests.prometheus import openmetrics, prometheus


@pytest.fixture(scope="session")
async def cluster() -> AsyncIterator[Cluster]:
    async with start_cluster(CLUSTER, own_process=True) as east:
        await east.put(
            "pinapps", "shop", pinapp("checkout", "shop", "component:default/checkout", 3)
        )
        namespace, name = SCALED
        await east.put(
            "pinapps", namespace, pinapp(name, namespace, "component:default/cart-service", 2)
        )
        yield east


@pytest.fixture(scope="session")
def observability(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[str, str]]:
    """A real Prometheus (an hour of cart-service's requests and its pods' CPU and memory) and
    a real Alertmanager (an alert on cart-service, one on checkout), for every console page."""
    root = tmp_path_factory.mktemp("observability")
    now = int(time.time())
    times = list(range(now - 3600, now - 30, 15))
    series: dict[str, list[tuple[int, float]]] = {
        f'http_requests_total{{service="cart-service",code="{code}"}}': [
            (t, per_second * (t - times[0])) for t in times
        ]
        for code, per_second in (("200", 10.0), ("500", 1.0))
    }
    series[
        'container_cpu_usage_seconds_total{namespace="shop",pod="cart-service-5d8f7-k2x9q",container="app"}'
    ] = [(t, 0.2 * (t - times[0])) for t in times]
    series[
        'container_memory_working_set_bytes{namespace="shop",pod="cart-service-5d8f7-k2x9q",container="app"}'
    ] = [(t, 300e6) for t in times]
    with (
        prometheus(root / "prometheus", openmetrics(series)) as prom,
        alertmanager(root / "alertmanager") as am,
    ):
        am.fire(*ALERTS)
        yield {"ATRIUM_PROMETHEUS_URL": prom.url, "ATRIUM_ALERTMANAGER_URL": am.url}


@pytest.fixture(scope="session")
async def served(
    pg_admin_url: str, template_db: str, cluster: Cluster, observability: dict[str, str]
) -> AsyncIterator[Served]:
    async with (
        demo_database(pg_admin_url, template_db) as url,
        atrium_serve(url, (cluster,), extra=observability) as server,
    ):
        yield server
        # The emulated cluster runs on a loop of its own and no test takes it down: the
        # server's informers never lost it, whatever the tests' own loop was doing.
        lost = [line for line in server.log_text().splitlines() if "informer failed" in line]
        assert not lost, "the server lost the emulated cluster:\n" + "\n".join(lost[:20])


@pytest.fixture(scope="session")
async def browser() -> AsyncIterator[Browser]:
    async with async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=CHROMIUM)
        try:
            yield chromium
        finally:
            await chromium.close()
