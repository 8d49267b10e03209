"""``make bench --only console``: the server-rendered entity page against the same page rendered
by the client alone (``ATRIUM_SSR=false``), in a real Chromium; the page's server time; and
Lighthouse's mobile performance score of five pages on ``atrium serve --demo`` (bench.lighthouse).

Paint: first contentful paint and largest contentful paint (the browser's own
``largest-contentful-paint`` entries: the last one before the page is complete, that is once
the entity's name is in its heading and no request has been in flight for a while), median of
several loads, each in a fresh browser context (no HTTP cache), SSR and client-only
alternating, unthrottled and throttled through the DevTools protocol (the CPU 4 times slower;
the network as DevTools' "Slow 4G": 150 ms latency, 1.6 Mbit/s down, 750 kbit/s up). Server
time: the page rendered with nothing cached, from the page cache, and revalidated (304),
against the API's own answer for the page's data (a persisted GET of EntityPage) uncached and
from the response cache, in process, median of many.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections import Counter
from typing import Any

import httpx

from bench.harness.apps import atrium, started
from bench.harness.database import scratch_database
from bench.harness.host import ROOT
from bench.harness.serve import atrium_with_plugins
from bench.harness.servers import Server, running_servers
from bench.harness.tables import print_target
from bench.lighthouse import LIGHTHOUSE, PAGES, run_lighthouse
from graph.settings import Settings

__all__ = ["run_console"]

WEB_DIST = ROOT / "web" / "dist"
EXAMPLES = ROOT / "atrium" / "demo"
CHROMIUM = "/usr/bin/chromium"
PATH = "/catalog/default/component/checkout"
NAME = "Checkout Service"
# Left out of the paint and server-time servers: this bench runs no Prometheus or
# Alertmanager, so its sections would answer UNAVAILABLE, and a page holding a failed answer
# is never kept (no ETag: neither the page cache nor a 304 could be measured).
NO_OBSERVABILITY = "observability"
GOAL = 2.0  # the SSR page's largest contentful paint at least this many times sooner, throttled
SMOKE_CALLS = 5  # requests per server-time figure with --smoke
SLOW_4G = {
    "offline": False,
    "latency": 150,
    "downloadThroughput": 1_600_000 / 8,
    "uploadThroughput": 750_000 / 8,
}

# Before any of the page's scripts: collects the first contentful paint and the largest one.
PROBE = """
window.__paint = {fcp: null, lcp: null, element: null};
new PerformanceObserver((list) => {
  for (const e of list.getEntries()) {
    if (e.name === 'first-contentful-paint') window.__paint.fcp = e.startTime;
  }
}).observe({type: 'paint', buffered: true});
new PerformanceObserver((list) => {
  const entries = list.getEntries();
  const e = entries[entries.length - 1];
  window.__paint.lcp = e.startTime;
  const el = e.element;
  window.__paint.element = el
    ? el.tagName.toLowerCase() + ' "' + (el.textContent || '').trim().slice(0, 24) + '"'
    : 'image ' + e.url;
}).observe({type: 'largest-contentful-paint', buffered: true});
"""
# The page is complete once its heading names the entity and the network has been quiet
# this long (seconds): the client-only page renders its content after its GraphQL answers.
QUIET_S = {False: 0.5, True: 1.0}
READ = """(name) => {
  const h1 = document.querySelector('h1');
  return {...window.__paint, named: !!h1 && h1.textContent.includes(name)};
}"""


async def run_console(*, quick: bool, rounds: int | None = None, smoke: bool = False) -> None:
    """``rounds``: page loads per target and throttling (default 7, 3 with ``quick``, 1 with
    ``smoke``, which also times the server over a few requests only). A short run (``quick``,
    ``smoke``, or fewer than 5 rounds) has Lighthouse run the component page once; a full one
    runs the five pages three times each."""
    from playwright.async_api import async_playwright

    if not (WEB_DIST / ".vite" / "manifest.json").is_file():
        raise SystemExit("console: the console is not built: run `make web` first")
    if not LIGHTHOUSE.is_file():
        raise SystemExit("console: no Lighthouse: `make bench` installs it (tests/clients)")
    started = time.perf_counter()
    loads = rounds or (1 if smoke else 3 if quick else 7)
    short = smoke or quick or (rounds is not None and rounds < 5)
    async with scratch_database() as scratch:
        print(f"\nconsole: {scratch}")
        await _load_demo(scratch.url)
        calls = SMOKE_CALLS if smoke else 100 if loads < 5 else 400
        server_times = await _server_times(scratch.url, calls=calls)
        base = {
            "database_url": scratch.url,
            "web_dir": str(WEB_DIST),
            "log_level": "WARNING",
            "disabled_plugins": [NO_OBSERVABILITY],
        }
        async with running_servers() as servers, async_playwright() as p:
            # With the other bundled plugins (PinCompute, no cluster): the workloads panel too.
            ssr = await servers.start("ssr", atrium_with_plugins, json.dumps(base))
            client_only = json.dumps({**base, "ssr": False})
            client = await servers.start("client", atrium_with_plugins, client_only)
            browser = await p.chromium.launch(executable_path=CHROMIUM)
            try:
                paints: dict[tuple[str, bool], list[dict[str, Any]]] = {}
                for throttled in (False, True):
                    for _ in range(loads):
                        for server in (ssr, client):
                            paint = await _load(browser, server, throttled)
                            paints.setdefault((server.name, throttled), []).append(paint)
            finally:
                await browser.close()
        _print_paints(paints, loads)
        _print_server_times(server_times)
        pages = {"component": PAGES["component"]} if short else PAGES
        await run_lighthouse(scratch.url, runs=1 if short else 3, pages=pages)
    print(
        f"\nconsole took {time.perf_counter() - started:.0f} s; servers stopped, database dropped"
    )


async def _load_demo(url: str) -> None:
    from sources.catalog.documents import read_paths
    from sources.catalog.store import apply_batch

    async with started(Settings(database_url=url, web_dir=WEB_DIST)) as app:  # the migrations
        result = await apply_batch(app.services.database, read_paths([EXAMPLES]))
        assert not result.errors, result.errors


async def _load(browser: Any, server: Server, throttled: bool) -> dict[str, Any]:
    context = await browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        page = await context.new_page()
        await page.add_init_script(PROBE)
        in_flight: set[Any] = set()
        page.on("request", lambda r: in_flight.add(r))
        page.on("requestfinished", lambda r: in_flight.discard(r))
        page.on("requestfailed", lambda r: in_flight.discard(r))
        if throttled:
            cdp = await context.new_cdp_session(page)
            await cdp.send("Emulation.setCPUThrottlingRate", {"rate": 4})
            await cdp.send("Network.enable")
            await cdp.send("Network.emulateNetworkConditions", SLOW_4G)
        await page.goto(f"http://127.0.0.1:{server.port}{PATH}", wait_until="load")
        # Polled from here: the page's Content-Security-Policy forbids what wait_for_function
        # evaluates in the page.
        loop = asyncio.get_running_loop()
        quiet_since = loop.time()
        for _ in range(600):
            paint: dict[str, Any] = await page.evaluate(READ, NAME)
            if in_flight:
                quiet_since = loop.time()
            quiet = loop.time() - quiet_since >= QUIET_S[throttled]
            if quiet and paint["named"] and paint["fcp"] is not None and paint["lcp"] is not None:
                return paint
            await asyncio.sleep(0.1)
        raise server.failure(f"the entity's page never completed: {paint}")
    finally:
        await context.close()


async def _server_times(url: str, *, calls: int) -> dict[str, float]:
    """Median µs per request, in process (httpx over ASGI)."""
    from graph.persisted import read_manifest

    # PinCompute with no cluster, and no observability (NO_OBSERVABILITY). Every render timed
    # is the whole page: a panel's operation is waited for, where the default budget (a
    # quarter of a second) leaves it to the client on a busy machine, and the page unkept.
    settings = Settings(
        database_url=url,
        web_dir=WEB_DIST,
        disabled_plugins=[NO_OBSERVABILITY],
        ssr_panel_budget=10.0,
    )
    app = atrium(settings, None)
    documents = read_manifest(WEB_DIST / "persisted-query-manifest.json")
    digest = next(d for d, _, name in documents if name == "EntityPage")
    api = {
        "operationName": "EntityPage",
        "variables": json.dumps({"ref": "component:default/checkout"}),
        "extensions": json.dumps({"persistedQuery": {"version": 1, "sha256Hash": digest}}),
    }
    headers = {"content-type": "application/json"}
    async with app.router.lifespan_context(app):
        services = app.state.services
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as http:

            def forget() -> None:
                services.responses.clear_local()
                services.console.pages = type(services.console.pages)(max_bytes=16 * 2**20)

            first = await http.get(PATH)
            assert "etag" in first.headers, f"the page was not kept: {first.headers}"
            etag = first.headers["etag"]

            async def timed(request: Any, before: Any = None) -> float:
                samples = []
                for _ in range(calls):
                    if before is not None:
                        before()
                    t = time.perf_counter()
                    response = await request()
                    samples.append(time.perf_counter() - t)
                    assert response.status_code in (200, 304), response.text[:300]
                return statistics.median(samples) * 1e6

            return {
                "page, nothing cached": await timed(lambda: http.get(PATH), forget),
                "page, from the page cache": await timed(lambda: http.get(PATH)),
                "page, revalidated (304)": await timed(
                    lambda: http.get(PATH, headers={"if-none-match": etag})
                ),
                "API: EntityPage by GET, uncached": await timed(
                    lambda: http.get("/graphql", params=api, headers=headers), forget
                ),
                "API: EntityPage by GET, response cache": await timed(
                    lambda: http.get("/graphql", params=api, headers=headers)
                ),
            }


def _print_paints(paints: dict[tuple[str, bool], list[dict[str, Any]]], loads: int) -> None:
    print(
        f"\nthe entity page {PATH} in Chromium, median of {loads} loads each, fresh context "
        "(no HTTP cache), SSR and client-only alternating"
    )
    print(f"{'':52}{'FCP ms':>9}{'LCP ms':>9}  largest contentful paint")
    ratios = {}
    for throttled in (False, True):
        label = "throttled (CPU 4x, Slow 4G)" if throttled else "unthrottled"
        medians = {}
        for name in ("ssr", "client"):
            runs = paints[(name, throttled)]
            fcp = statistics.median(r["fcp"] for r in runs)
            lcp = statistics.median(r["lcp"] for r in runs)
            element = Counter(r["element"] for r in runs).most_common(1)[0][0]
            medians[name] = lcp
            who = "server-rendered" if name == "ssr" else "client only"
            print(f"  {label + ', ' + who:50}{fcp:9.0f}{lcp:9.0f}  {element}")
        ratios[throttled] = medians["client"] / medians["ssr"]
        print(f"  largest contentful paint sooner with SSR: {ratios[throttled]:.1f}x")
    ratio = ratios[True]
    what = f"the largest contentful paint >= {GOAL:g}x sooner with SSR, throttled"
    print_target(what, f"{ratio:.1f}x", ratio >= GOAL)


def _print_server_times(times: dict[str, float]) -> None:
    baseline = times["API: EntityPage by GET, response cache"]
    print("\nserver time of the page against the API's own answer for its data, in process")
    print(f"{'':44}{'µs/request':>11}{'vs cached API':>15}")
    for name, micros in times.items():
        print(f"  {name:42}{micros:11.0f}{micros / baseline:14.1f}x")
