"""The server-rendered pages (entity, team): their data is in the page, so loading them asks
/graphql nothing; React renders the same things from it; without JavaScript the server's HTML
shows them alone."""

from __future__ import annotations

import asyncio
import json

import pytest
from playwright.async_api import Browser

from tests.console.browser import ConsolePage, console_page, describe
from tests.console.demo import CLUSTER, COMPONENT, TEAM
from tests.console.server import Served

ENTITY_PATH = f"/catalog/default/component/{COMPONENT}"
TEAM_PATH = f"/catalog/default/group/{TEAM}"

# What each page must show, as links to the entities' pages (Backstage's URLs).
ENTITY_SHOWS = {
    "owner": [TEAM_PATH],
    "dependencies": [
        "/catalog/default/component/cart-service",
        "/catalog/default/component/order-service",
        "/catalog/default/component/payments-gateway",
        "/catalog/default/resource/checkout-cache",
    ],
    "system": ["/catalog/default/system/checkout"],
    "workload": [f"/workloads/{CLUSTER}/shop/checkout"],
}
TEAM_SHOWS = {
    "members": ["/catalog/default/user/amelia.chen", "/catalog/default/user/wei.zhou"],
    "parent": ["/catalog/default/group/commerce-bu"],
    "owned": [ENTITY_PATH, "/catalog/default/component/cart-service"],
}
PAGES = {
    ENTITY_PATH: ("Checkout Service", ENTITY_SHOWS, ["EntityPage", "EntityWorkloads"]),
    TEAM_PATH: ("Checkout", TEAM_SHOWS, ["TeamPage", "TeamWorkloads"]),
}


async def visible_links(page: ConsolePage) -> set[str]:
    hrefs: list[str] = await page.page.eval_on_selector_all(
        "#root a[href]",
        "(links) => links.filter((a) => a.offsetParent !== null || a.getClientRects().length)"
        ".map((a) => a.getAttribute('href'))",
    )
    return set(hrefs)


async def assert_shows(page: ConsolePage, heading: str, shows: dict[str, list[str]]) -> None:
    """The page shows `heading` and links to every entity of `shows`, within 5 s (a client-side
    navigation renders when its chunk and answers arrive)."""
    deadline = asyncio.get_running_loop().time() + 5
    while True:
        text, links = await page.text(), await visible_links(page)
        missing = {what: [h for h in hrefs if h not in links] for what, hrefs in shows.items()}
        missing = {what: hrefs for what, hrefs in missing.items() if hrefs}
        if heading.lower() in text.lower() and not missing:
            return
        if asyncio.get_running_loop().time() > deadline:
            break
        await asyncio.sleep(0.1)
    assert heading.lower() in text.lower(), f"{heading!r} is not on {page.page.url}:\n{text[:800]}"
    assert not missing, f"{page.page.url} lacks links to {missing}; it has {sorted(links)}"


@pytest.mark.parametrize("path", list(PAGES))
async def test_a_server_rendered_page_loads_without_asking_graphql(
    browser: Browser, served: Served, path: str
) -> None:
    heading, shows, _ = PAGES[path]
    async with console_page(browser, served) as page:
        await page.open(path)
        asked = [describe(r) for r in page.recorded.graphql()]
        assert not asked, f"loading {path} asked /graphql (its data should be in the page): {asked}"
        assert not page.recorded.errors, f"errors on {path}: {page.recorded.errors}"
        # What the server's HTML showed, React's render shows too.
        server_text = (await page.probe())["serverText"] or ""
        assert heading.lower() in server_text.lower(), server_text[:800]
        await assert_shows(page, heading, shows)


@pytest.mark.parametrize("path", list(PAGES))
async def test_without_javascript_the_server_html_shows_the_page(
    browser: Browser, served: Served, path: str
) -> None:
    heading, shows, operations = PAGES[path]
    async with console_page(browser, served, javascript=False) as page:
        await page.open(path, rendered=False)
        await assert_shows(page, heading, shows)
        assert not page.recorded.graphql(), [describe(r) for r in page.recorded.graphql()]
        # The contract: every operation's answer embedded, for the client's cache.
        embedded = json.loads(await page.page.inner_text("#apollo-results"))
        _, _, namespace, kind, name = path.split("/")
        ref = f"{kind}:{namespace}/{name}"
        found = {(e["operationName"], json.dumps(e["variables"].get("ref"))) for e in embedded}
        for operation in operations:
            assert (operation, json.dumps(ref)) in found, (
                f"#apollo-results of {path} lacks {operation}({ref}): {sorted(found)}"
            )
        assert all(e.get("data") for e in embedded), embedded


async def test_a_teams_link_redirects_to_the_team_page(browser: Browser, served: Served) -> None:
    async with console_page(browser, served, javascript=False) as page:
        await page.open(f"/teams/{TEAM}", rendered=False)
        assert page.page.url == served.url(TEAM_PATH), page.page.url
        await assert_shows(page, TEAM, TEAM_SHOWS)
