"""``/graphql`` over HTTP, as the GraphQL-over-HTTP draft describes it.

- ``application/graphql-response+json`` unless the client accepts only ``application/json``;
  under the former a request that fails before execution gets 400 (parse) or 422 (validation,
  variables), under the latter GraphQL errors travel with 200 as legacy clients expect.
- GET runs queries only: a mutation over GET is 405 with ``Allow: POST``.
- POST takes ``application/json`` (one operation, or a batch as a list); other bodies are 415.
- The body is capped before it is read whole, so a huge request costs nothing to refuse.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from graphql import GraphQLSyntaxError
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response
from strawberry.exceptions import MissingQueryError
from strawberry.http.ides import get_graphql_ide_html
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType

from graph.context import Context
from graph.errors import error_code, format_error
from graph.http_input import (
    GRAPHQL_RESPONSE,
    JSON,
    HTTPError,
    Operation,
    negotiate,
    operation_of,
    read_get,
    read_post,
    refuse_simple_get,
)
from graph.persisted import NO_CACHE, ProtocolError
from graph.services import Services
from loaders.responses import CachedAnswer, etag_of
from sources.auth import Viewer
from sources.errors import NotAuthenticated

__all__ = ["graphql_endpoint", "subscriptions"]

log = logging.getLogger("atrium.http")

_QUERY_ONLY = frozenset({OperationType.QUERY})
_ALL_OPERATIONS = frozenset({OperationType.QUERY, OperationType.MUTATION})


@dataclass(slots=True)
class Outcome:
    status: int
    body: bytes
    label: str | None
    headers: dict[str, str] = field(default_factory=dict)
    etag: str | None = None  # error-free answers only


async def graphql_endpoint(request: Request) -> Response:
    services: Services = request.app.state.services
    started = time.perf_counter()
    media_type = JSON
    label: str | None = None
    try:
        # One dict for the headers this view reads (Starlette's Headers scans a list each time).
        headers = dict(request.scope["headers"])
        accept = headers.get(b"accept")
        media_type = negotiate(accept.decode("latin-1") if accept is not None else None)
        if request.method == "GET" and media_type == "text/html":
            return _ide(services)
        if media_type == "text/html":
            raise HTTPError(406, f"use Accept: {GRAPHQL_RESPONSE} or {JSON}")
        if request.method not in ("GET", "POST"):
            raise HTTPError(405, "use GET or POST", {"Allow": "GET, POST"})
        if request.method == "GET" and services.settings.csrf_prevention:
            refuse_simple_get(headers)
        payload = (
            read_get(request) if request.method == "GET" else await read_post(request, services)
        )
        try:
            viewer = await services.viewer(request)
        except NotAuthenticated as exc:
            raise HTTPError(
                401, str(exc), {"WWW-Authenticate": "Bearer"}, "UNAUTHENTICATED"
            ) from None
        if not viewer.scopes:
            raise HTTPError(
                401,
                "sign in or use an API token: anonymous reading is off",
                {"WWW-Authenticate": "Bearer"},
                "UNAUTHENTICATED",
            )
        request_ = _Request(request, services, viewer, media_type)
        if isinstance(payload, list):
            if not payload:
                raise HTTPError(400, "an empty batch has nothing to run")
            if len(payload) > services.settings.max_batch:
                raise HTTPError(
                    400, f"a batch may hold at most {services.settings.max_batch} operations"
                )
            # One context for the whole batch: its operations share loaders, not answers.
            context = await services.context(request, viewer)
            outcomes = [await request_.run(operation_of(p), context) for p in payload]
            label = ",".join(o.label or "anonymous" for o in outcomes)
            outcome = Outcome(200, b"[" + b",".join(o.body for o in outcomes) + b"]", label)
        else:
            outcome = await request_.run(operation_of(payload), None)
            label = outcome.label
        response = _respond(headers.get(b"if-none-match"), outcome, media_type)
        status = response.status_code  # 304 when the client has the answer already
    except HTTPError as exc:
        status = exc.status
        response = Response(
            orjson.dumps({"errors": [{"message": exc.message, "extensions": {"code": exc.code}}]}),
            status_code=exc.status,
            media_type=media_type if media_type != "text/html" else JSON,
            headers=exc.headers,
        )
    elapsed = time.perf_counter() - started
    services.metrics.observe_request(label, status, elapsed)
    if log.isEnabledFor(logging.INFO):
        log.info(
            "graphql request",
            extra={
                "method": request.method,
                "operation": label or "anonymous",
                "status": status,
                "duration_ms": round(elapsed * 1000, 2),
            },
        )
    return response


def _respond(if_none_match: bytes | None, outcome: Outcome, media_type: str) -> Response:
    """The HTTP answer; a GET whose ETag the client already has is answered 304."""
    headers = outcome.headers
    if outcome.etag is not None:
        headers["ETag"] = outcome.etag
        if if_none_match is not None and _matches(if_none_match.decode("latin-1"), outcome.etag):
            return Response(status_code=304, headers=headers)
    return Response(
        outcome.body, status_code=outcome.status, media_type=media_type, headers=headers
    )


def _matches(if_none_match: str, etag: str) -> bool:
    for candidate in if_none_match.split(","):
        candidate = candidate.strip()
        if candidate == "*" or candidate.removeprefix("W/") == etag:
            return True
    return False


class _Request:
    """One HTTP request's operations: the response cache in front of execution."""

    def __init__(self, request: Request, services: Services, viewer: Viewer, media_type: str):
        self.request = request
        self.services = services
        self.viewer = viewer
        self.media_type = media_type
        self.get = request.method == "GET"

    async def run(self, operation: Operation, context: Context | None) -> Outcome:
        services = self.services
        try:
            prepared = await services.persisted.prepare(
                services.database, operation.query, operation.extensions
            )
        except ProtocolError as exc:
            raise HTTPError(exc.status, str(exc), code=exc.code) from None
        if prepared.answer is not None:
            return Outcome(200, orjson.dumps(prepared.answer), operation.label, dict(NO_CACHE))
        operation.query = prepared.query
        responses = services.responses if context is None else None  # not within batches
        keys: tuple[str, str] | None = None
        since = 0
        if (
            responses is not None
            and prepared.digest is not None
            and not services.assembly.policies.never_cached(
                operation.query, operation.operation_name
            )
        ):
            keys = self._cache_keys(prepared.digest, operation)
            cached = await responses.get(*keys)
            if cached is not None:
                return Outcome(
                    200,
                    cached.body,
                    operation.label,
                    self._cache_headers(cached.max_age, cached.private, cached.age),
                    cached.etag if self.get else None,
                )
            since = responses.begin()
        if context is None:
            context = await services.context(self.request, self.viewer)
        result = await self._execute(operation, context)
        if prepared.store_as and operation.query and not isinstance(result, PreExecutionError):
            await services.persisted.remember(services.database, prepared.store_as, operation.query)
        label = operation.label
        for error in result.errors or ():
            services.metrics.errors.labels(
                services.metrics.operation_label(label), error_code(error)
            ).inc()
        body = orjson.dumps(_body(result))
        outcome = Outcome(_status(result, self.media_type), body, label)
        policy = context.cache if not result.errors else None
        if policy is None or policy.seconds <= 0:
            if self.get:
                outcome.headers["Cache-Control"] = "no-store"
            return outcome
        answer = CachedAnswer(body, etag_of(body), policy.seconds, policy.private, time.time())
        if self.get:
            outcome.etag = answer.etag
            outcome.headers.update(self._cache_headers(answer.max_age, answer.private, 0))
        if keys is not None and responses is not None:
            await responses.put(keys[1] if policy.private else keys[0], answer, context.tags, since)
        return outcome

    async def _execute(self, operation: Operation, context: Context) -> ExecutionResult:
        try:
            return await self.services.execute(
                operation.query,
                operation.variables,
                operation.operation_name,
                request=self.request,
                allowed=_QUERY_ONLY if self.get else _ALL_OPERATIONS,
                context=context,
            )
        except InvalidOperationTypeError as exc:
            if exc.operation_type is OperationType.MUTATION and self.get:
                raise HTTPError(
                    405, "mutations are not allowed over GET; use POST", {"Allow": "POST"}
                ) from None
            raise HTTPError(400, "subscriptions need a websocket") from None
        except CannotGetOperationTypeError as exc:
            raise HTTPError(400, exc.as_http_error_reason()) from None
        except MissingQueryError:
            raise HTTPError(400, "no query was given") from None

    def _cache_keys(self, digest: str, operation: Operation) -> tuple[str, str]:
        """The answer's key if it is the same for everyone, and if it is the viewer's own."""
        variables = orjson.dumps(operation.variables or {}, option=orjson.OPT_SORT_KEYS)
        base = f"{digest}|{operation.operation_name or ''}|{variables.decode()}"
        viewer = self.viewer
        return f"public|{base}", f"viewer|{viewer.via}|{viewer.ref}|{viewer.token_name}|{base}"

    def _cache_headers(self, max_age: int, private: bool, age: int) -> dict[str, str]:
        if not self.get:
            return {}
        # Without anonymous reading, shared caches must not hand answers to anyone who asks.
        shared = not private and self.services.settings.anonymous_read
        headers = {
            "Cache-Control": f"max-age={max_age}, {'public' if shared else 'private'}",
            "Vary": "Accept, Authorization",
        }
        if age:
            headers["Age"] = str(age)
        return headers


def _status(result: ExecutionResult, media_type: str) -> int:
    if media_type == JSON or not result.errors or result.data is not None:
        return 200
    if isinstance(result, PreExecutionError):
        return 400 if any(isinstance(e, GraphQLSyntaxError) for e in result.errors) else 422
    # No data and errors without a path: the variables did not coerce.
    return 422 if all(e.path is None for e in result.errors) else 200


def _body(result: ExecutionResult) -> dict[str, Any]:
    body: dict[str, Any] = {}
    if not isinstance(result, PreExecutionError) and not (
        result.data is None and result.errors and all(e.path is None for e in result.errors)
    ):
        body["data"] = result.data
    if result.errors:
        body["errors"] = [format_error(e) for e in result.errors]
    if result.extensions:
        body["extensions"] = result.extensions
    return body


def _ide(services: Services) -> Response:
    if services.settings.production:
        raise HTTPError(406, f"use Accept: {GRAPHQL_RESPONSE} or {JSON}")
    return HTMLResponse(get_graphql_ide_html(graphql_ide="graphiql"))


def subscriptions(services: Services) -> Any:
    """Subscriptions over websockets (the graphql-transport-ws protocol), with the same context
    and viewer as HTTP requests."""
    from strawberry.asgi import GraphQL
    from strawberry.subscriptions import GRAPHQL_TRANSPORT_WS_PROTOCOL

    class SubscriptionView(GraphQL):
        # Strawberry types the context as None by default; ours is the Context dataclass.
        async def get_context(self, request: Any, response: Any = None) -> Context:  # type: ignore[override]
            return await services.context(request)

    assert services.assembly.schema is not None
    return SubscriptionView(
        services.assembly.schema,
        subscription_protocols=(GRAPHQL_TRANSPORT_WS_PROTOCOL,),
        graphql_ide=None,
    )
