"""GraphQL requests as the console sends them, as bytes for the load generator: a persisted
query asked by GET (Apollo's automatic persisted queries: the document's hash and the
variables, and the header CSRF prevention wants) and a POST carrying the document and its
hash (which registers it, or runs a trusted one)."""

from __future__ import annotations

from typing import Any, Final
from urllib.parse import urlencode

import orjson

from bench.harness.load import request_bytes
from sources.persisted import document_hash

__all__ = ["GET_HEADERS", "MEDIA_TYPE", "extensions", "get", "post", "query_string"]

MEDIA_TYPE: Final = "application/graphql-response+json"
GET_HEADERS: Final = {"apollo-require-preflight": "true", "accept": MEDIA_TYPE}


def extensions(document: str) -> dict[str, Any]:
    return {"persistedQuery": {"version": 1, "sha256Hash": document_hash(document)}}


def query_string(document: str, variables: dict[str, Any]) -> str:
    """The GET's query string: the hash and the variables only."""
    return urlencode(
        {
            "extensions": orjson.dumps(extensions(document)).decode(),
            "variables": orjson.dumps(variables).decode(),
        }
    )


def get(port: int, document: str, variables: dict[str, Any]) -> bytes:
    return request_bytes("GET", f"/graphql?{query_string(document, variables)}", port, GET_HEADERS)


def post(
    port: int, document: str, variables: dict[str, Any], headers: dict[str, str] | None = None
) -> bytes:
    body = {"query": document, "variables": variables, "extensions": extensions(document)}
    sent = {"content-type": "application/json", "accept": MEDIA_TYPE, **(headers or {})}
    return request_bytes("POST", "/graphql", port, sent, orjson.dumps(body))
