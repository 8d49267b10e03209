"""Prefetch and partial failure: pointing at a link to a team fetches its page's data (and its
route chunk) before the click, so the click asks nothing; a cluster that stops answering marks
its workloads on the entity page, and the rest of the page is shown as ever."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from playwright.async_api import Browser, expect

from tests.console.browser import console_page, describe
from tests.console.demo import COMPONENT, pinapp
from tests.console.server import Served, atrium_serve, demo_database
from tests.console.test_console_navigation import build, persisted_get
from tests.console.test_console_pages import ENTITY_PATH, TEAM_PATH
from tests.kube import Cluster, start_cluster


async def test_pointing_at_a_team_link_fetches_its_page_before_the_click(
    browser: Browser, served: Served
) -> None:
    chunk, _ = build()
    async with console_page(browser, served) as page:
        await page.open(ENTITY_PATH)
        page.recorded.clear()
        link = page.page.locator(f'#root a[href="{TEAM_PATH}"]').first
        await link.hover()
        await page.quiet()
        asked = [persisted_get(r)["operationName"] for r in page.recorded.graphql()]
        assert "TeamPage" in asked, [describe(r) for r in page.recorded.graphql()]
        assert chunk in page.recorded.assets(), page.recorded.assets()
        page.recorded.clear()
        await link.click()
        await expect(page.page.locator("#root main h1")).to_have_text("Checkout")
        asked = [persisted_get(r)["operationName"] for r in page.recorded.graphql()]
        assert "TeamPage" not in asked, f"the click asked again: {asked}"
        assert not page.recorded.errors, page.recorded.errors


@pytest.fixture(scope="module")
async def outage(pg_admin_url: str, template_db: str) -> AsyncIterator[tuple[Served, Cluster]]:
    async with start_cluster("west", own_process=True) as west:
        await west.put(
            "pinapps", "shop", pinapp(COMPONENT, "shop", f"component:default/{COMPONENT}", 2)
        )
        async with (
            demo_database(pg_admin_url, template_db) as url,
            atrium_serve(url, (west,)) as server,
        ):
            yield server, west


async def test_a_cluster_that_stops_answering_marks_its_workloads_not_the_page(
    browser: Browser, outage: tuple[Served, Cluster]
) -> None:
    served, west = outage
    await west.stop()
    try:
        for _ in range(100):  # until the informers notice
            clusters = (await served.gql("{ clusters { name healthy } }"))["data"]["clusters"]
            if clusters == [{"name": "west", "healthy": False}]:
                break
            await asyncio.sleep(0.1)
        assert clusters == [{"name": "west", "healthy": False}]
        async with console_page(browser, served) as page:
            await page.open(ENTITY_PATH)
            main = page.page.locator("#root main")
            await expect(main.locator("h1")).to_have_text("Checkout Service")
            workloads = main.locator("section#workloads")
            await expect(workloads).to_contain_text("cluster unavailable")
            await expect(
                workloads.locator(f'a[href="/workloads/west/shop/{COMPONENT}"]')
            ).to_be_visible()
            # The rest of the page as ever: its owner and dependencies.
            await expect(main.locator(f'a[href="{TEAM_PATH}"]').first).to_be_visible()
            dependencies = main.locator(".atrium-card", has_text="Dependencies")
            await expect(dependencies.locator("li").first).to_be_visible()
    finally:
        await west.resume()
