"""Reading a GraphQL-over-HTTP request: the media type asked for, CSRF prevention, the GET
parameters or the POST body (capped before it is read whole), and the operations in it."""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson
from starlette.requests import Request

from graph.services import Services

__all__ = [
    "GRAPHQL_RESPONSE",
    "JSON",
    "HTTPError",
    "Operation",
    "negotiate",
    "operation_of",
    "read_get",
    "read_post",
    "refuse_simple_get",
]

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
_OPERATION_NAME = re.compile(r"^\s*(?:query|mutation|subscription)\s+([_A-Za-z][_0-9A-Za-z]*)")


class HTTPError(Exception):
    """A request the server will not run: answered with ``status`` and one error message."""

    def __init__(
        self,
        status: int,
        message: str,
        headers: dict[str, str] | None = None,
        code: str = "BAD_REQUEST",
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.headers = headers or {}
        self.code = code


@dataclass(slots=True)
class Operation:
    query: str | None
    variables: dict[str, Any] | None
    operation_name: str | None
    extensions: dict[str, Any] | None

    @property
    def label(self) -> str | None:
        if self.operation_name:
            return self.operation_name
        match = _OPERATION_NAME.match(self.query or "")
        return match[1] if match else None


# Any of these makes a GET one a browser would preflight cross-site (Apollo's CSRF rule).
_PREFLIGHT_HEADERS = (b"apollo-require-preflight", b"x-apollo-operation-name", b"x-atrium-client")


def refuse_simple_get(headers: dict[bytes, bytes]) -> None:
    if not any(name in headers for name in _PREFLIGHT_HEADERS):
        raise HTTPError(
            400,
            "GET requests must carry an apollo-require-preflight (or x-apollo-operation-name) "
            "header: without one a browser could send them cross-site",
            code="CSRF_PREVENTED",
        )


def negotiate(accept: str | None) -> str:
    """The response media type for an Accept header; ``text/html`` means a browser asked."""
    if not accept:
        return GRAPHQL_RESPONSE
    found: str | None = _ACCEPT.get(accept)
    if found is None:
        found = _rank(accept)
        _ACCEPT.put(accept, found)
    return found


def _rank(accept: str) -> str:
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate(accept.split(",")):
        media, _, params = part.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            ranked.append((-quality, index, media.strip().lower()))
    for _, _, media in sorted(ranked):
        if media in (GRAPHQL_RESPONSE, "application/*", "*/*"):
            return GRAPHQL_RESPONSE
        if media == JSON:
            return JSON
        if media == "text/html":
            return "text/html"
    raise HTTPError(406, f"this endpoint answers {GRAPHQL_RESPONSE} or {JSON}")


class _Memo:
    """A small LRU of pure functions' results on short inputs. A console asks the same few
    persisted GETs over and over: their query strings are decoded once."""

    def __init__(self, size: int = 1024, longest: int = 4096) -> None:
        self.size = size
        self.longest = longest
        self._items: OrderedDict[Any, Any] = OrderedDict()

    def get(self, key: Any) -> Any:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: Any, value: Any) -> None:
        if len(key) <= self.longest:
            self._items[key] = value
            if len(self._items) > self.size:
                self._items.popitem(last=False)


_GET_PARAMS = _Memo()
_ACCEPT = _Memo(size=256)


def read_get(request: Request) -> dict[str, Any]:
    """The GET parameters, with variables and extensions decoded. The result may be shared by
    requests with the same query string: read it, never change it."""
    raw: bytes = request.scope.get("query_string", b"")
    found: dict[str, Any] | None = _GET_PARAMS.get(raw)
    if found is not None:
        return found
    params: dict[str, Any] = dict(request.query_params)
    for key in ("variables", "extensions"):
        if params.get(key):
            try:
                params[key] = orjson.loads(params[key])
            except orjson.JSONDecodeError:
                raise HTTPError(400, f"the {key} parameter is not valid JSON") from None
    _GET_PARAMS.put(raw, params)
    return params


async def read_post(request: Request, services: Services) -> Any:
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type != JSON:
        raise HTTPError(415, f"POST a body of type {JSON}")
    limit = services.settings.max_body_bytes
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPError(413, f"the body is larger than {limit} bytes")
    chunks = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise HTTPError(413, f"the body is larger than {limit} bytes")
        chunks.append(chunk)
    try:
        return orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError as exc:
        raise HTTPError(400, f"the body is not valid JSON: {exc}") from None


def operation_of(payload: Any) -> Operation:
    if not isinstance(payload, dict):
        raise HTTPError(400, "a request is a JSON object with a query")
    query = payload.get("query")
    variables = payload.get("variables")
    name = payload.get("operationName")
    extensions = payload.get("extensions")
    if query is not None and not isinstance(query, str):
        raise HTTPError(400, "query must be a string")
    if variables is not None and not isinstance(variables, dict):
        raise HTTPError(400, "variables must be an object")
    if name is not None and not isinstance(name, str):
        raise HTTPError(400, "operationName must be a string")
    if extensions is not None and not isinstance(extensions, dict):
        raise HTTPError(400, "extensions must be an object")
    if not query and not (extensions or {}).get("persistedQuery"):
        raise HTTPError(400, "no query was given")
    return Operation(query or None, variables, name or None, extensions)
