"""The observability panels in Chromium, against the real Prometheus and Alertmanager the
console's server is given: a component's alerts and latest figures come with the page (no
/graphql request), its charts draw; an owner silences an alert and sees it suppressed, then
expires the silence and sees it active again; anyone else has no silence form; the team page
shows the team's alerts and its services' error ratios; a PinApp's page draws its CPU and
memory against its request and limit."""

from __future__ import annotations

import re

from playwright.async_api import Browser, expect

from tests.console.browser import console_page, describe
from tests.console.demo import CLUSTER, NOT_OWNER, OWNER, SCALED, TEAM
from tests.console.server import Served

PAGE = "/catalog/default/component/cart-service"


async def test_an_owner_sees_alerts_and_metrics_and_silences_an_alert(
    browser: Browser, served: Served
) -> None:
    async with console_page(browser, served, user=OWNER) as page:
        await page.open(PAGE)
        alerts = page.page.locator("#root section#alerts")
        await expect(alerts).to_contain_text("CartErrors")
        await expect(alerts).to_contain_text("9% of cart updates fail")
        await expect(alerts).not_to_contain_text("SearchSlow")
        metrics = page.page.locator("#root section#metrics")
        # The latest figures (how near 11/s and 1 in 11 depends on where the history ends).
        await expect(metrics.locator(".atrium-card").first).to_contain_text(
            re.compile(r"\d+\.\d\d/s")
        )
        await expect(metrics.locator(".atrium-card").nth(1)).to_contain_text(
            re.compile(r"\d\.\d\d%")
        )
        assert not page.recorded.graphql(), [describe(r) for r in page.recorded.graphql()]
        # The charts draw once their chunk has loaded: requests, errors, latency.
        await expect(metrics.locator("canvas")).to_have_count(3)

        # Another range asks Prometheus for it.
        await metrics.get_by_role("tab", name="24 h").click()
        await expect(metrics.get_by_role("tab", name="24 h")).to_have_attribute(
            "aria-selected", "true"
        )
        await page.quiet()
        assert any("EntityMetrics" in describe(r) for r in page.recorded.graphql())

        # Silencing asks first, saying what goes quiet and for how long.
        await alerts.get_by_role("button", name="Silence…").click()
        dialog = page.page.get_by_role("alertdialog")
        await expect(dialog).to_contain_text("Nobody is notified of every alert of cart-service")
        await dialog.get_by_label("Alert").select_option("CartErrors")
        await expect(dialog).to_contain_text(
            "Nobody is notified of CartErrors on cart-service for 1 hour."
        )
        await dialog.get_by_label("Why").fill("rolling back the bad build")
        await dialog.get_by_role("button", name="Silence", exact=True).click()
        await expect(alerts.get_by_role("status").first).to_have_text(
            "Silenced CartErrors on cart-service for 1 hour."
        )
        await expect(alerts).to_contain_text("CartErrors (silenced)", timeout=15_000)
        await alerts.get_by_role("button", name="Expire silence…").click()
        await expect(page.page.get_by_role("alertdialog")).to_contain_text(
            "CartErrors notifies again"
        )
        await page.page.get_by_role("alertdialog").get_by_role("button", name="Expire").click()
        await expect(alerts.get_by_role("status").first).to_contain_text(
            "The silence of CartErrors is over"
        )
        await expect(alerts).not_to_contain_text("(silenced)", timeout=15_000)
        assert not page.recorded.errors, page.recorded.errors


async def test_others_see_alerts_without_a_silence_button(browser: Browser, served: Served) -> None:
    async with console_page(browser, served, user=NOT_OWNER) as page:
        await page.open(PAGE)
        alerts = page.page.locator("#root section#alerts")
        await expect(alerts).to_contain_text("CartErrors")
        await expect(alerts.get_by_role("button", name="Silence…")).to_have_count(0)
    async with console_page(browser, served, user=NOT_OWNER, javascript=False) as page:
        await page.open(PAGE, rendered=False)
        html = await page.page.inner_text("#root")
        assert "CartErrors" in html and re.search(r"\d+\.\d\d/s", html), html


async def test_the_team_page_shows_its_alerts_and_error_ratios(
    browser: Browser, served: Served
) -> None:
    async with console_page(browser, served, user=OWNER) as page:
        await page.open(f"/teams/{TEAM}")
        alerts = page.page.locator("#root section#alerts")
        await expect(alerts).to_contain_text("CartErrors")
        await expect(alerts).not_to_contain_text("SearchSlow")
        assert not page.recorded.graphql(), [describe(r) for r in page.recorded.graphql()]
        ratios = page.page.locator("#root section#error-ratios")
        await expect(ratios.locator("canvas")).to_have_count(1)
        await expect(ratios).to_contain_text("cart-service")  # the chart's legend


async def test_a_pinapps_page_draws_cpu_and_memory(browser: Browser, served: Served) -> None:
    namespace, name = SCALED
    async with console_page(browser, served, user=OWNER) as page:
        await page.open(f"/workloads/{CLUSTER}/{namespace}/{name}")
        usage = page.page.locator("#root section#metrics")
        await expect(usage.locator("canvas")).to_have_count(2)
        await expect(usage).to_contain_text("cart-service-5d8f7-k2x9q")
        await expect(usage).to_contain_text("request")
        logs = page.page.locator("#root section#logs")
        await expect(logs).to_be_visible()
        assert not page.recorded.errors, page.recorded.errors
