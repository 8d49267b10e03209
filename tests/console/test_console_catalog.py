"""Home and catalog: search suggestions (a misspelt word still finds its service), facets that
filter, and a paged list; every question asked by persisted GET."""

from __future__ import annotations

import re

from playwright.async_api import Browser, Locator, expect

from tests.console.browser import ConsolePage, console_page
from tests.console.demo import OWNER, TEAM
from tests.console.server import Served
from tests.console.test_console_navigation import persisted_get
from tests.console.test_console_pages import ENTITY_PATH

SEARCH = re.compile("search", re.IGNORECASE)


def search_box(page: ConsolePage) -> Locator:
    return (
        page.page.locator("#root main")
        .get_by_role("searchbox", name=SEARCH)
        .or_(page.page.locator("#root main").get_by_role("combobox", name=SEARCH))
    )


async def test_home_shows_the_viewers_teams_and_suggests_as_they_type(
    browser: Browser, served: Served
) -> None:
    async with console_page(browser, served, user=OWNER) as page:
        await page.open("/")
        await expect(
            page.page.locator(f'#root a[href="/catalog/default/group/{TEAM}"]').first
        ).to_be_visible()
        page.recorded.clear()
        await search_box(page).first.fill("chekout")  # misspelt: trigram similarity finds it
        suggestion = page.page.get_by_role(
            "option", name=re.compile(r"component:default\/checkout$")
        )
        await expect(suggestion.first).to_be_visible()
        asked = page.recorded.graphql()
        assert asked, "suggestions came without asking /graphql"
        for request in asked:
            persisted_get(request)
        await suggestion.first.click()
        await expect(page.page).to_have_url(served.url(ENTITY_PATH))
        assert not page.recorded.errors, page.recorded.errors


async def rows(page: ConsolePage) -> list[str]:
    """The entity links of the catalog's list, in order."""
    hrefs: list[str] = await page.page.eval_on_selector_all(
        "#root main section li a[href^='/catalog/']",
        "(links) => links.map((a) => a.getAttribute('href'))",
    )
    return hrefs


async def test_catalog_facets_filter_and_pages_page(browser: Browser, served: Served) -> None:
    async with console_page(browser, served) as page:
        await page.open("/catalog")
        results = page.page.locator("#results")
        await expect(results).to_have_text(re.compile(r"^\d+ entities$"))
        first_page = await rows(page)
        assert len(first_page) >= 10, first_page
        # A facet: the kind Component, with its count; checked, the list holds that many.
        facet = page.page.get_by_role("checkbox", name=re.compile(r"^Component \(\d+\)$"))
        label = await page.page.locator(
            f"label[for='{await facet.get_attribute('id')}']"
        ).inner_text()
        count = int(re.findall(r"\((\d+)\)", label)[0])
        page.recorded.clear()
        await facet.check()
        await expect(results).to_have_text(f"{count} entities")
        assert "kind=Component" in page.page.url, page.page.url
        filtered = await rows(page)
        assert filtered and all("/component/" in href for href in filtered), filtered
        # The next page: more components, none of the first page's.
        await page.page.get_by_role("button", name="Next").click()
        await expect(page.page.locator("#root main section li a").first).not_to_have_attribute(
            "href", filtered[0]
        )
        second = await rows(page)
        assert all("/component/" in href for href in second), second
        assert second and not set(second) & set(filtered), (filtered, second)
        assert page.recorded.graphql(), "filtering and paging asked nothing"
        for request in page.recorded.graphql():
            persisted_get(request)
        assert not page.recorded.errors, page.recorded.errors
