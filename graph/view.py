"""``/graphql`` over HTTP: one request's way from bytes in to bytes out, step by step.

=========================  ====================  ==========================================
step                       module                what
=========================  ====================  ==========================================
read the request           graph.http_input      media type, CSRF, GET parameters or body
who is asking              graph.auth.viewer     token, trusted proxy, session, anonymous
for each operation:
  which document           graph.persisted       APQ hashes, trusted documents
  a kept answer?           loaders.responses     by document, variables and viewer
  execute                  graph.services        the schema, with the request's context
  learn the document       graph.persisted       an APQ registration that validated
  encode                   graph.http_output     body and status as the draft says
  keep the answer          loaders.responses     as its cache policy allows
send                       graph.http_output     caching headers, ETag, 304
count and log              graph.services        metrics, the access log
=========================  ====================  ==========================================

``graphql_http`` is an ASGI app of its own that the app calls before Starlette's routing: a
console's hot path is a GET answered from the response cache, and what it costs is mostly
what is done around that lookup. The database out of reach is a 503 (``UNAVAILABLE``), at
whichever step it shows; whatever goes wrong unexpectedly is a logged 500, both in the same
JSON shape as every other error.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Final

import orjson
from starlette.requests import Request
from starlette.responses import HTMLResponse
from strawberry.exceptions import MissingQueryError
from strawberry.http.ides import get_graphql_ide_html
from strawberry.schema.exceptions import CannotGetOperationTypeError, InvalidOperationTypeError
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError
from strawberry.types.graphql import OperationType

from graph.auth.viewer import ANONYMOUS_READ_OFF, may_read, viewer_without_token
from graph.context import Context
from graph.hot_answers import HOT_KEY
from graph.http_input import (
    GRAPHQL_RESPONSE,
    HTML,
    JSON,
    HTTPError,
    Operation,
    negotiate,
    read_get,
    read_post,
)
from graph.http_output import (
    INTERNAL_ERROR,
    NO_CACHE,
    NO_STORE,
    Outcome,
    cache_headers,
    encode_json,
    error_outcome,
    result_outcome,
    send_outcome,
    unavailable_outcome,
)
from graph.persisted import Document, PersistedQueryMiss
from graph.services import Services
from graph.types import Receive, Scope, Send
from loaders import responses as kept_answers
from loaders.responses import CachedAnswer, etag_of, shared_answer_key, viewer_answer_key
from sources.auth import Viewer
from sources.errors import DatabaseUnavailable, NotAuthenticated

__all__ = ["graphql_http", "run_in_process"]

log = logging.getLogger("atrium.http")

_QUERY_ONLY: Final = frozenset({OperationType.QUERY})
_ALL_OPERATIONS: Final = frozenset({OperationType.QUERY, OperationType.MUTATION})


async def graphql_http(scope: Scope, receive: Receive, send: Send) -> None:
    services: Services = scope["app"].state.services
    started = time.perf_counter()
    headers: dict[bytes, bytes] = dict(scope["headers"])
    media_type = JSON
    try:
        media_type = negotiate(headers.get(b"accept"))
        if media_type == HTML:
            await _ide(scope, receive, send, services)
            return
        outcome = await _answer(scope, receive, headers, services, media_type)
    except HTTPError as exc:
        media_type = JSON if media_type == HTML else media_type
        outcome = error_outcome(exc)
    except DatabaseUnavailable as exc:
        media_type = JSON if media_type == HTML else media_type
        outcome = unavailable_outcome(exc)
    except Exception:
        log.exception("unexpected error answering a GraphQL request")
        outcome = Outcome(500, encode_json(INTERNAL_ERROR))
    status = await send_outcome(send, outcome, media_type, headers.get(b"if-none-match"))
    services.record_request(scope["method"], outcome.label, status, time.perf_counter() - started)
    if outcome.kept is not None and status == 200:
        _keep_hot(scope, services, outcome, outcome.kept)


def _keep_hot(
    scope: Scope, services: Services, outcome: Outcome, kept: tuple[str, CachedAnswer]
) -> None:
    """Let the HTTP protocol send this kept public answer again itself (graph.hot_answers),
    when the request is one it could answer (it said so by its key) and the answer is still
    the response cache's: it may have been dropped while it was being sent."""
    key = scope.get(HOT_KEY)
    hot, responses = services.hot, services.responses
    if key is None or hot is None or responses is None or services.draining:
        return
    response_key, answer = kept
    if responses.holds(response_key, answer):
        hot.fill(key, response_key, answer.stored_at, outcome.headers, outcome.body, outcome.label)


async def _answer(
    scope: Scope,
    receive: Receive,
    headers: dict[bytes, bytes],
    services: Services,
    media_type: str,
) -> Outcome:
    settings = services.settings
    if scope["method"] == "GET":  # the hot path: nothing to await until the answer
        incoming = read_get(
            scope, headers, services.get_operations, csrf_prevention=settings.csrf_prevention
        )
    else:
        incoming = await read_post(
            scope,
            receive,
            headers,
            csrf_prevention=settings.csrf_prevention,
            max_body_bytes=settings.max_body_bytes,
            max_batch=settings.max_batch,
        )
    client = scope.get("client")
    host = client[0] if client else None
    identity = services.identity
    viewer = viewer_without_token(
        headers, host, settings, identity.sessions if identity is not None else None
    )
    if viewer is None:
        viewer = await _verified_viewer(services, headers, host)
    if not may_read(viewer):
        raise HTTPError(
            401,
            ANONYMOUS_READ_OFF,
            {"WWW-Authenticate": "Bearer"},
            "UNAUTHENTICATED",
        )
    exchange = _Exchange(scope, receive, services, viewer, media_type, incoming.method == "GET")
    if not incoming.batch:
        return await exchange.run(incoming.operations[0])
    # One context for the whole batch: its operations share loaders, not answers.
    context = await exchange.context()
    outcomes = [await exchange.run(operation, context) for operation in incoming.operations]
    label = ",".join(o.label or "anonymous" for o in outcomes)
    return Outcome(200, b"[" + b",".join(o.body for o in outcomes) + b"]", label)


async def _verified_viewer(
    services: Services, headers: dict[bytes, bytes], host: str | None
) -> Viewer:
    try:
        return await services.viewer_of(headers, host)
    except NotAuthenticated as exc:
        raise HTTPError(401, str(exc), {"WWW-Authenticate": "Bearer"}, "UNAUTHENTICATED") from None


class _Exchange:
    """The operations of one request, as one viewer, answered in one media type."""

    def __init__(
        self,
        scope: Scope,
        receive: Receive,
        services: Services,
        viewer: Viewer,
        media_type: str,
        get: bool,
    ) -> None:
        self.scope = scope
        self.receive = receive
        self.services = services
        self.viewer = viewer
        self.media_type = media_type
        self.get = get

    async def context(self) -> Context:
        return await self.services.context(Request(self.scope, self.receive), self.viewer)

    async def run(self, operation: Operation, context: Context | None = None) -> Outcome:
        services = self.services
        document: Document | None = operation.document
        if document is None:
            try:
                document = await services.persisted.document(
                    services.database, operation.query, operation.extensions
                )
            except PersistedQueryMiss as miss:
                body = encode_json({"errors": [miss.error]})
                return Outcome(200, body, operation.label, [*NO_CACHE])
            if document.digest is not None and not document.new:
                operation.document = document  # what a hash names never changes

        # Answers are kept for persisted documents run on their own (not within batches).
        responses = services.responses if context is None else None
        keys: tuple[str, str] | None = None
        since = 0
        if (
            responses is not None
            and document.digest is not None
            and not services.assembly.policies.never_cached(document.text, operation.operation_name)
        ):
            shared = operation.public_key
            if shared is None:
                shared = shared_answer_key(
                    document.digest, operation.operation_name, operation.variables_key
                )
                if not document.new:
                    operation.public_key = shared
            keys = (shared, viewer_answer_key(shared, self.viewer))
            kept = await responses.get(*keys)
            if kept is not None:
                # An answer kept under this document and name: that ran.
                services.metrics.know(operation.label)
                return self._kept(kept, operation.label, shared)
            since = responses.begin()

        if context is None:
            context = await self.context()
        result = await self._execute(document, operation, context)
        if document.new and not isinstance(result, PreExecutionError):
            await services.persisted.learn(services.database, document)
        if document.digest is not None and (result.data is not None or not result.errors):
            # A known document ran under this name: one of its own operations' (a name it does
            # not have fails before anything runs). Any other name stays one label.
            services.metrics.know(operation.label)
        services.metrics.count_errors(operation.label, result.errors)
        outcome = result_outcome(result, self.media_type, operation.label)

        policy = context.cache if not result.errors else None
        if policy is None or policy.seconds <= 0:
            if self.get:
                outcome.headers += NO_STORE
            return outcome
        body = outcome.body
        answer = CachedAnswer(
            body, etag_of(body), policy.seconds, policy.private, kept_answers.clock()
        )
        outcome.policy = (answer.max_age, answer.private)
        if self.get:
            outcome.etag = answer.etag.encode("latin-1")
            outcome.headers += cache_headers(
                answer.max_age, self._shared(answer.private), self.services.vary
            )
        if keys is not None and responses is not None:
            await responses.put(keys[1] if policy.private else keys[0], answer, context.tags, since)
        return outcome

    def _kept(self, answer: CachedAnswer, label: str | None, shared_key: str) -> Outcome:
        policy = (max(0, int(answer.remaining)), answer.private)
        if not self.get:
            return Outcome(200, answer.body, label, policy=policy)
        shared = self._shared(answer.private)
        return Outcome(
            200,
            answer.body,
            label,
            cache_headers(answer.max_age, shared, self.services.vary, answer.age),
            answer.etag.encode("latin-1"),
            policy,
            (shared_key, answer) if shared else None,
        )

    def _shared(self, private: bool) -> bool:
        # Without anonymous reading, shared caches must not hand answers to anyone who asks.
        return not private and self.services.settings.anonymous_read

    async def _execute(
        self, document: Document, operation: Operation, context: Context
    ) -> ExecutionResult:
        try:
            return await self.services.execute(
                document.text,
                operation.variables,
                operation.operation_name,
                allowed=_QUERY_ONLY if self.get else _ALL_OPERATIONS,
                context=context,
                known=document.digest is not None,
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


async def run_in_process(
    services: Services,
    scope: Scope,
    viewer: Viewer,
    digest: str,
    operation_name: str,
    variables: dict[str, Any],
) -> Outcome:
    """Run a persisted query by its hash for a page the server renders, as a GET of it
    would run (the same document store, response cache, policies and ETags), without an
    HTTP hop. HTTPError and PersistedQueryMiss propagate, and DatabaseUnavailable is raised
    when the database spoiled the answer: the page is then a 503 as a whole."""
    exchange = _Exchange(scope, _no_body, services, viewer, JSON, get=True)
    operation = Operation(
        None, variables, operation_name, {"persistedQuery": {"version": 1, "sha256Hash": digest}}
    )
    outcome = await exchange.run(operation)
    if outcome.status == 503:
        errors = orjson.loads(outcome.body).get("errors") or []
        raise DatabaseUnavailable(
            next(e["message"] for e in errors if e["extensions"]["code"] == "UNAVAILABLE")
        )
    return outcome


async def _no_body() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


async def _ide(scope: Scope, receive: Receive, send: Send, services: Services) -> None:
    if scope["method"] != "GET" or services.settings.production:
        raise HTTPError(406, f"use Accept: {GRAPHQL_RESPONSE} or {JSON}")
    page = HTMLResponse(get_graphql_ide_html(graphql_ide="graphiql"))
    await page(scope, receive, send)
