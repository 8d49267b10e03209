"""An API's definition on its page, in Chromium under the pages' Content-Security-Policy. The
renderer of its type (Swagger UI for OpenAPI, the console's own reading of AsyncAPI and of a
GraphQL schema, highlighted text for anything else) is a chunk of its own, requested when the
section comes into view (scrolled to, or reached by the page's tab) and never at page load; it
shows the definition's operations, channels, types or services, with no console error and no
CSP violation, in light and dark, and at a phone's width without the page scrolling sideways.
A definition that does not parse, one that could not be read, an API without one and a
renderer that fails to load each say so."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from playwright.async_api import Browser, Page, Route, expect

from tests.console.browser import ConsolePage, console_page
from tests.console.server import WEB_DIST, Served

# One demo API of each type the demo has: its name, what its rendered definition must show
# (an operation's path, a channel, a type, a service) and an element of the rendering whose
# text must be readable on the page's background.
APIS = {
    "openapi": ("checkout-api", "/checkouts/{checkoutId}", ".swagger-ui .info .title"),
    "asyncapi": ("order-events", "commerce.orders.v1", ".atrium-asyncapi-field"),
    "graphql": ("catalog-api", "ProductConnection", ".atrium-gql-field"),
    "grpc": ("pricing-api", "service PricingService", ".atrium-definition-code"),
}
RENDERERS = {
    "openapi": "src/routes/entity/OpenApiDefinition.tsx",
    "asyncapi": "src/routes/entity/AsyncApiDefinition.tsx",
    "graphql": "src/routes/entity/GraphqlDefinition.tsx",
    "grpc": "src/routes/entity/CodeDefinition.tsx",
}
PHONE = 390
SECTION = "#root section#definition"


def chunk(source: str) -> str:
    """Where the build put a source's chunk (Vite's manifest), as the page requests it."""
    manifest: dict[str, dict[str, Any]] = json.loads(
        (WEB_DIST / ".vite" / "manifest.json").read_text()
    )
    return "/assets/" + str(manifest[source]["file"])


def asked_for_definition(page: ConsolePage) -> bool:
    return any("ApiDefinition" in r.url for r in page.recorded.graphql())


async def open_api(page: ConsolePage, name: str, type_: str) -> None:
    """The API's page, loaded: nothing of its definition asked for or fetched yet."""
    await page.open(f"/catalog/default/api/{name}")
    renderer = chunk(RENDERERS[type_])
    assert renderer not in page.recorded.assets(), f"{renderer} was requested at page load"
    assert chunk("src/routes/entity/DefinitionView.tsx") not in page.recorded.assets()
    assert not asked_for_definition(page), "the definition was asked for at page load"
    await expect(page.page.locator(SECTION)).to_contain_text(
        f"The definition ({type_}) shows here."
    )


def problems(page: ConsolePage) -> list[str]:
    return [e for e in page.recorded.errors if "Content Security Policy" in e or "Refused" in e]


async def luminance(page: Page, selector: str) -> tuple[float, float]:
    """The relative luminance of an element's text and of the page's background."""
    found: list[float] = await page.evaluate(
        """(selector) => {
          const rgb = (c) => c.match(/[\\d.]+/g).slice(0, 3).map(Number);
          const lum = ([r, g, b]) => [r, g, b].map((v) => {
            v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4;
          }).reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
          const text = getComputedStyle(document.querySelector(selector)).color;
          const page = getComputedStyle(document.body).backgroundColor;
          return [lum(rgb(text)), lum(rgb(page))];
        }""",
        selector,
    )
    return found[0], found[1]


@pytest.mark.parametrize("scheme", ["light", "dark"])
@pytest.mark.parametrize("type_", list(APIS))
async def test_scrolling_to_the_definition_loads_the_renderer_of_its_type(
    browser: Browser, served: Served, type_: str, scheme: str
) -> None:
    name, shows, text = APIS[type_]
    async with console_page(browser, served, width=PHONE, color_scheme=scheme) as page:
        await open_api(page, name, type_)

        await page.page.locator("#definition").scroll_into_view_if_needed()
        section = page.page.locator(SECTION)
        await expect(section).to_contain_text(shows, timeout=15_000)
        await page.quiet()
        renderer = chunk(RENDERERS[type_])
        assert renderer in page.recorded.assets(), page.recorded.assets()
        assert asked_for_definition(page)
        assert not problems(page), problems(page)
        assert not page.recorded.errors, page.recorded.errors

        # Readable in the page's scheme: light text on a dark page, dark on a light one.
        fore, back = await luminance(page.page, f"{SECTION} {text}")
        if scheme == "dark":
            assert fore > back + 0.3, (fore, back)
        else:
            assert back > fore + 0.3, (fore, back)
        # A phone's width: wide code scrolls within its box, never the page.
        width = await page.page.evaluate("() => document.documentElement.scrollWidth")
        assert width <= PHONE, f"{name}'s page is {width} px wide at {PHONE} px"


async def test_the_pages_tab_leads_to_the_definition_and_loads_it(
    browser: Browser, served: Served
) -> None:
    name, shows, _ = APIS["openapi"]
    async with console_page(browser, served, width=PHONE) as page:
        await open_api(page, name, "openapi")
        await page.page.locator(".atrium-tabs a[href='#definition']").click()
        await expect(page.page.locator(SECTION)).to_contain_text(shows, timeout=15_000)
        assert chunk(RENDERERS["openapi"]) in page.recorded.assets()
        assert not page.recorded.errors, page.recorded.errors


Rewrite = Callable[[dict[str, Any]], None]


async def answer_changed(page: ConsolePage, rewrite: Rewrite) -> None:
    """The server's answers to ApiDefinition, changed by `rewrite` on their way to the page."""

    async def handle(route: Route) -> None:
        response = await route.fetch()
        body = await response.json()
        rewrite(body["data"]["entity"])
        await route.fulfill(response=response, json=body)

    await page.page.route(lambda url: "operationName=ApiDefinition" in url, handle)


def definition(text: str) -> Rewrite:
    return lambda entity: entity.update(definition=text)


BROKEN_OPENAPI = "openapi: 3.0.3\ninfo: {title: Broken\npaths:\n  /a: [unclosed\n"
CASES: dict[str, tuple[str, Rewrite, list[str]]] = {
    # An OpenAPI definition that is not YAML: its text, highlighted, and why.
    "unparsable": (
        "openapi",
        definition(BROKEN_OPENAPI),
        ["could not be shown as OpenAPI", "/a: [unclosed"],
    ),
    # A GraphQL schema that does not parse: the parser's own words.
    "bad graphql": (
        "graphql",
        definition("type Query {\n  product(id: ID!: Product\n}\n"),
        ["could not be shown as a GraphQL schema", "Syntax Error", "product(id: ID!: Product"],
    ),
    "not asyncapi": (
        "asyncapi",
        definition("openapi: 3.0.3\ninfo: {title: Misfiled}\n"),
        ["could not be shown as AsyncAPI", "names no asyncapi version", "Misfiled"],
    ),
    "unreadable": (
        "openapi",
        lambda e: e.update(
            definition=None, definitionUnavailable="$text './gone.yaml': no such file"
        ),
        ["The definition could not be read: $text './gone.yaml': no such file"],
    ),
    "none": (
        "openapi",
        lambda e: e.update(definition=None, definitionUnavailable=None),
        ["This API has no definition"],
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_a_definition_that_cannot_be_shown_says_why(
    browser: Browser, served: Served, case: str
) -> None:
    type_, rewrite, says = CASES[case]
    name = APIS[type_][0]
    async with console_page(browser, served, width=PHONE) as page:
        await answer_changed(page, rewrite)
        await open_api(page, name, type_)
        await page.page.locator("#definition").scroll_into_view_if_needed()
        section = page.page.locator(SECTION)
        for text in says:
            await expect(section).to_contain_text(text, timeout=15_000)
        if case in ("unparsable", "bad graphql", "not asyncapi"):
            # The text is highlighted: tokens in spans of highlight.js's classes.
            await expect(section.locator("pre code.hljs span").first).to_be_visible()
        await page.quiet()
        assert not page.recorded.errors, page.recorded.errors


async def test_a_renderer_that_fails_to_load_leaves_the_text(
    browser: Browser, served: Served
) -> None:
    name = APIS["graphql"][0]
    renderer = chunk(RENDERERS["graphql"])
    async with console_page(browser, served, width=PHONE) as page:
        await page.page.route(lambda url: url.endswith(renderer), lambda r: r.abort())
        await open_api(page, name, "graphql")
        await page.page.locator("#definition").scroll_into_view_if_needed()
        section = page.page.locator(SECTION)
        await expect(section).to_contain_text(
            "could not be shown as a GraphQL schema", timeout=15_000
        )
        await expect(section.locator("pre code.hljs")).to_contain_text("type ProductConnection")
        # The failed request, and React reporting the error its boundary caught; nothing else.
        unexpected = [
            e for e in page.recorded.errors if renderer not in e and "dynamically imported" not in e
        ]
        assert not unexpected, unexpected
        assert not problems(page), problems(page)


ASYNCAPI_3 = """asyncapi: 3.0.0
info: {title: Stock Levels, version: 3.1.0}
channels:
  levels:
    address: inventory.stock-levels.v3
    messages:
      StockLevel:
        $ref: '#/components/messages/StockLevel'
operations:
  publishLevel:
    action: send
    channel: {$ref: '#/channels/levels'}
    summary: A SKU's stock in a warehouse changed
    messages:
      - $ref: '#/channels/levels/messages/StockLevel'
components:
  messages:
    StockLevel:
      payload:
        type: object
        required: [sku]
        properties:
          sku: {type: string}
          warehouse: {type: string, description: The warehouse's code}
"""


async def test_an_asyncapi_3_definition_shows_its_channels_operations_and_fields(
    browser: Browser, served: Served
) -> None:
    async with console_page(browser, served, width=PHONE) as page:
        await answer_changed(page, definition(ASYNCAPI_3))
        await open_api(page, APIS["asyncapi"][0], "asyncapi")
        await page.page.locator("#definition").scroll_into_view_if_needed()
        channel = page.page.locator(f"{SECTION} .atrium-asyncapi-channel")
        await expect(channel).to_contain_text("inventory.stock-levels.v3", timeout=15_000)
        await expect(channel).to_contain_text("send")
        await expect(channel).to_contain_text("publishLevel")
        await expect(channel).to_contain_text("A SKU's stock in a warehouse changed")
        # The message's payload, followed through two $refs: its fields, sku required.
        await expect(channel).to_contain_text("sku*: string")
        await expect(channel).to_contain_text("The warehouse's code")
        assert not page.recorded.errors, page.recorded.errors
