"""Home's search and the catalog: suggestions as a person types (a misspelt word still finds
its service), a table whose filters, order and page are all in the address (Back returns to
the same page, a reload shows it again), people and teams under their own kinds; every question
asked by persisted GET."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from urllib.parse import parse_qs, urlsplit

from playwright.async_api import Browser, expect

from tests.console.browser import ConsolePage, console_page
from tests.console.demo import OWNER
from tests.console.server import Served
from tests.console.test_console_navigation import persisted_get
from tests.console.test_console_pages import ENTITY_PATH

SEARCH = re.compile("search", re.IGNORECASE)


async def test_the_header_search_suggests_as_a_person_types(
    browser: Browser, served: Served
) -> None:
    async with console_page(browser, served, user=OWNER) as page:
        await page.open("/")
        await expect(
            page.page.locator('#root a[href="/catalog/default/group/checkout-team"]').first
        ).to_be_visible()
        page.recorded.clear()
        box = page.page.get_by_role("banner").get_by_role("combobox", name=SEARCH)
        await box.fill("chekout")  # misspelt: trigram similarity finds it
        suggestion = page.page.get_by_role(
            "option", name=re.compile(r"component:default\/checkout$")
        )
        await expect(suggestion.first).to_be_visible()
        asked = page.recorded.graphql()
        assert asked, "suggestions came without asking /graphql"
        for request in asked:
            persisted_get(request)
        # The keyboard picks it too: down, Enter.
        await box.press("ArrowDown")
        await expect(box).to_have_attribute("aria-activedescendant", re.compile(r"-0$"))
        await suggestion.first.click()
        await expect(page.page).to_have_url(served.url(ENTITY_PATH))
        assert not page.recorded.errors, page.recorded.errors


async def rows(page: ConsolePage, until: Callable[[list[str]], bool] = bool) -> list[str]:
    """The entity links of the catalog's table, in order, once `until` holds of them (the
    table renders when its answer arrives)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 5
    while True:
        await page.quiet()
        hrefs: list[str] = await page.page.eval_on_selector_all(
            "#root main table tbody tr td:first-child a[href^='/catalog/']",
            "(links) => links.map((a) => a.getAttribute('href'))",
        )
        if until(hrefs) or loop.time() > deadline:
            return hrefs
        await asyncio.sleep(0.1)


def query(page: ConsolePage) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.page.url).query)


async def test_the_catalogs_filters_order_and_pages_live_in_the_address(
    browser: Browser, served: Served
) -> None:
    async with console_page(browser, served) as page:
        await page.open("/catalog")
        lead = page.page.locator("#root main .atrium-lead")
        await expect(lead).to_have_text(re.compile(r"^\d+ entities$"))
        everything = await rows(page)
        assert len(everything) == 25, everything
        # What teams build, not the people and teams themselves.
        assert not [h for h in everything if "/user/" in h or "/group/" in h], everything

        # A kind: the address says it, every row is one, the count follows.
        await page.page.get_by_label("Kind").select_option("component")
        await expect(page.page).to_have_url(re.compile(r"kind=component"))
        components = await rows(page, lambda found: all("/component/" in h for h in found))
        assert components and all("/component/" in h for h in components), components
        assert query(page)["kind"] == ["component"]

        # Sorted by owner, then the next page: each in the address.
        await page.page.locator("#root main thead").get_by_role("link", name="Owner").click()
        await expect(page.page).to_have_url(re.compile(r"sort=owner"))
        by_owner = await rows(page, lambda found: found != components)
        await page.page.get_by_role("link", name="Next page").click()
        await expect(page.page).to_have_url(re.compile(r"after="))
        await expect(
            page.page.locator("#root main table tbody tr td a").first
        ).not_to_have_attribute("href", by_owner[0])
        second = await rows(page)
        second_url = page.page.url
        assert second and not set(second) & set(by_owner), (by_owner, second)
        assert all("/component/" in h for h in second), second

        # Back: the first page by owner, as it was; Back again: by title.
        await page.page.go_back()
        await expect(page.page).not_to_have_url(re.compile(r"after="))
        await expect(page.page.locator("#root main table tbody tr td a").first).to_have_attribute(
            "href", by_owner[0]
        )
        await page.page.go_back()
        await expect(page.page).not_to_have_url(re.compile(r"sort="))
        assert await rows(page, lambda found: found == components) == components

        for request in page.recorded.graphql():
            persisted_get(request)
        assert not page.recorded.errors, page.recorded.errors
        # The second page's address, opened anew, shows it again (from the server).
        await page.open(second_url.removeprefix(served.base))
        assert await rows(page, lambda found: found == second) == second


async def test_people_are_under_their_own_kind(browser: Browser, served: Served) -> None:
    async with console_page(browser, served) as page:
        await page.open("/catalog?kind=user")
        people = await rows(page)
        assert people and all("/user/" in h for h in people), people
        await expect(page.page.locator("#root main h1")).to_have_text("Catalog")


async def test_mine_is_the_viewers_teams(browser: Browser, served: Served) -> None:
    async with console_page(browser, served, user=OWNER) as page:
        await page.open("/catalog?owner=mine")
        owners = await page.page.eval_on_selector_all(
            "#root main table tbody tr td:nth-child(3) a",
            "(links) => links.map((a) => a.getAttribute('href'))",
        )
        assert owners, "nothing owned by the viewer's teams"
        teams = {
            "/catalog/default/group/checkout-team",
            "/catalog/default/group/commerce-bu",
            "/catalog/default/group/payments-squad",
        }
        assert set(owners) <= teams, owners
        await expect(page.page.get_by_label("Owner")).to_have_value("mine")
