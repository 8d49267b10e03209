"""The console as a person uses it, at a desktop's width and a phone's: the tab's title follows
every page, by link and by Back; every page fits the screen; dark mode is dark; the keyboard
reaches the content first; a star shows on home and in the catalog; addresses that lead nowhere
say so in the console's frame."""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.async_api import Browser, Response, expect

from tests.console.browser import ConsolePage, console_page
from tests.console.demo import CLUSTER, OWNER, SCALED
from tests.console.server import Served
from tests.console.test_console_pages import ENTITY_PATH, TEAM_PATH

WIDTHS = {"desktop": 1440, "phone": 390}
NAMESPACE, NAME = SCALED
PAGES = {
    "home": "/",
    "catalog": "/catalog",
    "component": ENTITY_PATH,
    "team": TEAM_PATH,
    "api": "/catalog/default/api/checkout-api",
    "person": "/catalog/default/user/amelia.chen",
    "workload": f"/workloads/{CLUSTER}/{NAMESPACE}/{NAME}",
}

# Elements that reach past the right edge of the window, unless a scrolling box holds them
# (a table may scroll sideways within its frame; the page itself may not).
OVERFLOWING = """() => {
  const width = document.documentElement.clientWidth;
  const clipped = (el) => {
    for (let p = el.parentElement; p; p = p.parentElement) {
      const style = getComputedStyle(p);
      if (/(auto|scroll|hidden|clip)/.test(style.overflowX) && p.getBoundingClientRect().right <= width + 1) return true;
    }
    return false;
  };
  const found = [];
  for (const el of document.querySelectorAll('#root *')) {
    const r = el.getBoundingClientRect();
    if (!r.width || !r.height) continue;
    if ((r.right > width + 1 || r.left < -1) && !clipped(el)) {
      found.push(`${el.tagName.toLowerCase()}.${String(el.className).slice(0, 40)} ${Math.round(r.left)}..${Math.round(r.right)}`);
    }
  }
  return {scrollWidth: document.documentElement.scrollWidth, width, found: found.slice(0, 10)};
}"""


async def meta(page: ConsolePage) -> tuple[str, str | None]:
    description = await page.page.get_attribute('meta[name="description"]', "content")
    return await page.page.title(), description


@pytest.mark.parametrize("width", list(WIDTHS))
async def test_the_title_follows_every_page_by_link_and_by_back(
    browser: Browser, served: Served, width: str
) -> None:
    async with console_page(browser, served, user=OWNER, width=WIDTHS[width]) as page:
        await page.open("/")
        assert (await meta(page))[0] == "Home · Atrium"
        steps = [
            (
                '#root main a[href="/catalog/default/component/checkout"]',
                "Checkout Service · Atrium",
            ),
            (f'#root main a[href="{TEAM_PATH}"]', "Checkout · Atrium"),
            ('#root main a[href="/catalog/default/user/amelia.chen"]', "Amelia Chen · Atrium"),
        ]
        seen = [await meta(page)]
        for link, title in steps:
            await page.page.locator(link).first.click()
            await expect(page.page).to_have_title(title)
            seen.append(await meta(page))
            assert seen[-1][1] and seen[-1][1] != seen[-2][1], seen  # its own description
        # Back, step by step: each earlier page's title again.
        for title, _ in reversed(seen[:-1]):
            await page.page.go_back()
            await expect(page.page).to_have_title(title)
        assert not page.recorded.errors, page.recorded.errors


@pytest.mark.parametrize("width", list(WIDTHS))
@pytest.mark.parametrize("name", list(PAGES))
async def test_every_page_fits_the_screen(
    browser: Browser, served: Served, name: str, width: str
) -> None:
    async with console_page(browser, served, user=OWNER, width=WIDTHS[width]) as page:
        await page.open(PAGES[name])
        found: dict[str, Any] = await page.page.evaluate(OVERFLOWING)
        assert found["scrollWidth"] <= found["width"], found
        assert not found["found"], f"{name} at {width}: {found}"
        # The header's search is a real field, not a pill.
        box = await page.page.get_by_role("combobox", name="Search the catalog").bounding_box()
        assert box is not None and box["width"] >= 200 and box["height"] >= 40, box
        assert not page.recorded.errors, page.recorded.errors


async def test_dark_mode_is_dark_and_the_toggle_keeps_a_choice(
    browser: Browser, served: Served
) -> None:
    colours = "() => [getComputedStyle(document.body).backgroundColor, getComputedStyle(document.querySelector('h1')).color]"
    async with console_page(browser, served, color_scheme="light") as light:
        await light.open(ENTITY_PATH)
        light_colours = await light.page.evaluate(colours)
    async with console_page(browser, served, color_scheme="dark") as dark:
        await dark.open(ENTITY_PATH)
        dark_colours = await dark.page.evaluate(colours)
        assert dark_colours != light_colours, (light_colours, dark_colours)
        background = [int(c) for c in re.findall(r"\d+", dark_colours[0])[:3]]
        assert sum(background) < 3 * 80, f"a dark page on a light background: {dark_colours}"
        # The toggle: light on a dark system, kept across a reload, applied before the paint.
        await dark.page.get_by_role("button", name="Switch between light and dark colours").click()
        assert await dark.page.evaluate(colours) == light_colours
        await dark.open(ENTITY_PATH)
        assert await dark.page.evaluate(colours) == light_colours
        probe = await dark.probe()
        assert probe["cls"] < 0.1, probe


async def test_the_keyboard_reaches_the_content_first(browser: Browser, served: Served) -> None:
    async with console_page(browser, served, user=OWNER) as page:
        await page.open(ENTITY_PATH)
        await page.page.keyboard.press("Tab")
        skip = page.page.locator(":focus")
        await expect(skip).to_have_text("Skip to content")
        assert await skip.is_visible(), "the skip link shows when focused"
        await page.page.keyboard.press("Enter")
        await page.page.keyboard.press("Tab")
        focused = await page.page.evaluate("() => document.activeElement.closest('main') !== null")
        assert focused, "after the skip link, Tab goes into the page's content"
        outline = await page.page.evaluate(
            "() => getComputedStyle(document.activeElement).outlineStyle + ' ' + getComputedStyle(document.activeElement).boxShadow"
        )
        assert outline != "none none", f"the focused element shows no focus: {outline}"


def _mutation_answered(response: Response) -> bool:
    return response.request.method == "POST" and response.url.endswith("/graphql")


async def test_a_star_shows_on_home_and_in_the_catalog(browser: Browser, served: Served) -> None:
    async with console_page(browser, served, user=OWNER) as page:
        await page.open("/catalog/default/component/fraud-scoring")
        # The button turns at once (optimistically): wait for the server's answer, since
        # leaving the page at once would abandon the request.
        async with page.page.expect_response(_mutation_answered):
            await page.page.get_by_role("button", name="Star", exact=True).click()
        await expect(page.page.get_by_role("button", name="Unstar")).to_be_visible()
        await page.page.get_by_role("banner").get_by_role("link", name="Home").click()
        starred = page.page.locator("#root section#starred")
        await expect(starred).to_contain_text("Fraud Scoring")
        await page.open("/catalog?starred=1")
        await expect(page.page.locator("#root main tbody")).to_contain_text("Fraud Scoring")
        assert await page.page.locator("#root main tbody tr").count() >= 1
        # Unstarred: gone from home, after a reload too (the server's answer changed).
        await page.open("/catalog/default/component/fraud-scoring")
        async with page.page.expect_response(_mutation_answered):
            await page.page.get_by_role("button", name="Unstar").click()
        await expect(page.page.get_by_role("button", name="Star", exact=True)).to_be_visible()
        await page.open("/")
        await expect(page.page.locator("#root section#starred")).not_to_contain_text(
            "Fraud Scoring"
        )


@pytest.mark.parametrize(
    ("path", "status", "heading"),
    [
        ("/nope/at/all", 404, "Not found"),
        ("/catalog/default/component/no-such-service", 404, "Not found"),
        ("/catalog/default/nope/x", 404, "Not found"),
        (f"/workloads/{CLUSTER}/nope/x", 404, "Not found"),
        ("/catalog/default/component/bad%21name", 400, "Not a valid address"),
    ],
)
async def test_an_address_that_leads_nowhere_says_so_in_the_frame(
    browser: Browser, served: Served, path: str, status: int, heading: str
) -> None:
    async with console_page(browser, served) as page:
        response = await page.page.goto(served.url(path))
        assert response is not None and response.status == status
        await page.react_rendered()
        await expect(page.page.locator("#root main h1")).to_have_text(heading)
        await expect(page.page).to_have_title(f"{heading} · Atrium")
        # A way on: the catalog, searched for what the address named.
        await page.page.get_by_role("link", name="Search the catalog").click()
        await expect(page.page).to_have_url(re.compile(r"/catalog"))
