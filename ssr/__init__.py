"""Server-side rendering of the console's critical pages, and the console's other routes.

``console_routes()`` gives the app its console: the pages (``ssr.pages``), the build's assets
under ``/assets/`` (``ssr.assets``), and ``load_console`` reads the build at start-up. Layout
and contract: README, "The console".
"""

from __future__ import annotations

from starlette.routing import BaseRoute, Mount, Route

from ssr.assets import BuildFiles
from ssr.console import Console
from ssr.pages import catalog_page, entity_page, home_page, team_redirect, workload_page

__all__ = ["Console", "console_routes"]


def console_routes(build: BuildFiles) -> list[BaseRoute]:
    return [
        Route("/", home_page),
        Route("/catalog", catalog_page),
        Route("/catalog/{namespace}/{kind}/{name}", entity_page),
        Route("/teams/{name}", team_redirect),
        Route("/workloads/{cluster}/{namespace}/{name}", workload_page),
        Mount("/assets", app=build, name="assets"),
    ]
