"""Signing in to the console in Chromium, against a real OpenID provider (npm oidc-provider) and
`atrium serve` in production mode with Redis: a person opens a deep page, signs in through the
provider's form, lands on that page under their name, is still signed in after the replica
restarts, signs out here and at the provider. Someone the directory does not know is told so
and cannot change anything. The header, signed in and out, in light, dark and at a phone's
width, as screenshots to look at."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Browser, Page, expect

from tests.console.browser import ConsolePage, console_page
from tests.console.server import Served, atrium_serve, demo_database
from tests.console.test_console_navigation import build
from tests.console.test_console_pages import ENTITY_PATH
from tests.kube import Cluster
from tests.oidc import Provider, openid_provider

DEEP = ENTITY_PATH + "?tab=dependencies"


@dataclass
class World:
    provider: Provider
    database_url: str
    environment: dict[str, str]
    port: int


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
async def world(pg_admin_url: str, template_db: str, redis_url: str) -> AsyncIterator[World]:
    port = _free_port()
    public = f"http://127.0.0.1:{port}"
    async with (
        openid_provider(f"{public}/auth/callback", public) as provider,
        demo_database(pg_admin_url, template_db) as url,
    ):
        settings = provider.settings(public) | {
            "redis_url": redis_url,
            "cache_prefix": f"atrium-signin-{port}",
        }
        environment = {f"ATRIUM_{k.upper()}": str(v) for k, v in settings.items()}
        yield World(provider, url, environment, port)


@pytest.fixture
async def replica(world: World, cluster: Cluster) -> AsyncIterator[Served]:
    async with atrium_serve(
        world.database_url, (cluster,), mode="production", extra=world.environment, port=world.port
    ) as served:
        yield served


async def sign_in_at_provider(page: Page, login: str) -> None:
    """The provider's development login form: any login, any password."""
    await page.locator('input[name="login"]').fill(login)
    await page.locator('input[name="password"]').fill("any password")
    await page.locator('button[type="submit"]').click()


async def test_a_person_signs_in_survives_a_restart_and_signs_out(
    browser: Browser, world: World, cluster: Cluster
) -> None:
    def serve() -> Any:
        return atrium_serve(
            world.database_url,
            (cluster,),
            mode="production",
            extra=world.environment,
            port=world.port,
        )

    # One browser throughout; the replica behind the address is restarted under it.
    where = Served(f"http://127.0.0.1:{world.port}", Path(os.devnull), "production")
    async with console_page(browser, where) as page:
        header = page.page.locator("header.atrium-header")
        async with serve() as first:
            page.served = first
            await page.open(DEEP)
            sign_in = header.get_by_role("link", name="Sign in")
            await expect(sign_in).to_be_visible()
            await sign_in.click()
            await page.page.wait_for_url(f"{world.provider.issuer}/**")
            await sign_in_at_provider(page.page, "amelia.chen")
            await page.page.wait_for_url(first.url(DEEP))
            await page.react_rendered()
            await expect(header).to_contain_text("Amelia Chen")
            await expect(header.get_by_role("button", name="Sign out")).to_be_visible()
            # (The provider's own pages ask for web fonts this machine cannot reach.)
            errors = [e for e in page.recorded.errors if first.base in e]
            assert not errors, errors
            cookies = {c["name"]: c for c in await page.page.context.cookies()}
            session = cookies["__Host-atrium_session"]
            assert session["httpOnly"] and session["secure"] and session["sameSite"] == "Lax"

        # The replica restarts: the session is in Redis, not in the process.
        async with serve() as second:
            page.served = second
            await page.open(DEEP)
            await expect(header).to_contain_text("Amelia Chen")

            await header.get_by_role("button", name="Sign out").click()
            # The provider asks whether to end its session too, then sends the browser back.
            await page.page.get_by_role("button", name="Yes, sign me out").click()
            await page.page.wait_for_url(second.url("/"))
            await page.react_rendered()
            await expect(header.get_by_role("link", name="Sign in")).to_be_visible()
            await expect(header).not_to_contain_text("Amelia Chen")
            names = {c["name"] for c in await page.page.context.cookies()}
            assert "__Host-atrium_session" not in names
            # The old cookie signs nobody in any more.
            await page.page.context.add_cookies([session])  # type: ignore[list-item]
            await page.open(DEEP)
            await expect(header.get_by_role("link", name="Sign in")).to_be_visible()


async def test_someone_the_directory_does_not_know_is_told_and_cannot_act(
    browser: Browser, world: World, replica: Served
) -> None:
    async with console_page(browser, replica) as page:
        await page.page.goto(replica.url("/auth/login?next=" + ENTITY_PATH))
        await sign_in_at_provider(page.page, "zoe.stranger")
        await page.page.wait_for_url(replica.url(ENTITY_PATH))
        await page.react_rendered()
        notice = page.page.get_by_role("status").filter(has_text="whom the directory does not know")
        await expect(notice).to_have_text(
            "You are signed in as Zoe Stranger, whom the directory does not know: you can read,"
            " not change."
        )
        # No star to give; and the API refuses the mutation when asked all the same.
        await expect(page.page.get_by_role("button", name="Star")).to_have_count(0)
        _, ids = build()
        answer = await page.page.evaluate(
            """async ([hash, ref]) => {
              const r = await fetch('/graphql', {method: 'POST', headers: {
                'content-type': 'application/json', accept: 'application/graphql-response+json'},
                body: JSON.stringify({operationName: 'StarEntity', variables: {ref},
                  extensions: {persistedQuery: {version: 1, sha256Hash: hash}}})});
              return await r.json();
            }""",
            [ids["StarEntity"], "component:default/checkout"],
        )
        assert answer["errors"][0]["extensions"]["code"] == "FORBIDDEN", json.dumps(answer)


@pytest.mark.parametrize(
    ("width", "scheme"), [(1280, "light"), (1280, "dark"), (390, "light"), (390, "dark")]
)
async def test_the_header_signed_in_and_out(
    browser: Browser,
    world: World,
    replica: Served,
    width: int,
    scheme: str,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """The header fits the screen signed out and in, React's first render draws it where the
    server did, and screenshots of it are kept to look at (pytest's temporary directory,
    ``header-screenshots``)."""
    shots = tmp_path_factory.getbasetemp() / "header-screenshots"  # Playwright makes it
    async with console_page(browser, replica, width=width, color_scheme=scheme) as page:
        await page.open("/")
        await assert_header_fits(page)
        await page.page.screenshot(
            path=shots / f"signed-out-{width}-{scheme}.png", clip=_top(width)
        )
        await page.page.get_by_role("link", name="Sign in").click()
        await sign_in_at_provider(page.page, "zoe.stranger" if width < 800 else "amelia.chen")
        await page.page.wait_for_url(replica.url("/"))
        await page.react_rendered()
        await assert_header_fits(page)
        await page.page.screenshot(path=shots / f"signed-in-{width}-{scheme}.png", clip=_top(width))
        probe = await page.probe()
        assert probe["cls"] < 0.1, probe["shifts"]


async def assert_header_fits(page: ConsolePage) -> None:
    """Every part of the header inside the screen, none over another."""
    boxes = await page.page.evaluate(
        """() => [...document.querySelectorAll(
              'header.atrium-header > *, .atrium-viewer > *, .atrium-stranger')]
            .filter((e) => e.getBoundingClientRect().width > 0)
            .map((e) => { const r = e.getBoundingClientRect();
              return {what: e.className || e.tagName, x: r.x, right: r.right, y: r.y, bottom: r.bottom}; })"""
    )
    width = await page.page.evaluate("() => document.documentElement.clientWidth")
    for box in boxes:
        assert box["x"] >= 0 and box["right"] <= width + 0.5, (box, width)


def _top(width: int) -> dict[str, float]:
    return {"x": 0, "y": 0, "width": width, "height": 200}
