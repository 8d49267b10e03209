"""One request to the catalog REST API, from who is asking to the answer, counted.

Every route is a ``Handler`` wrapped by ``endpoint``, which does what ``/graphql`` does around
its execution: who is asking (a bearer token, the trusted proxy's user, or anonymous while
anonymous reading is on; ``graph.auth``), a kept answer (``loaders.responses``, keyed by the
request's path and query, dropped when anything it read changes), the request's ``Context``
(its loaders and their caches), caching headers with an ETag and 304, and ``/metrics`` by
route and status. Errors are Backstage's bodies::

    {"error": {"name": "InputError", "message": "..."},
     "request": {"method": "GET", "url": "/api/catalog/entities?filter=..."},
     "response": {"statusCode": 400}}
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from graph.auth.viewer import ANONYMOUS_READ_OFF, may_read, viewer_without_token
from graph.catalog.types import CATALOG_CACHE
from graph.context import Context
from graph.http_output import cache_headers, encode_json
from graph.services import Services
from loaders.responses import CachedAnswer, etag_of
from sources.auth import Viewer
from sources.errors import CatalogError, NotAuthenticated

__all__ = ["Answer", "ApiError", "Call", "Handler", "endpoint", "not_found"]

log = logging.getLogger("atrium.catalog_api")

JSON: Final = "application/json; charset=utf-8"
# As long as GraphQL answers about the catalog may be kept: changes drop kept answers at once.
MAX_AGE: Final = int(CATALOG_CACHE.max_age or 0)


class ApiError(Exception):
    """An answer in Backstage's error shape; ``name`` is Backstage's error class."""

    def __init__(self, status: int, name: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.name = name
        self.message = message


def not_found(message: str) -> ApiError:
    return ApiError(404, "NotFoundError", message)


@dataclass(slots=True)
class Call:
    """What a handler reads: the request, its context, and its query's parameters."""

    request: Request
    context: Context

    async def fresh_context(self) -> Context:
        """Another context for the same viewer, with loaders of its own."""
        services: Services = self.request.app.state.services
        return await services.context(self.request, self.context.viewer)

    def values(self, name: str) -> list[str]:
        return self.request.query_params.getlist(name)

    def value(self, name: str) -> str | None:
        found = self.request.query_params.getlist(name)
        return found[-1] if found else None

    def integer(self, name: str, *, minimum: int) -> int | None:
        text = self.value(name)
        if text is None:
            return None
        try:
            number = int(text)
        except ValueError:
            raise ApiError(400, "InputError", f"Invalid {name}, not an integer") from None
        if number < minimum or number >= 2**31:
            bound = "greater than zero" if minimum == 1 else "zero or greater"
            raise ApiError(400, "InputError", f"Invalid {name}, must be {bound}")
        return number


@dataclass(slots=True)
class Answer:
    """A handler's answer: JSON, or bytes streamed as they come (never kept). ``tags`` name
    what it was made of beyond what loaders fetched (``kind:<kind>``, ``catalog``)."""

    body: Any = None
    stream: AsyncIterator[bytes] | None = None
    headers: dict[str, str] = field(default_factory=dict)
    tags: tuple[str, ...] = ()


Handler = Callable[[Call], Awaitable[Answer]]


def endpoint(route: str, handler: Handler) -> Callable[[Request], Awaitable[Response]]:
    """A Starlette endpoint for ``handler``; ``route`` is its template, for metrics."""

    async def serve(request: Request) -> Response:
        services: Services = request.app.state.services
        started = time.perf_counter()
        try:
            response = await _answer(request, services, handler)
        except ApiError as exc:
            response = _error(request, exc)
        except CatalogError as exc:  # the client's filter, field, order or ref
            response = _error(request, ApiError(400, "InputError", str(exc)))
        except Exception:
            log.exception("unexpected error answering a catalog API request")
            response = _error(request, ApiError(500, "Error", "Internal server error"))
        services.metrics.observe_route(route, response.status_code, time.perf_counter() - started)
        return response

    return serve


async def _answer(request: Request, services: Services, handler: Handler) -> Response:
    viewer = await _viewer(request, services)
    responses = services.responses if request.method == "GET" else None
    key = f"public|catalog-api|{request.url.path}?{request.url.query}"
    if responses is not None:
        kept = await responses.get(key)
        if kept is not None:
            return _kept(request, services, kept)
    since = responses.begin() if responses is not None else 0
    context = await services.context(request, viewer)
    answer = await handler(Call(request, context))
    if answer.stream is not None:
        # Made as it is sent: no ETag to revalidate it by, so nothing keeps it.
        headers = {**answer.headers, "cache-control": "no-store"}
        return StreamingResponse(answer.stream, media_type=JSON, headers=headers)
    body = encode_json(answer.body)
    if request.method != "GET":
        return Response(body, media_type=JSON, headers=answer.headers)
    kept = CachedAnswer(body, etag_of(body), MAX_AGE, False, time.time())
    if responses is not None:
        await responses.put(key, kept, {*context.tags, *answer.tags}, since)
    return _kept(request, services, kept, answer.headers)


async def _viewer(request: Request, services: Services) -> Viewer:
    headers = dict(request.scope["headers"])
    client = request.client.host if request.client else None
    viewer = viewer_without_token(headers, client, services.settings)
    if viewer is None:
        try:
            viewer = await services.viewer_of(headers, client)
        except NotAuthenticated as exc:
            raise ApiError(401, "AuthenticationError", str(exc)) from None
    if not may_read(viewer):
        raise ApiError(401, "AuthenticationError", ANONYMOUS_READ_OFF)
    return viewer


def _kept(
    request: Request,
    services: Services,
    answer: CachedAnswer,
    headers: dict[str, str] | None = None,
) -> Response:
    """A kept (or just made) answer with its caching headers; 304 when the client has it."""
    shared = services.settings.anonymous_read
    extra = {
        k.decode("latin-1"): v.decode("latin-1")
        for k, v in cache_headers(answer.max_age, shared, services.vary, answer.age)
    }
    extra = {**extra, **(headers or {}), "etag": answer.etag}
    wanted = request.headers.get("if-none-match")
    if wanted is not None and answer.etag in (
        t.strip().removeprefix("W/") for t in wanted.split(",")
    ):
        return Response(status_code=304, headers=extra)
    return Response(answer.body, media_type=JSON, headers=extra)


def _error(request: Request, exc: ApiError) -> Response:
    url = request.url.path + (f"?{request.url.query}" if request.url.query else "")
    body = {
        "error": {"name": exc.name, "message": exc.message},
        "request": {"method": request.method, "url": url},
        "response": {"statusCode": exc.status},
    }
    headers = {"www-authenticate": "Bearer"} if exc.status == 401 else None
    return Response(encode_json(body), exc.status, media_type=JSON, headers=headers)
