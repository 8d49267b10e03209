"""Atrium's app as the scenarios build it, and the floor they measure it against.

This is where bench/ reaches for the app factory and for how ``atrium serve`` runs uvicorn,
so that a scenario names its settings and plugins and nothing of how the app is put together.
The floor is what a user could run instead of Atrium: a bare Starlette endpoint answering
the very bytes Atrium answered, so that a ratio to it is what GraphQL, resolvers and SQL
cost on top of moving the request and the response.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from typing import Final

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from atrium.app import AtriumApp, create_app
from atrium.cli import listening_socket, uvicorn_options
from graph.plugin import Plugin
from graph.settings import Settings

__all__ = [
    "CLI_MODULE",
    "AtriumApp",
    "atrium",
    "floor_app",
    "listening_socket",
    "quiet",
    "started",
    "uvicorn_options",
]

CLI_MODULE: Final = "atrium.cli"  # ``python -m`` it: the ``atrium`` command


def atrium(settings: Settings, plugins: Sequence[Plugin] | None = ()) -> AtriumApp:
    """``create_app``: with no plugin but the core's by default (the catalog alone), with
    ``plugins``, or with the installed ones (``None``: discovery, as ``atrium serve``)."""
    return create_app(settings, plugins=plugins)


@contextlib.asynccontextmanager
async def started(
    settings: Settings, plugins: Sequence[Plugin] | None = ()
) -> AsyncIterator[AtriumApp]:
    """The app with its lifespan running (the migrations applied, the pool open)."""
    app = atrium(settings, plugins)
    async with app.router.lifespan_context(app):
        yield app


def quiet() -> None:
    """The app logs each request at INFO; printing them would be measured too."""
    logging.getLogger("atrium").setLevel(logging.WARNING)


def floor_app(body: bytes, media_type: str, *, method: str = "GET") -> Starlette:
    """``body`` from a plain endpoint at ``/graphql``; a POST's body is read first, as any
    endpoint must. ``/healthz`` answers too, for a server's readiness."""

    async def endpoint(request: Request) -> Response:
        if method == "POST":
            await request.body()
        return Response(body, media_type=media_type)

    async def healthz(request: Request) -> Response:
        return PlainTextResponse("ok")

    return Starlette(
        routes=[Route("/graphql", endpoint, methods=[method]), Route("/healthz", healthz)]
    )
