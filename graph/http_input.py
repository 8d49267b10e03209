"""Reading a GraphQL-over-HTTP request from its ASGI scope: the media type to answer in, CSRF
prevention, the GET parameters or the POST body (capped before it is read whole), and the
operations in it. Nothing here runs anything; a request that cannot be read is an HTTPError.

A console asks the same few persisted GETs over and over: what a query string or an Accept
header decodes to is remembered, so a repeated GET costs dictionary lookups.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qsl

import orjson

from graph.types import Receive, Scope
from sources.text import unstorable

__all__ = [
    "GRAPHQL_RESPONSE",
    "HTML",
    "JSON",
    "GetOperations",
    "HTTPError",
    "Incoming",
    "Operation",
    "media_type_essence",
    "negotiate",
    "read_get",
    "read_post",
    "refuse_simple_request",
]

GRAPHQL_RESPONSE = "application/graphql-response+json"
JSON = "application/json"
HTML = "text/html"
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


@dataclass(slots=True, eq=False)
class Operation:
    """One operation of a request. Those of GET requests are shared by every request with the
    same query string: read them, never change them."""

    query: str | None
    variables: dict[str, Any] | None
    operation_name: str | None
    extensions: dict[str, Any] | None
    label: str | None = field(init=False)
    # The variables in one canonical spelling, for cache keys; worked out on first need.
    _variables_key: str | None = field(init=False, default=None)
    # What a GET's repeats need not work out again: the document its hash names (documents
    # never change under a hash) and the shared key of its answer.
    document: Any = field(init=False, default=None)
    public_key: str | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        name = self.operation_name
        if not name:
            match = _OPERATION_NAME.match(self.query or "")
            name = match[1] if match else None
        self.label = name

    @property
    def variables_key(self) -> str:
        if self._variables_key is None:
            try:
                key = orjson.dumps(self.variables or {}, option=orjson.OPT_SORT_KEYS)
            except orjson.JSONEncodeError:
                # orjson writes at most 254 levels (the body parser reads a thousand): no
                # page sends such variables, and none could be kept under a key.
                raise HTTPError(
                    400, "variables are nested too deep to be keyed", code="BAD_USER_INPUT"
                ) from None
            self._variables_key = key.decode()
        return self._variables_key


@dataclass(slots=True)
class Incoming:
    """A request's operations, and whether they came as a batch (a JSON list)."""

    method: str
    operations: list[Operation]
    batch: bool = False


def read_get(
    scope: Scope, headers: dict[bytes, bytes], operations: GetOperations, *, csrf_prevention: bool
) -> Incoming:
    """A GET's operation, from its query string (nothing to await: the hot path)."""
    if csrf_prevention:
        refuse_simple_request(headers)
    return Incoming("GET", [operations.of(scope.get("query_string", b""))])


async def read_post(
    scope: Scope,
    receive: Receive,
    headers: dict[bytes, bytes],
    *,
    csrf_prevention: bool,
    max_body_bytes: int,
    max_batch: int,
) -> Incoming:
    method: str = scope["method"]
    if method != "POST":
        raise HTTPError(405, "use GET or POST", {"Allow": "GET, POST"})
    if csrf_prevention:
        refuse_simple_request(headers)
    payload = await _read_post(headers, receive, max_body_bytes)
    if not isinstance(payload, list):
        return Incoming(method, [operation_of(payload)])
    if not payload:
        raise HTTPError(400, "an empty batch has nothing to run")
    if len(payload) > max_batch:
        raise HTTPError(400, f"a batch may hold at most {max_batch} operations")
    return Incoming(method, [operation_of(p) for p in payload], batch=True)


# Apollo Server's CSRF rule: a request a browser could send cross-site without a preflight
# (no Content-Type, or one of these three) must carry one of these headers, non-empty.
_SIMPLE_CONTENT_TYPES = frozenset(
    {"text/plain", "application/x-www-form-urlencoded", "multipart/form-data"}
)
_PREFLIGHT_HEADERS = (
    b"apollo-require-preflight",
    b"x-apollo-operation-name",
    b"graphql-require-preflight",
)
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")


def refuse_simple_request(headers: dict[bytes, bytes]) -> None:
    """Refuse what a page elsewhere could make a signed-in browser send (Apollo's rule)."""
    content_type = headers.get(b"content-type")
    if content_type is not None and media_type_essence(content_type) not in _SIMPLE_CONTENT_TYPES:
        return  # a type a browser preflights, or one that does not parse
    if any(headers.get(name) for name in _PREFLIGHT_HEADERS):
        return
    raise HTTPError(
        400,
        "This operation has been blocked as a potential Cross-Site Request Forgery (CSRF). "
        "Send a Content-Type other than text/plain, application/x-www-form-urlencoded or "
        "multipart/form-data (application/json, say), or a non-empty apollo-require-preflight "
        "(or graphql-require-preflight, or x-apollo-operation-name) header.",
        code="CSRF_PREVENTED",
    )


def media_type_essence(value: bytes) -> str | None:
    """``type/subtype`` of a Content-Type, lowercase, as WHATWG's MIME sniffing parses it;
    None when it does not parse."""
    found: str | None = _ESSENCES.get(value)
    if found is None:
        text = value.decode("latin-1").split(";", 1)[0].strip(" \t\r\n")
        kind, slash, subtype = text.partition("/")
        found = text.lower() if slash and _TOKEN.match(kind) and _TOKEN.match(subtype) else ""
        _ESSENCES.put(value, found)
    return found or None


def negotiate(accept: bytes | None) -> str:
    """The response media type for an Accept header; ``text/html`` means a browser asked.

    No Accept at all is answered in ``application/graphql-response+json`` (the draft's rule
    since its 2025 watershed); ``*/*`` and ``application/*`` in ``application/json``, which
    legacy clients read whatever the status."""
    if not accept:
        return GRAPHQL_RESPONSE
    found: str | None = _ACCEPT.get(accept)
    if found is None:
        found = _rank(accept.decode("latin-1"))
        _ACCEPT.put(accept, found)
    return found


def _rank(accept: str) -> str:
    ranked: list[tuple[float, int, str]] = []
    for index, part in enumerate(accept.split(",")):
        media, _, params = part.strip().partition(";")
        quality = 1.0
        for param in params.split(";"):
            key, _, value = param.strip().partition("=")
            if key.strip().lower() == "q":
                try:
                    quality = float(value)
                except ValueError:
                    quality = 0.0
        if quality > 0:
            ranked.append((-quality, index, media.strip().lower()))
    for _, _, media in sorted(ranked):
        if media == GRAPHQL_RESPONSE:
            return GRAPHQL_RESPONSE
        if media in (JSON, "application/*", "*/*"):
            return JSON
        if media == HTML:
            return HTML
    raise HTTPError(406, f"this endpoint answers {GRAPHQL_RESPONSE} or {JSON}")


class _Memo:
    """A small LRU of a pure function's results on short inputs."""

    def __init__(self, size: int = 1024, longest: int = 4096) -> None:
        self.size = size
        self.longest = longest
        self._items: OrderedDict[bytes, Any] = OrderedDict()

    def get(self, key: bytes) -> Any:
        found = self._items.get(key)
        if found is not None:
            self._items.move_to_end(key)
        return found

    def put(self, key: bytes, value: Any) -> None:
        if len(key) <= self.longest:
            self._items[key] = value
            if len(self._items) > self.size:
                self._items.popitem(last=False)


_ACCEPT = _Memo(size=256)
_ESSENCES = _Memo(size=256)


class GetOperations:
    """GET operations by query string, one app's: an operation remembers what its repeats
    need not work out again (its document, its answer's key), which is the app's own."""

    def __init__(self, size: int = 1024) -> None:
        self._memo = _Memo(size=size)

    def of(self, query_string: bytes) -> Operation:
        found: Operation | None = self._memo.get(query_string)
        if found is not None:
            return found
        params: dict[str, Any] = dict(
            parse_qsl(query_string.decode("latin-1"), keep_blank_values=True, encoding="utf-8")
        )
        for key in ("variables", "extensions"):
            if params.get(key):
                try:
                    params[key] = orjson.loads(params[key])
                except orjson.JSONDecodeError:
                    raise HTTPError(400, f"the {key} parameter is not valid JSON") from None
            else:
                params.pop(key, None)
        operation = operation_of(params)
        self._memo.put(query_string, operation)
        return operation


async def _read_post(headers: dict[bytes, bytes], receive: Receive, limit: int) -> Any:
    content_type = headers.get(b"content-type")
    if content_type is None or media_type_essence(content_type) != JSON:
        raise HTTPError(415, f"POST a body of type {JSON}")
    declared = headers.get(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise HTTPError(413, f"the body is larger than {limit} bytes")
    chunks = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            raise HTTPError(400, "the client went away before the body was read")
        chunk: bytes = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            raise HTTPError(413, f"the body is larger than {limit} bytes")
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
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
    for key, text in (("query", query), ("operationName", name)):
        why = unstorable(text) if text else None
        if why is not None:  # escaped inside a string literal (\u0000), it would be fine
            raise HTTPError(400, f"{key} {why}, which Atrium cannot store", code="BAD_USER_INPUT")
    return Operation(query or None, variables, name or None, extensions)
