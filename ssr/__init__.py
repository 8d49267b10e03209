"""Server-side rendering of the console's pages, and the console's other routes.

``console_routes()`` gives the app its console: the pages (``ssr.pages``, made by
``ssr.render``), the build's assets under ``/assets/`` (``ssr.assets``) and plugins' console
parts under ``/plugins/<id>/console/`` (``ssr.plugin_console``); ``console_not_found``
answers an address nothing is at with the console's 404 page, and ``console_unavailable`` a
request the database's absence stopped with a 503 page that tries again by itself (plain text
for anything but a browser's page load). Layout and contract: README, "The console".
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from ssr.assets import BuildFiles
from ssr.console import Console
from ssr.pages import (
    catalog_page,
    entity_page,
    home_page,
    missing_page,
    team_redirect,
    workload_page,
)
from ssr.plugin_console import CONSOLE_PATH, plugin_console_files

__all__ = ["Console", "console_not_found", "console_routes", "console_unavailable"]


def console_routes(build: BuildFiles) -> list[BaseRoute]:
    return [
        Route("/", home_page),
        Route("/catalog", catalog_page),
        Route("/catalog/{namespace}/{kind}/{name}", entity_page),
        Route("/teams/{name}", team_redirect),
        Route("/workloads/{cluster}/{namespace}/{name}", workload_page),
        Route("/assets/persisted-query-manifest.json", persisted_manifest),
        Mount("/assets", app=build, name="assets"),
        Route(CONSOLE_PATH, plugin_console_files),
    ]


async def persisted_manifest(request: Request) -> Response:
    """The persisted-query manifest the client reads its operations' ids from: the build's,
    with the operations of plugins' console parts (``builder.console``)."""
    console: Console | None = request.app.state.services.console
    if console is None:
        raise HTTPException(404)
    etag = f'"m{console.version}"'
    headers = {
        "cache-control": "no-cache",
        "etag": etag,
        "x-content-type-options": "nosniff",
    }
    if request.headers.get("if-none-match") == etag:
        return Response(status_code=304, headers=headers)
    return Response(console.manifest, headers=headers, media_type="application/json")


async def console_not_found(request: Request, exc: Exception) -> Response:
    """Nothing at this address: the console's page for a browser, plain text for the rest."""
    detail = exc.detail if isinstance(exc, HTTPException) else "Not Found"
    page_load = request.method in ("GET", "HEAD") and "text/html" in request.headers.get(
        "accept", ""
    )
    if page_load and not request.url.path.startswith("/assets/"):
        return await missing_page(request, 404)
    return PlainTextResponse(str(detail), 404)


# Seconds before the 503 page (and any client) tries again: a restart or a failover takes a few.
RETRY_SECONDS = 2


async def console_unavailable(request: Request, exc: Exception) -> Response:
    """The database is away (``DatabaseUnavailable``, from any route): a page that says so and
    reloads itself, rendered from nothing the database holds; plain text for the rest."""
    headers = {"retry-after": str(RETRY_SECONDS), "cache-control": "no-store"}
    console: Console | None = request.app.state.services.console
    if console is None or "text/html" not in request.headers.get("accept", ""):
        return PlainTextResponse(str(exc), 503, headers)
    html = console.templates.get_template("unavailable.html").render(
        reason=str(exc), retry=RETRY_SECONDS, inline=console.inline
    )
    return HTMLResponse(html, 503, headers)
