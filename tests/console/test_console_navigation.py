"""Client-side navigation: from the entity page to its owner's team page by the owner link. The
team route's chunk loads only then; its operations go out as persisted GETs (hash only, no
document), and the next time they are answered from a cache: Atrium's response cache for a
browser that has never seen them, the browser's own HTTP cache for one that has."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import parse_qs, urlsplit

from playwright.async_api import Browser, Request, expect

from tests.console.browser import ConsolePage, console_page, describe
from tests.console.server import WEB_DIST, Served
from tests.console.test_console_pages import ENTITY_PATH, TEAM_PATH, TEAM_SHOWS, assert_shows

TEAM_ROUTE = "src/routes/Team.tsx"
RESPONSE_HITS = 'atrium_cache_lookups{level="response",outcome="hit"}'
TEAM_PAGE_GETS = 'atrium_graphql_requests_total{operation="TeamPage",status="200"}'


def build() -> tuple[str, dict[str, str]]:
    """The team route's chunk URL, and the persisted-query manifest's ids by operation name."""
    vite = json.loads((WEB_DIST / ".vite" / "manifest.json").read_text())
    assert TEAM_ROUTE in vite, f"Vite's manifest has no {TEAM_ROUTE}: {sorted(vite)}"
    manifest = json.loads((WEB_DIST / "persisted-query-manifest.json").read_text())
    ids = {op["name"]: op["id"] for op in manifest["operations"]}
    return "/assets/" + vite[TEAM_ROUTE]["file"], ids


def persisted_get(request: Request) -> dict[str, Any]:
    """The parts of a GET /graphql, checked to be Apollo's hash-only persisted query."""
    assert request.method == "GET", f"not a GET: {describe(request)}"
    params = {k: v[0] for k, v in parse_qs(urlsplit(request.url).query).items()}
    assert "query" not in params, f"the document was sent: {describe(request)}"
    extensions = json.loads(params["extensions"])
    return {
        "operationName": params.get("operationName"),
        "hash": extensions["persistedQuery"]["sha256Hash"],
    }


async def follow_owner_link(page: ConsolePage) -> list[Request]:
    """Open the entity page, click its owner link, wait for the team page: the GraphQL
    requests the navigation made."""
    await page.open(ENTITY_PATH)
    page.recorded.clear()
    await page.page.locator(f'#root a[href="{TEAM_PATH}"]').first.click()
    await expect(page.page).to_have_url(page.served.url(TEAM_PATH))
    await page.quiet()
    await assert_shows(page, "Checkout", TEAM_SHOWS)
    assert not page.recorded.errors, page.recorded.errors
    return page.recorded.graphql()


async def test_the_owner_link_loads_the_team_route_and_its_persisted_queries(
    browser: Browser, served: Served
) -> None:
    chunk, ids = build()
    async with console_page(browser, served) as page:
        await page.open(ENTITY_PATH)
        assert chunk not in page.recorded.assets(), "the team chunk loaded with the entity page"
        requests = await follow_owner_link(page)
        assert chunk in page.recorded.assets(), (
            f"navigating did not load {chunk}: {page.recorded.assets()}"
        )
        sent = [persisted_get(r) for r in requests]
        names = {s["operationName"] for s in sent}
        assert "TeamPage" in names, [describe(r) for r in requests]
        for s in sent:
            assert s["hash"] == ids.get(s["operationName"] or ""), (
                f"{s} is not the manifest's {ids.get(s['operationName'] or '')}"
            )
        for request in requests:
            response = await request.response()
            assert response is not None and response.status == 200, describe(request)
            body = await response.json()
            assert body.get("data") and "errors" not in body, body


async def test_the_second_time_the_team_queries_come_from_a_cache(
    browser: Browser, served: Served
) -> None:
    async with console_page(browser, served) as first:
        await follow_owner_link(first)  # whatever this one costs, the answer is kept now
    before = await served.counters()
    # A browser that never saw it: Atrium's response cache answers (its Age says so).
    async with console_page(browser, served) as second:
        [team] = [r for r in await follow_owner_link(second) if "TeamPage" in r.url]
        response = await team.response()
        assert response is not None
        headers = await response.all_headers()
        assert headers.get("cache-control") == "max-age=60, public", headers
        assert "age" in headers and headers.get("etag"), headers
        after = await served.counters()
        assert after.get(RESPONSE_HITS, 0) > before.get(RESPONSE_HITS, 0), (
            f"no response-cache hit: {before.get(RESPONSE_HITS)} -> {after.get(RESPONSE_HITS)}"
        )
        # The same browser again, in a new page: its HTTP cache answers, Atrium sees nothing.
        await follow_owner_link(await second.another())
        final = await served.counters()
        assert final.get(TEAM_PAGE_GETS) == after.get(TEAM_PAGE_GETS), (
            f"the browser asked Atrium again: {after.get(TEAM_PAGE_GETS)} ->"
            f" {final.get(TEAM_PAGE_GETS)} TeamPage GETs"
        )
