"""Pages of a served Atrium in a real Chromium, with what happened on them recorded: every
request, console errors, uncaught exceptions, the root's markup as the server sent it (before
any script ran), when React first rendered into it, and layout shifts since the page started.

The ``atrium_browser`` fixture gives an ``AtriumBrowser``: ``await browser.snapshot(url)`` reads
a page's root before and after the console starts (a plugin's panel must be in both: rendered
by the server, kept by React); ``browser.page(served)`` a ``ConsolePage`` to drive."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

from playwright.async_api import Browser, ConsoleMessage, Page, Request

from atrium.testing.serve import Served

__all__ = [
    "PROBE",
    "AtriumBrowser",
    "ConsolePage",
    "Recorded",
    "Snapshot",
    "console_page",
    "describe",
    "launch",
]

CHROMIUM = "/usr/bin/chromium"  # Debian's, when installed

# Runs before any of the page's scripts (through the DevTools protocol, so the page's
# Content-Security-Policy does not apply to it).
PROBE = """
window.__probe = {cls: 0, shifts: [], rendered: 0, serverText: null, serverHTML: null};
new PerformanceObserver((list) => {
  for (const entry of list.getEntries()) {
    if (entry.hadRecentInput) continue;
    window.__probe.cls += entry.value;
    window.__probe.shifts.push({value: entry.value, at: entry.startTime,
      nodes: (entry.sources || [])
        .map((s) => s.node && s.node.nodeName + '.' + (s.node.className || ''))});
  }
}).observe({type: 'layout-shift', buffered: true});
// 'interactive': the server's HTML is parsed and no module script has run yet.
document.addEventListener('readystatechange', () => {
  const root = document.getElementById('root');
  if (document.readyState !== 'interactive' || !root) return;
  window.__probe.serverText = root.innerText;
  window.__probe.serverHTML = root.innerHTML;
  new MutationObserver(() => { window.__probe.rendered += 1; })
    .observe(root, {childList: true});
});
"""


@dataclass
class Recorded:
    requests: list[Request] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    in_flight: set[Request] = field(default_factory=set)

    def graphql(self) -> list[Request]:
        return [r for r in self.requests if urlsplit(r.url).path == "/graphql"]

    def assets(self) -> list[str]:
        return [urlsplit(r.url).path for r in self.requests if "/assets/" in r.url]

    def clear(self) -> None:
        """Forget what happened so far (requests still in flight stay counted as such)."""
        self.requests.clear()
        self.errors.clear()


def describe(request: Request) -> str:
    """A request as a failing assertion should show it."""
    parts = urlsplit(request.url)
    params = {k: v[0][:120] for k, v in parse_qs(parts.query).items()}
    body = (request.post_data or "")[:200]
    return f"{request.method} {parts.path} {params or ''} {body}".strip()


@dataclass
class ConsolePage:
    page: Page
    recorded: Recorded
    served: Served

    async def open(self, path: str, *, rendered: bool = True) -> None:
        """Load a page until, with JavaScript, React has rendered, and the network is quiet."""
        self.recorded.clear()
        response = await self.page.goto(self.served.url(path), wait_until="load")
        assert response is not None and response.status == 200, (
            f"GET {path}: {response and response.status}\n{self.served.log_text()[-3000:]}"
        )
        if rendered:
            await self.react_rendered()
        else:
            await self.quiet()

    async def react_rendered(self, within: float = 5.0) -> None:
        # Polled from here: Playwright's wait_for_function evaluates its predicate with eval,
        # which the pages' Content-Security-Policy forbids, as it should.
        loop = asyncio.get_running_loop()
        deadline = loop.time() + within
        while not await self.page.evaluate("() => window.__probe.rendered > 0"):
            if loop.time() > deadline:
                raise AssertionError(
                    f"React never rendered into #root of {self.page.url}; errors:"
                    f" {self.recorded.errors}"
                )
            await asyncio.sleep(0.05)
        await self.quiet()

    async def quiet(self, quiet_for: float = 0.3, within: float = 10.0) -> None:
        """Wait until no request has been in flight for `quiet_for` seconds. (Playwright's
        "networkidle" is a state of the document's load: a client-side navigation never
        resets it.)"""
        loop = asyncio.get_running_loop()
        deadline, idle_since = loop.time() + within, loop.time()
        while loop.time() - idle_since < quiet_for:
            if self.recorded.in_flight:
                idle_since = loop.time()
            assert loop.time() < deadline, (
                f"still loading after {within} s: {[describe(r) for r in self.recorded.in_flight]}"
            )
            await asyncio.sleep(0.05)

    async def probe(self) -> dict[str, Any]:
        # Two frames after React's render, so shifts it caused are reported.
        await self.page.evaluate(
            "() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r)))"
        )
        result: dict[str, Any] = await self.page.evaluate("() => window.__probe")
        return result

    async def another(self) -> ConsolePage:
        """A new page in the same browser context (its cookies and HTTP cache)."""
        return await _instrumented(await self.page.context.new_page(), self.served)

    async def text(self) -> str:
        return await self.page.inner_text("#root")


@asynccontextmanager
async def console_page(
    browser: Browser,
    served: Served,
    *,
    user: str | None = None,
    demo_user: str | None = None,
    javascript: bool = True,
    bypass_csp: bool = False,
    width: int = 1280,
    color_scheme: str = "light",
) -> AsyncIterator[ConsolePage]:
    """A page in a context of its own: as `user` (the trusted proxy's X-Forwarded-User, as
    production says who is asking) or `demo_user` (the development cookie), or anonymous."""
    context = await browser.new_context(
        java_script_enabled=javascript,
        bypass_csp=bypass_csp,
        extra_http_headers={"X-Forwarded-User": user} if user else None,
        viewport={"width": width, "height": 900},
        color_scheme=color_scheme,  # type: ignore[arg-type]
    )
    # A missing element fails in seconds, not Playwright's 30.
    context.set_default_timeout(10_000)
    try:
        if demo_user:
            await context.add_cookies(
                [{"name": "atrium_demo_user", "value": demo_user, "url": served.base}]
            )
        yield await _instrumented(await context.new_page(), served)
    finally:
        await context.close()


async def _instrumented(page: Page, served: Served) -> ConsolePage:
    recorded = Recorded()
    page.on("request", lambda r: _sent(recorded, r))
    page.on("requestfinished", lambda r: recorded.in_flight.discard(r))
    page.on("console", lambda m: _console_error(recorded, m))
    page.on("pageerror", lambda e: recorded.errors.append(f"uncaught: {e}"))
    page.on("requestfailed", lambda r: _failed(recorded, r))
    await page.add_init_script(PROBE)
    return ConsolePage(page, recorded, served)


def _sent(recorded: Recorded, request: Request) -> None:
    recorded.requests.append(request)
    recorded.in_flight.add(request)


def _failed(recorded: Recorded, request: Request) -> None:
    recorded.in_flight.discard(request)
    # A query the page no longer needs (its component left with a navigation) is cancelled by
    # Apollo Client: not a failure.
    if request.failure == "net::ERR_ABORTED" and urlsplit(request.url).path == "/graphql":
        return
    recorded.errors.append(f"failed: {request.method} {request.url} {request.failure}")


def _console_error(recorded: Recorded, message: ConsoleMessage) -> None:
    if message.type == "error":
        recorded.errors.append(f"console: {message.text} ({message.location.get('url')})")


@dataclass(frozen=True)
class Snapshot:
    """A page as the server sent it and as the console left it."""

    status: int
    server_html: str  # the whole document, as sent
    before: str  # the markup of #root as parsed, before any script ran
    after: str  # the markup of #root once React rendered and the network was quiet
    errors: list[str]  # console errors, uncaught exceptions, failed requests


class AtriumBrowser:
    """A Chromium for a test: pages of a served Atrium, in contexts of their own."""

    def __init__(self, browser: Browser) -> None:
        self.browser = browser

    def page(self, served: Served, **options: Any) -> AbstractAsyncContextManager[ConsolePage]:
        """A recorded page (``console_page``): as ``user`` (the trusted proxy's header),
        ``demo_user`` (the development cookie) or anonymous."""
        return console_page(self.browser, served, **options)

    async def snapshot(
        self,
        url: str,
        *,
        user: str | None = None,
        demo_user: str | None = None,
        rendered: bool = True,
        within: float = 10.0,
    ) -> Snapshot:
        """Open ``url`` and read its root before the console starts and after it rendered
        (``rendered=False``: once the network is quiet, for a page without the console)."""
        parts = urlsplit(url)
        served = Served(f"{parts.scheme}://{parts.netloc}", Path(os.devnull), "development")
        async with console_page(self.browser, served, user=user, demo_user=demo_user) as page:
            response = await page.page.goto(url, wait_until="load")
            assert response is not None, f"no answer for {url}"
            html = await response.text()
            if rendered:
                await page.react_rendered(within)
            else:
                await page.quiet()
            probe = await page.probe()
            after = await page.page.inner_html("#root") if probe["serverHTML"] is not None else ""
            return Snapshot(
                response.status, html, probe["serverHTML"] or "", after, list(page.recorded.errors)
            )


@asynccontextmanager
async def launch(executable: str | None = None) -> AsyncIterator[AtriumBrowser]:
    """Chromium: ``executable``, else ``ATRIUM_TEST_CHROMIUM``, else Debian's, else
    Playwright's own (``playwright install chromium``)."""
    from playwright.async_api import async_playwright

    path = executable or os.environ.get("ATRIUM_TEST_CHROMIUM")
    if path is None and os.access(CHROMIUM, os.X_OK):
        path = CHROMIUM
    async with async_playwright() as p:
        chromium = await p.chromium.launch(executable_path=path)
        try:
            yield AtriumBrowser(chromium)
        finally:
            await chromium.close()
