"""The app factory: ``create_app(settings)`` builds everything, the lifespan connects it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator, Sequence
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route, WebSocketRoute

from atrium.database import database_url
from atrium.drain import Drain, closing
from graph.assembly import assemble, core_plugins, discover_plugins
from graph.auth.identity import connect_identity
from graph.auth.signin import sign_in_routes
from graph.catalog_api import catalog_api
from graph.hot_answers import HotAnswers
from graph.http_output import vary_header
from graph.logs import flush_logs
from graph.metrics import Metrics
from graph.persisted import PersistedQueries, trust
from graph.plugin import BackgroundJob, Plugin
from graph.provided import ServiceDirectory
from graph.services import Services
from graph.settings import Settings
from graph.types import Receive, Scope, Send
from graph.view import graphql_http
from graph.view_ws import subscriptions
from loaders.cache import Caches
from loaders.responses import ResponseCache
from sources.db import Database, counted_as_job
from sources.errors import DatabaseUnavailable, MigrationError
from sources.jobs import claim_run
from sources.migrations import apply_migrations, pending_migrations
from ssr import Console, console_not_found, console_routes, console_unavailable
from ssr.assets import BuildFiles
from ssr.plugin_console import load_plugin_consoles

__all__ = ["AtriumApp", "app_from_environment", "create_app", "database_url", "served_app"]

log = logging.getLogger("atrium.app")


class AtriumApp(Starlette):
    """Starlette, with ``/graphql`` answered before Starlette's routing and middleware: over
    HTTP it is the hot path, and it handles its own errors (``graph.view``); over websockets a
    subscription's connection would keep the coroutines and state of every layer it passed
    for its whole life (thousands of them at once), and Strawberry handles its errors."""

    services: Services  # set by create_app
    subscriptions: Any = None  # the websocket app at /graphql, set by create_app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        kind = scope["type"]
        if kind == "http" or kind == "websocket":
            if kind == "http" and self.services.draining:  # clients connect again, elsewhere
                send = closing(send)
            path: str = scope["path"]
            root: str = scope.get("root_path", "")
            if root and path.startswith(root):
                path = path[len(root) :]
            if path == "/graphql":
                scope["app"] = self
                if kind == "http":
                    await graphql_http(scope, receive, send)
                    return
                if self.subscriptions is not None:
                    await self.subscriptions(scope, receive, send)
                    return
        await super().__call__(scope, receive, send)


def create_app(
    settings: Settings | None = None, *, plugins: Sequence[Plugin] | None = None
) -> AtriumApp:
    """Build the app. ``plugins`` replaces discovery through entry points (tests use it)."""
    settings = settings or Settings()
    found = list(plugins) if plugins is not None else discover_plugins(settings)
    assembly = assemble(settings, [*core_plugins(), *found])
    assert assembly.schema is not None
    # Plugins' console parts: their operations checked against the schema now, at start-up.
    plugin_consoles = load_plugin_consoles(assembly.consoles, assembly.schema._schema)
    services = Services(
        settings=settings,
        assembly=assembly,
        metrics=Metrics(),
        persisted=PersistedQueries(enabled=settings.apq, trusted_only=settings.production),
    )
    services.metrics.add_gauges(assembly.gauges)
    services.vary = vary_header(settings)
    if settings.response_cache and settings.hot_answers:
        services.hot = HotAnswers(settings.user_header)
        services.hot.record = services.record_answered
    services.provided = ServiceDirectory(assembly.services, services.extras)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        url = await database_url(settings)
        services.db = await Database.connect(
            url,
            settings.database_options,
            min_size=settings.database_pool_min,
            max_size=settings.database_pool_max,
        )
        services.caches = _caches(settings)
        if settings.response_cache:
            services.responses = ResponseCache(
                max_entries=settings.response_cache_max_entries,
                max_bytes=settings.response_cache_max_bytes,
                shared=services.caches.shared,
            )
            services.caches.subscribers.append(services.responses)
            if services.hot is not None:
                services.responses.on_forget = services.hot.forget
        services.caches.subscribers.append(services.tokens)
        services.caches.subscribers.append(services.changes)
        await services.caches.start()
        try:
            await apply_migrations(services.db, assembly.migrations)
            services.console = Console.load(settings.console_dir, assembly.panels, plugin_consoles)
            if services.console is not None:
                # The console's operations run in production, where only trusted ones do.
                await trust(services.db, services.console.documents)
            # Plugins' lifespans start after the database and stop before it; jobs run inside.
            async with contextlib.AsyncExitStack() as plugin_lifespans:
                services.identity = await plugin_lifespans.enter_async_context(
                    connect_identity(settings, services.db, services.caches)
                )
                for plugin_id, factory in assembly.lifespans:
                    services.extras[plugin_id] = await plugin_lifespans.enter_async_context(
                        factory(services)
                    )
                jobs = [
                    asyncio.create_task(_repeat(job, services), name=job.name)
                    for job in assembly.jobs
                ]
                # Each worker of `atrium serve --workers N` says so once it can serve.
                log.info("ready", extra={"pid": os.getpid()})
                try:
                    yield
                finally:
                    for task in jobs:
                        task.cancel()
                    await asyncio.gather(*jobs, return_exceptions=True)
        finally:
            if services.hot is not None:
                services.hot.flush()
                services.hot.clear()
            flush_logs()
            await services.caches.stop()
            services.responses = None
            await services.db.close()
            services.db = None

    subscribing = subscriptions(services)
    app = AtriumApp(
        routes=[
            WebSocketRoute("/graphql", subscribing),  # what AtriumApp answers itself
            Route("/healthz", _healthz),
            Route("/readyz", _readyz),
            Route("/metrics", _metrics),
            catalog_api(),
            *sign_in_routes(settings),
            *(
                Route(path, endpoint, methods=list(methods))
                for path, methods, endpoint in assembly.routes
            ),
            *console_routes(BuildFiles(settings.console_dir)),
        ],
        lifespan=lifespan,
        exception_handlers={404: console_not_found, DatabaseUnavailable: console_unavailable},
    )
    app.state.services = services
    app.services = services
    app.subscriptions = subscribing
    return app


def app_from_environment() -> Starlette:
    """Factory for uvicorn workers: settings from the environment."""
    from graph.logs import configure_logging

    settings = Settings()
    configure_logging(settings.log_level)
    return create_app(settings)


def served_app() -> Starlette:
    """The app of an ``atrium serve`` worker, its SIGTERM made a drain. uvicorn calls this
    factory in the worker's main thread, its event loop running and its signal handlers in
    place."""
    app = app_from_environment()
    services: Services = app.state.services
    Drain(services, services.settings.shutdown_grace).install()
    return app


def _caches(settings: Settings) -> Caches:
    redis = None
    if settings.redis_url:
        import redis.asyncio as aioredis

        # Short timeouts: a Redis that stops answering must not hold requests up.
        redis = aioredis.from_url(
            settings.redis_url, socket_timeout=0.5, socket_connect_timeout=0.5
        )
    return Caches(
        redis=redis,
        prefix=settings.cache_prefix,
        max_entries=settings.cache_max_entries,
        max_bytes=settings.cache_max_bytes,
        ttl=settings.cache_ttl,
    )


async def _repeat(job: BackgroundJob, services: Services) -> None:
    """Run a job every interval on one replica: each round, the replica that claims the job
    (``sources.jobs``) runs it, and the others wait for the next round."""
    holder = f"{socket.gethostname()}:{os.getpid()}"
    counted_as_job()  # this task's statements are not a request's
    while True:
        try:
            if await claim_run(services.database, job.name, job.interval, holder):
                services.metrics.job_runs.labels(job.name).inc()
                await job.run(services)
        except asyncio.CancelledError:
            raise
        except DatabaseUnavailable as exc:  # said once by sources.db; the next run tries again
            log.info("background job skipped: %s", exc, extra={"job": job.name})
        except Exception:
            log.exception("background job failed", extra={"job": job.name})
        await asyncio.sleep(job.interval)


async def _healthz(request: Request) -> Response:
    return PlainTextResponse("ok")


async def _readyz(request: Request) -> Response:
    services: Services = request.app.state.services
    if services.draining:  # stopping: balancers must send nothing new here
        return JSONResponse({"replica": "draining"}, status_code=503)
    checks: dict[str, str] = {}
    db = services.db
    if db is None or not await db.ping():
        checks["database"] = "unreachable"
    else:
        checks["database"] = "ok"
        try:
            pending = await pending_migrations(db, services.assembly.migrations)
        except DatabaseUnavailable:  # gone since it answered the ping
            checks["database"] = "unreachable"
        except MigrationError as exc:
            checks["migrations"] = str(exc)
        else:
            checks["migrations"] = "ok" if not pending else f"{len(pending)} pending"
    ready = all(value == "ok" for value in checks.values())
    return JSONResponse(checks, status_code=200 if ready else 503)


async def _metrics(request: Request) -> Response:
    services: Services = request.app.state.services
    if services.hot is not None:  # the requests it answered and has not counted yet
        services.hot.flush()
        services.metrics.hot_answers.set(services.hot.answered)
    if services.db is not None:
        services.metrics.sql_queries.set(services.db.queries + services.db.job_queries)
        await services.metrics.refresh(services)
    if services.caches is not None:
        services.metrics.cache_counts(services.caches.stats.counts)
    return Response(
        services.metrics.render(), media_type="text/plain; version=0.0.4; charset=utf-8"
    )
