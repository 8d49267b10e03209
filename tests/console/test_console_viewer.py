"""Who is signed in, in development: the demo user cookie, set by the header's "Act as". A
person who switches users sees the new one's data, never an answer cached for the previous."""

from __future__ import annotations

from playwright.async_api import Browser, expect

from tests.console.browser import console_page
from tests.console.demo import NOT_OWNER, OWNER
from tests.console.server import Served


async def test_acting_as_another_user_never_shows_the_previous_users_answers(
    browser: Browser, served: Served
) -> None:
    async with console_page(browser, served, demo_user=OWNER) as page:
        heading = page.page.locator("#root main h1")
        # Home by client-side navigation: its HomePage answer (the viewer's) comes by GET.
        await page.open("/catalog")
        await page.page.get_by_role("banner").get_by_role("link", name="Home").click()
        await expect(heading).to_have_text("Welcome, Amelia Chen")
        # Act as someone else (the header sets the cookie and reloads), then home again.
        await page.page.get_by_role("banner").get_by_role("link", name="Catalog").click()
        async with page.page.expect_navigation():
            await page.page.get_by_label("Act as").select_option(f"user:default/{NOT_OWNER}")
        await page.react_rendered()
        page.recorded.clear()
        await page.page.get_by_role("banner").get_by_role("link", name="Home").click()
        await page.quiet()
        home = [r for r in page.recorded.graphql() if "HomePage" in r.url]
        answer = await home[0].response() if home else None
        headers = await answer.all_headers() if answer else {}
        why = (
            f"HomePage {'was not asked' if not home else 'answered'} with"
            f" Cache-Control: {headers.get('cache-control')}, Vary: {headers.get('vary')}"
            " (a private answer must vary with what names the viewer: Cookie, X-Forwarded-User)"
        )
        await expect(heading, why).to_have_text("Welcome, Marcus Johnson", timeout=3000)
