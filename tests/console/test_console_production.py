"""Production mode: only trusted documents run, and the console works with them alone (its
persisted-query manifest, loaded at start-up); a document not in it is refused; the demo
user cookie means nothing, only the trusted proxy's header says who is asking."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from playwright.async_api import Browser, expect

from tests.console.browser import ConsolePage, console_page, describe
from tests.console.demo import OWNER
from tests.console.server import Served, atrium_serve, demo_database
from tests.console.test_console_navigation import build, follow_owner_link, persisted_get
from tests.console.test_console_pages import ENTITY_PATH, ENTITY_SHOWS, assert_shows
from tests.console.test_console_workloads import WORKLOAD_PATH
from tests.kube import Cluster

UNTRUSTED = 'query Untrusted { entity(ref: "component:default/checkout") { ref } }'


@pytest.fixture(scope="module")
async def production(
    pg_admin_url: str, template_db: str, cluster: Cluster, observability: dict[str, str]
) -> AsyncIterator[Served]:
    # Prometheus and Alertmanager as production has them: unconfigured, their panels would
    # answer UNAVAILABLE and leave the page to ask for them.
    async with (
        demo_database(pg_admin_url, template_db) as url,
        atrium_serve(url, (cluster,), mode="production", extra=observability) as server,
    ):
        yield server


async def fetch_from_page(page: ConsolePage, url: str, body: dict[str, Any] | None) -> Any:
    """A GET (body None) or a JSON POST to /graphql from the page, as the console sends them."""
    return await page.page.evaluate(
        """async ([url, body]) => {
          const init = {headers: {'content-type': 'application/json',
                                  accept: 'application/graphql-response+json'}};
          if (body) { init.method = 'POST'; init.body = JSON.stringify(body); }
          const r = await fetch(url, init);
          return {status: r.status, body: await r.json()};
        }""",
        [url, body],
    )


def codes(answer: dict[str, Any]) -> list[str | None]:
    return [e.get("extensions", {}).get("code") for e in answer["body"].get("errors", [])]


async def test_the_console_runs_on_trusted_documents_alone(
    browser: Browser, production: Served
) -> None:
    _, ids = build()
    async with console_page(browser, production, user=OWNER) as page:
        await page.open(ENTITY_PATH)
        assert not page.recorded.graphql() and not page.recorded.errors, page.recorded.errors
        await assert_shows(page, "Checkout Service", ENTITY_SHOWS)
        # Client-side navigation runs the team page's operations by hash, all trusted.
        requests = await follow_owner_link(page)
        assert requests, "the team page asked nothing"
        for request in requests:
            sent = persisted_get(request)
            assert sent["hash"] == ids.get(sent["operationName"] or ""), sent
            response = await request.response()
            assert response is not None
            body = await response.json()
            assert body.get("data") and "errors" not in body, body


async def test_a_document_not_in_the_manifest_is_refused(
    browser: Browser, production: Served
) -> None:
    async with console_page(browser, production, user=OWNER) as page:
        await page.open(ENTITY_PATH)
        posted = await fetch_from_page(page, "/graphql", {"query": UNTRUSTED})
        assert posted["status"] == 400 and codes(posted) == ["OPERATION_NOT_TRUSTED"], posted
        # By hash: unknown, so Apollo would send the text next, and that is refused above.
        unknown = json.dumps({"persistedQuery": {"version": 1, "sha256Hash": "0" * 64}})
        got = await fetch_from_page(page, f"/graphql?extensions={unknown}", None)
        assert codes(got) == ["PERSISTED_QUERY_NOT_FOUND"], got


async def test_the_demo_cookie_is_ignored_in_production(
    browser: Browser, production: Served, served: Served
) -> None:
    async def page_data(server: Served) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        async with console_page(browser, server, demo_user=OWNER, javascript=False) as page:
            await page.open("/", rendered=False)
            config = json.loads(await page.page.inner_text("#atrium-page"))
            results = json.loads(await page.page.inner_text("#apollo-results"))
            return config, results

    def viewer(results: list[dict[str, Any]]) -> Any:
        [home] = [r for r in results if r["operationName"] == "HomePage"]
        return home["data"]["viewer"]

    config, results = await page_data(production)
    assert config.get("mode") == "production" and not config.get("demoUsers"), config
    assert viewer(results)["ref"] is None, viewer(results)
    # The same cookie in development signs the demo user in.
    config, results = await page_data(served)
    assert config.get("mode") == "development", config
    assert viewer(results)["ref"] == f"user:default/{OWNER}", viewer(results)


@pytest.mark.parametrize(
    ("path", "shows"),
    [("/", "Welcome, Amelia Chen"), ("/catalog", "115 entities"), (WORKLOAD_PATH, "Replicas")],
)
async def test_every_page_works_in_production(
    browser: Browser, production: Served, path: str, shows: str
) -> None:
    async with console_page(browser, production, user=OWNER) as page:
        await page.open(path)
        await expect(page.page.locator("#root main")).to_contain_text(shows)
        assert not page.recorded.errors, page.recorded.errors
        for request in page.recorded.graphql():
            response = await request.response()
            assert response is not None and response.status == 200, describe(request)
            # Nothing may fail but a backend's fields when it cannot answer (UNAVAILABLE).
            errors = (await response.json()).get("errors") or []
            assert all(e["extensions"]["code"] == "UNAVAILABLE" for e in errors), (
                describe(request),
                errors,
            )
