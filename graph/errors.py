"""How errors leave the API: a stable ``extensions.code`` on each, masking of the unexpected.

Codes follow Apollo's so clients can branch on them: ``GRAPHQL_PARSE_FAILED``,
``GRAPHQL_VALIDATION_FAILED``, ``BAD_USER_INPUT``, ``NOT_FOUND``, ``INTERNAL_SERVER_ERROR``;
``UNAVAILABLE`` when a backend (the database, Prometheus, a cluster) cannot answer now.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from typing import Any

import strawberry
from graphql import GraphQLError, GraphQLSyntaxError
from strawberry.extensions import SchemaExtension
from strawberry.relay import GlobalIDValueError
from strawberry.types import ExecutionContext

from sources.errors import (
    CatalogError,
    ChangeHookError,
    DatabaseUnavailable,
    NotAuthenticated,
    NotAuthorized,
    NotFound,
)

__all__ = ["AtriumSchema", "MaskUnexpectedErrors", "error_code", "format_error", "mask_unexpected"]

log = logging.getLogger("atrium.errors")

# Errors a client caused, mapped to their codes; anything else is unexpected.
_USER_ERRORS: dict[type[Exception], str] = {
    NotAuthenticated: "UNAUTHENTICATED",
    NotAuthorized: "FORBIDDEN",
    NotFound: "NOT_FOUND",  # before CatalogError: the first class that matches gives the code
    CatalogError: "BAD_USER_INPUT",
    ChangeHookError: "BAD_USER_INPUT",
    DatabaseUnavailable: "UNAVAILABLE",  # the answer is 503 (graph.http_output)
    # Strawberry raises it only on a global ID a client sent: one naming a type that is not
    # a Node (node(id:) with "Query:x" in base64), or not a type at all.
    GlobalIDValueError: "BAD_USER_INPUT",
}


def error_code(error: GraphQLError) -> str:
    code = (error.extensions or {}).get("code")
    if isinstance(code, str):
        return code
    if isinstance(error, GraphQLSyntaxError):
        return "GRAPHQL_PARSE_FAILED"
    original = error.original_error
    if original is None:
        # graphql-core's own errors: validation, or variables that do not coerce.
        return "GRAPHQL_VALIDATION_FAILED" if error.path is None else "BAD_USER_INPUT"
    for cls, code in _USER_ERRORS.items():
        if isinstance(original, cls):
            return code
    if isinstance(original, GraphQLError):
        # A value a resolver could not take (a GlobalID that is not one, say): the client's.
        inner = (original.extensions or {}).get("code")
        if isinstance(inner, str):
            return inner
        return "BAD_USER_INPUT" if error.path is not None else error_code(original)
    return "INTERNAL_SERVER_ERROR"


def format_error(error: GraphQLError) -> dict[str, Any]:
    formatted = error.formatted
    formatted.setdefault("extensions", {})["code"] = error_code(error)
    return dict(formatted)


class AtriumSchema(strawberry.Schema):
    def process_errors(
        self, errors: list[GraphQLError], execution_context: ExecutionContext | None = None
    ) -> None:
        # A client's mistake is answered, not logged with a traceback; the unexpected is.
        for error in errors:
            if error_code(error) == "INTERNAL_SERVER_ERROR":
                log.error("unexpected error in resolver", exc_info=error.original_error)


class MaskUnexpectedErrors(SchemaExtension):
    """Production: unexpected errors say only that, keeping ``extensions.code`` for clients."""

    def on_operation(self) -> Iterator[None]:
        yield
        result = self.execution_context.result
        if result is None or not result.errors:
            return
        result.errors = mask_unexpected(result.errors)


def mask_unexpected(errors: list[GraphQLError]) -> list[GraphQLError]:
    """Errors as production shows them: the unexpected say only that, with their code."""
    return [
        GraphQLError(
            "Internal server error",
            nodes=e.nodes,
            source=e.source,
            positions=e.positions,
            path=e.path,
            extensions={"code": "INTERNAL_SERVER_ERROR"},
        )
        if error_code(e) == "INTERNAL_SERVER_ERROR"
        else e
        for e in errors
    ]
