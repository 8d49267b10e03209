"""``check_hostile_inputs``: every argument of every field a plugin adds, given each hostile
value of its type (``hostile_values``), must answer or fail cleanly: an HTTP status below 500
and errors that carry an ``extensions.code`` other than ``INTERNAL_SERVER_ERROR`` (what an
exception a resolver did not mean to raise becomes). Strings, IDs and JSON get the hostile
strings, Ints the hostile integers, lists of them a list of one, and the fields of input
objects each in turn.

Subscription fields get the same values over in-process websockets
(``subscription_failures``: all of a caller's at once, a hundred a connection as Strawberry
allows, waiting until each has answered or its connection has gone quiet). A clean answer
there is an ``error`` message, a ``next`` with data or with errors carrying a code other than
``INTERNAL_SERVER_ERROR``, or nothing yet (a subscription waiting for events); never the
connection closed by the server (1011 for a crash, 4500...) nor an error Strawberry logged
from an operation's task."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

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
    plugin_subscriptions,
    schema_of,
)

__all__ = [
    "PER_CONNECTION",
    "HostileInputFailures",
    "check_hostile_inputs",
    "subscription_failures",
]

_STRING_SCALARS = ("String", "ID", "JSON")
# Operations a websocket runs at once: Strawberry's max_subscriptions_per_connection, which
# Atrium keeps; one more is refused with an error saying so.
PER_CONNECTION: Final = 100
_LIMIT_REACHED: Final = "Subscription limit reached"


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
                    whole = (
                        [item]
                        if isinstance(get_nullable_type(argument.type), GraphQLList)
                        else item
                    )
                    yield f"{name}.{inner}", {name: whole}


def _problem(status: int, text: str) -> str | None:
    """What is wrong with an answer, or None when it is a clean one."""
    if status >= 500:
        return f"HTTP {status}: {text[:300]}"
    try:
        body = json.loads(text)
    except ValueError:
        return None if status < 400 else f"HTTP {status} without a GraphQL answer: {text[:300]}"
    return _errors_problem(body.get("errors") if isinstance(body, dict) else None, need_code=True)


def _errors_problem(errors: Any, *, need_code: bool) -> str | None:
    for error in errors if isinstance(errors, list) else ():
        code = (error.get("extensions") or {}).get("code") if isinstance(error, dict) else None
        if not code and need_code:
            return f"an error without extensions.code: {str(error)[:300]}"
        if code == "INTERNAL_SERVER_ERROR":
            return f"INTERNAL_SERVER_ERROR: {str(error)[:300]}"
    return None


def _subscription_problem(messages: Sequence[Mapping[str, Any]]) -> str | None:
    """What is wrong with a subscription's messages, or None when they are clean."""
    for message in messages:
        payload = message.get("payload")
        if message.get("type") == "next" and isinstance(payload, dict):
            problem = _errors_problem(payload.get("errors"), need_code=True)
        elif message.get("type") == "error":
            errors = payload if isinstance(payload, list) else []
            if any(isinstance(e, dict) and e.get("message") == _LIMIT_REACHED for e in errors):
                return "not run: more operations at once than a connection takes"
            # Refusals before execution (validation) carry no code; never an internal one.
            problem = _errors_problem(errors, need_code=False)
        else:
            continue
        if problem is not None:
            return problem
    return None


async def subscription_failures(
    client: Any,
    operations: Sequence[tuple[str, str, Mapping[str, Any]]],
    headers: Mapping[str, str] | None = None,
    *,
    quiet: float = 1.0,
    per_connection: int = PER_CONNECTION,
) -> list[str]:
    """Send every (label, document, variables) of ``operations`` as a subscription, all at
    once over in-process websockets of ``client`` (with ``headers``; ``per_connection`` on
    each, as many connections as that takes), and wait until each has answered or its
    connection has been quiet for ``quiet`` seconds: what was wrong, each named by its label
    (and, once each, a connection the server closed and an error Strawberry's operation
    tasks logged)."""
    batches = [
        operations[i : i + per_connection] for i in range(0, len(operations), per_connection)
    ]
    async with contextlib.AsyncExitStack() as stack:
        sockets = [await stack.enter_async_context(client.websocket(headers)) for _ in batches]
        for ws, batch in zip(sockets, batches, strict=True):
            for n, (_, query, variables) in enumerate(batch):
                await ws.subscribe(str(n), query, dict(variables))
        answers = await asyncio.gather(
            *(
                ws.settle([str(n) for n in range(len(batch))], quiet=quiet)
                for ws, batch in zip(sockets, batches, strict=True)
            )
        )
        closes = [ws.closed for ws in sockets]  # by the app: the client closes them after
    failures: list[str] = []
    for batch, found, closed in zip(batches, answers, closes, strict=True):
        for n, (label, _, _) in enumerate(batch):
            problem = _subscription_problem(found[str(n)])
            if problem is not None:
                failures.append(f"{label}: {problem}")
        if closed is not None:
            failures.append(f"the server closed the websocket: {closed.code} {closed.reason}")
    # Each connection's log handler saw every connection's operations.
    logged = dict.fromkeys(error for ws in sockets for error in ws.task_errors)
    failures += [f"an operation's task failed: {error[:300]}" for error in logged]
    return failures


def _cases(
    schema: GraphQLSchema, fields: Iterable[FieldRef], given: Mapping[str, Any]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """(label, document, variables) for each field, argument and hostile value."""
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
            yield f"{field} {hostile}={repr(arguments)[:120]}", query, variables


async def check_hostile_inputs(
    client: Any,
    plugin_id: str,
    *,
    values: Mapping[str, Any] | None = None,
    callers: Iterable[Any] | None = None,
    quiet: float = 1.0,
) -> int:
    """Send every argument of every field ``plugin_id`` adds (``plugin_fields``: its
    ``Query`` and ``Mutation`` fields, its fields on other types, its own types' fields; and
    ``plugin_subscriptions``, its ``Subscription`` fields, over a websocket) each hostile
    value, as each of ``callers`` (clients of the app; default: ``client`` as it is and as an
    admin, so that authorized mutations reach their resolvers). Other arguments, and those
    on the path to a field of another type, take ``values`` by name, else plain values; a
    caller's subscriptions are all sent at once and each given until the connection has
    been ``quiet`` that many seconds to answer. Raises ``HostileInputFailures`` listing every
    server error; returns the number of operations sent."""
    schema = schema_of(client)
    given = dict(values or {})
    if callers is None:
        token = await client.admin_token()
        pairs = [(client, {}), (client, {"Authorization": f"Bearer {token}"})]
    else:
        pairs = [(caller, {}) for caller in callers]
    failures: list[str] = []
    sent = 0
    for label, query, variables in _cases(schema, plugin_fields(client, plugin_id), given):
        for caller, headers in pairs:
            sent += 1
            response = await caller.post(
                "/graphql",
                # As a browser's JSON.stringify writes it: a lone surrogate as \ud800.
                content=json.dumps({"query": query, "variables": variables}),
                headers={**headers, "content-type": "application/json"},
            )
            problem = _problem(response.status_code, response.text)
            if problem is not None:
                failures.append(f"{label}: {problem}")
    subscriptions = list(_cases(schema, plugin_subscriptions(client, plugin_id), given))
    for caller, headers in pairs:
        sent += len(subscriptions)
        failures += await subscription_failures(caller, subscriptions, headers, quiet=quiet)
    if failures:
        raise HostileInputFailures(failures, sent)
    return sent
