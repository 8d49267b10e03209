"""Writing a GraphQL-over-HTTP answer: the body and status of a result as the draft says them,
the caching headers of a GET, ``304 Not Modified`` for a client that has the answer already.

Status codes under ``application/graphql-response+json``: a request that fails before execution
(a document that does not parse or validate, variables that do not coerce) is 400 and has no
``data``; anything that executed is 200. Under ``application/json`` every executed answer is
200, as legacy clients (Apollo Client among them) expect.

Whatever the media type, an answer the database's absence spoiled is 503 with ``Retry-After``:
the request was fine and may be sent again shortly, which clients and balancers should know
rather than read a 200 with nothing in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

import orjson
from graphql import GraphQLError
from strawberry.types import ExecutionResult
from strawberry.types.execution import PreExecutionError

from graph.errors import format_error
from graph.http_input import JSON, HTTPError
from graph.settings import Settings
from graph.types import Send
from loaders.responses import CachedAnswer
from sources.errors import DatabaseUnavailable

__all__ = [
    "INTERNAL_ERROR",
    "NO_CACHE",
    "NO_STORE",
    "RETRY_AFTER",
    "Outcome",
    "cache_headers",
    "encode_json",
    "error_outcome",
    "in_response_order",
    "result_outcome",
    "send_outcome",
    "unavailable_outcome",
]

Headers = list[tuple[bytes, bytes]]

NO_STORE: Final = [(b"cache-control", b"no-store")]
# An answer a client must not cache: a persisted-query miss, which it follows with the text.
NO_CACHE: Final = [(b"cache-control", b"private, no-cache, must-revalidate")]
# Seconds before trying again when the database is away: a restart or failover takes a few.
RETRY_AFTER: Final = (b"retry-after", b"2")
INTERNAL_ERROR: Final = {
    "errors": [
        {"message": "Internal server error", "extensions": {"code": "INTERNAL_SERVER_ERROR"}}
    ]
}


@dataclass(slots=True)
class Outcome:
    """What to send: status, body, extra headers, and the ETag of a cacheable GET answer."""

    status: int
    body: bytes
    label: str | None = None
    headers: Headers = field(default_factory=list)
    etag: bytes | None = None
    # How long, and for whom, an error-free answer may be kept: (max-age, private); None when
    # it may not be (errors, or a field with no cache hint).
    policy: tuple[int, bool] | None = None
    # The response cache's key and answer, when this is a kept answer any anonymous viewer
    # is given (a GET's, public): graph.hot_answers may send it again.
    kept: tuple[str, CachedAnswer] | None = None


def result_outcome(result: ExecutionResult, media_type: str, label: str | None) -> Outcome:
    errors = result.errors or []
    failed_early = isinstance(result, PreExecutionError) or (
        result.data is None and bool(errors) and all(e.path is None for e in errors)
    )
    body: dict[str, Any] = {}
    if not failed_early:
        body["data"] = result.data
    if errors:
        body["errors"] = [format_error(e) for e in in_response_order(result.data, errors)]
    if result.extensions:
        body["extensions"] = result.extensions
    status = 400 if failed_early and media_type != JSON else 200
    if errors and any(isinstance(e.original_error, DatabaseUnavailable) for e in errors):
        return Outcome(503, encode_json(body), label, [RETRY_AFTER])
    return Outcome(status, encode_json(body), label)


def unavailable_outcome(exc: DatabaseUnavailable) -> Outcome:
    """The database failed before anything executed (a persisted document, a token)."""
    body = {"errors": [{"message": str(exc), "extensions": {"code": "UNAVAILABLE"}}]}
    return Outcome(503, encode_json(body), headers=[*NO_STORE, RETRY_AFTER])


def in_response_order(data: Any, errors: list[GraphQLError]) -> list[GraphQLError]:
    """Errors in the order of the positions they name in the answer (those naming none
    first), then by where they are in the document. The executor records them as they
    happen, which for concurrent resolvers is an accident of timing: in this order the same
    answer is the same bytes every time, whichever executor made it."""
    if len(errors) < 2:
        return errors
    return sorted(errors, key=lambda error: _error_position(data, error))


def _error_position(data: Any, error: GraphQLError) -> tuple[Any, ...]:
    position: list[tuple[Any, ...]] = []
    value = data
    for step in error.path or ():
        if isinstance(value, dict) and step in value:
            position.append((0, list(value).index(step)))
            value = value[step]
        elif isinstance(value, list) and isinstance(step, int) and step < len(value):
            position.append((0, step))
            value = value[step]
        else:  # below a position that was nulled: nothing left to walk
            value = None
            position.append((1, 0, step) if isinstance(step, int) else (1, 1, str(step)))
    locations = tuple((loc.line, loc.column) for loc in error.locations or ())
    return (error.path is not None, tuple(position), locations, error.message)


def error_outcome(exc: HTTPError) -> Outcome:
    body = {"errors": [{"message": exc.message, "extensions": {"code": exc.code}}]}
    headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in exc.headers.items()]
    return Outcome(exc.status, encode_json(body), headers=headers)


def vary_header(settings: Settings) -> tuple[bytes, bytes]:
    """What a cacheable answer varies with: the media type, and whatever says who is asking
    (a token, the trusted proxy's user header, and the cookies of a signed-in person's session
    or, in development, of the demo user), so a browser never shows one person's private
    answer to the next, nor a signed-in person's page to a visitor."""
    names = ["Accept", "Authorization", settings.user_header]
    if not settings.production or settings.oidc_issuer:
        names.append("Cookie")
    return (b"vary", ", ".join(names).encode("latin-1"))


def cache_headers(max_age: int, shared: bool, vary: tuple[bytes, bytes], age: int = 0) -> Headers:
    """``Cache-Control`` of an error-free GET answer; ``Age`` when it comes from a cache."""
    headers = [
        (b"cache-control", b"max-age=%d, %s" % (max_age, b"public" if shared else b"private")),
        vary,
    ]
    if age:
        headers.append((b"age", b"%d" % age))
    return headers


def encode_json(body: Any) -> bytes:
    try:
        return orjson.dumps(body)
    except TypeError:
        # A message quoting a client's lone surrogate: JSON cannot carry it as it is.
        return orjson.dumps(_replace_surrogates(body))


def _replace_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return value.encode("utf-8", "replace").decode("utf-8")
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, GraphQLError):
        return _replace_surrogates(format_error(value))
    return value


async def send_outcome(
    send: Send, outcome: Outcome, media_type: str, if_none_match: bytes | None
) -> int:
    """Send the answer; returns the status sent (304 when the client's copy is current).
    ``outcome.headers`` is then every header the answer was sent with."""
    headers = outcome.headers
    etag = outcome.etag
    if etag is not None:
        headers.append((b"etag", etag))
        if if_none_match is not None and _matches(if_none_match, etag):
            await send({"type": "http.response.start", "status": 304, "headers": headers})
            await send({"type": "http.response.body", "body": b""})
            return 304
    body = outcome.body
    headers.append((b"content-type", media_type.encode("latin-1")))
    headers.append((b"content-length", b"%d" % len(body)))
    await send({"type": "http.response.start", "status": outcome.status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
    return outcome.status


def _matches(if_none_match: bytes, etag: bytes) -> bool:
    for candidate in if_none_match.split(b","):
        candidate = candidate.strip()
        if candidate == b"*" or candidate.removeprefix(b"W/") == etag:
            return True
    return False
