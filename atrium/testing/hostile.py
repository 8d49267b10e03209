"""``check_hostile_inputs``: every argument of every field a plugin adds, given each hostile
value of its type (``hostile_values``), must answer or fail cleanly: an HTTP status below 500
and errors that carry an ``extensions.code`` other than ``INTERNAL_SERVER_ERROR`` (what an
exception a resolver did not mean to raise becomes). Strings, IDs and JSON get the hostile
strings, Ints the hostile integers, lists of them a list of one, and the fields of input
objects each in turn."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from graphql import (
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLScalarType,
    GraphQLSchema,
    get_named_type,
    get_nullable_type,
)

from atrium.testing.hostile_values import HOSTILE_INTS, HOSTILE_STRINGS
from atrium.testing.operations import (
    FieldRef,
    for_type,
    operation_for,
    plain_value,
    plugin_fields,
    schema_of,
)

__all__ = ["HostileInputFailures", "check_hostile_inputs"]

_STRING_SCALARS = ("String", "ID", "JSON")


class HostileInputFailures(AssertionError):
    """Hostile values that made server errors: ``failures`` says, for each, the field, the
    argument, the value and the answer."""

    def __init__(self, failures: list[str], sent: int) -> None:
        self.failures = failures
        self.sent = sent
        shown = "\n".join(failures[:50])
        more = f"\n... and {len(failures) - 50} more" if len(failures) > 50 else ""
        super().__init__(
            f"{len(failures)} of {sent} operations with hostile values made server errors:\n"
            f"{shown}{more}"
        )


def hostile_values(kind: GraphQLInputType) -> Iterator[Any]:
    """The hostile values of an input type: strings for String, ID and JSON; integers for
    Int; a list of one for a list of those."""
    named = get_named_type(kind)
    values: Sequence[Any]
    if isinstance(named, GraphQLScalarType) and named.name in _STRING_SCALARS:
        values = HOSTILE_STRINGS
    elif isinstance(named, GraphQLScalarType) and named.name == "Int":
        values = HOSTILE_INTS
    else:
        return
    for value in values:
        yield [value] if isinstance(get_nullable_type(kind), GraphQLList) else value


def argument_cases(
    schema: GraphQLSchema, field: FieldRef, values: Mapping[str, Any]
) -> Iterator[tuple[str, dict[str, Any]]]:
    """(what is hostile, arguments) for each argument of ``field`` and each hostile value;
    an input object's fields in turn, its other required fields plain."""
    parent = schema.get_type(field.type_name)
    definition = parent.fields[field.field_name]  # type: ignore[union-attr]
    for name, argument in definition.args.items():
        for value in hostile_values(argument.type):
            yield name, {name: value}
        named = get_named_type(argument.type)
        if isinstance(named, GraphQLInputObjectType):
            base = plain_value(name, named, values)
            for inner, inner_field in named.fields.items():
                for value in hostile_values(inner_field.type):
                    item = {**base, inner: value}
                    whole = [item] if isinstance(
                        get_nullable_type(argument.type), GraphQLList
                    ) else item
                    yield f"{name}.{inner}", {name: whole}


def _problem(status: int, text: str) -> str | None:
    """What is wrong with an answer, or None when it is a clean one."""
    if status >= 500:
        return f"HTTP {status}: {text[:300]}"
    try:
        body = json.loads(text)
    except ValueError:
        return None if status < 400 else f"HTTP {status} without a GraphQL answer: {text[:300]}"
    for error in body.get("errors") or () if isinstance(body, dict) else ():
        code = (error.get("extensions") or {}).get("code")
        if not code:
            return f"an error without extensions.code: {str(error)[:300]}"
        if code == "INTERNAL_SERVER_ERROR":
            return f"INTERNAL_SERVER_ERROR: {str(error)[:300]}"
    return None


async def check_hostile_inputs(
    client: Any,
    plugin_id: str,
    *,
    values: Mapping[str, Any] | None = None,
    callers: Iterable[Any] | None = None,
) -> int:
    """Send every argument of every field ``plugin_id`` adds (``plugin_fields``: its
    ``Query`` and ``Mutation`` fields, its fields on other types, its own types' fields) each
    hostile value, as each of ``callers`` (clients of the app; default: ``client`` as it is
    and as an admin, so that authorized mutations reach their resolvers). Other arguments, and
    those on the path to a field of another type, take ``values`` by name, else plain
    values. Raises ``HostileInputFailures`` listing every server error; returns the number of
    operations sent."""
    schema = schema_of(client)
    given = dict(values or {})
    if callers is None:
        token = await client.admin_token()
        callers = [(client, {}), (client, {"Authorization": f"Bearer {token}"})]
    else:
        callers = [(caller, {}) for caller in callers]
    failures: list[str] = []
    sent = 0
    fields = plugin_fields(client, plugin_id)
    for field in fields:
        try:
            cases = list(argument_cases(schema, field, for_type(given, field.type_name)))
        except LookupError:
            continue
        for hostile, arguments in cases:
            try:
                query, variables = operation_for(schema, field, arguments, given)
            except LookupError:
                break  # no path from the root reaches the type: nothing to send
            for caller, headers in callers:
                sent += 1
                response = await caller.post(
                    "/graphql",
                    # As a browser's JSON.stringify writes it: a lone surrogate as \\ud800.
                    content=json.dumps({"query": query, "variables": variables}),
                    headers={**headers, "content-type": "application/json"},
                )
                problem = _problem(response.status_code, response.text)
                if problem is not None:
                    shown = repr(arguments)[:120]
                    failures.append(f"{field} {hostile}={shown}: {problem}")
    if failures:
        raise HostileInputFailures(failures, sent)
    return sent
