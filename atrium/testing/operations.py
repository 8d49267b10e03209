"""A plugin's fields, and operations that reach each of them from the root.

A field of ``Query``, ``Mutation`` or ``Subscription`` is asked directly (a subscription's
over a websocket: ``plugin_subscriptions`` lists a plugin's); a field a plugin adds to another type
(``Component.onCall``) is reached by the shortest path of fields from ``Query`` to that type
(``entity(ref: $ref) { ... on Component { onCall } }``), through interfaces and unions with
inline fragments. Arguments along the way, and arguments the check does not vary, take the
value ``values`` names for them, else a plain one of their type; so give ``values`` refs of
the data the app holds (``{"ref": "component:default/checkout"}``) for the path to find
something, and per type where they differ (``{"Group": {"ref": "group:default/team"}}``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from graphql import (
    GraphQLArgument,
    GraphQLEnumType,
    GraphQLField,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLInterfaceType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLSchema,
    GraphQLUnionType,
    OperationType,
    get_named_type,
    get_nullable_type,
    is_leaf_type,
)
from graphql.pyutils import Undefined

__all__ = [
    "FieldRef",
    "Step",
    "operation_for",
    "path_to",
    "plugin_fields",
    "plugin_queries",
    "plugin_subscriptions",
]
_ROOT_KINDS = {"Mutation": "mutation", "Subscription": "subscription"}

# What a required argument costs a path when no value is given for it: a path through
# arguments the caller named is preferred, then one with none.
_UNNAMED_ARGUMENT_COST = 3
_MAX_PATH = 6


@dataclass(frozen=True, slots=True)
class FieldRef:
    """A field a plugin adds: ``type_name.field_name`` in the schema."""

    type_name: str
    field_name: str

    def __str__(self) -> str:
        return f"{self.type_name}.{self.field_name}"


@dataclass(frozen=True, slots=True)
class Step:
    """One field on the way from the root: selected on ``on`` (an inline fragment's type,
    when the field's parent is abstract), with its required arguments."""

    field_name: str
    on: str | None
    arguments: tuple[str, ...]


def schema_of(client: Any) -> GraphQLSchema:
    schema: GraphQLSchema = client.services.assembly.schema._schema
    return schema


def _contribution(client: Any, plugin_id: str) -> Any:
    assembly = client.services.assembly
    contribution = assembly.contributions.get(plugin_id)
    if contribution is None:
        raise LookupError(
            f"the app has no plugin {plugin_id!r} (it has {', '.join(assembly.plugin_ids)})"
        )
    return contribution


def plugin_subscriptions(client: Any, plugin_id: str) -> list[FieldRef]:
    """The ``Subscription`` fields ``plugin_id`` adds, in schema order."""
    contribution = _contribution(client, plugin_id)
    names = client.services.assembly.schema.config.name_converter
    return [
        FieldRef("Subscription", names.get_graphql_name(f))
        for cls in contribution.subscription
        for f in cls.__strawberry_definition__.fields
    ]


def plugin_fields(client: Any, plugin_id: str) -> list[FieldRef]:
    """Every field ``plugin_id`` adds, subscriptions aside (``plugin_subscriptions``): to
    ``Query`` and ``Mutation``, to other types (``extend_type``), and the fields of types of
    its own; in schema order."""
    assembly = client.services.assembly
    contribution = _contribution(client, plugin_id)
    names = assembly.schema.config.name_converter
    schema = schema_of(client)
    classes: list[tuple[str, type]] = [
        *(("Query", c) for c in contribution.query),
        *(("Mutation", c) for c in contribution.mutation),
        *((t, c) for t, added in contribution.type_extensions.items() for c, _ in added),
    ]
    found: list[FieldRef] = []
    for type_name, cls in classes:
        if schema.get_type(type_name) is None:  # an optional extension of an absent type
            continue
        found += [
            FieldRef(type_name, names.get_graphql_name(f))
            for f in cls.__strawberry_definition__.fields  # type: ignore[attr-defined]
        ]
    for cls in contribution.types:
        definition = cls.__strawberry_definition__
        if definition.is_input:
            continue
        type_name = names.from_type(definition)
        kind = schema.get_type(type_name)
        if isinstance(kind, GraphQLObjectType | GraphQLInterfaceType):
            found += [FieldRef(type_name, name) for name in kind.fields]
    return list(dict.fromkeys(found))


def path_to(schema: GraphQLSchema, type_name: str, values: Mapping[str, Any]) -> list[Step]:
    """The cheapest path of fields from ``Query`` to an object of ``type_name``; [] for
    ``Query`` itself. Raises LookupError when no path reaches it."""
    if type_name == "Query":
        return []
    # Dijkstra over types: a step costs 1, and more for each required argument unnamed.
    best: dict[str, int] = {"Query": 0}
    frontier: list[tuple[int, str, list[Step]]] = [(0, "Query", [])]
    while frontier:
        frontier.sort(key=lambda item: (item[0], len(item[2])))
        cost, current, path = frontier.pop(0)
        if current == type_name:
            return path
        if len(path) >= _MAX_PATH or cost > best.get(current, 1 << 30):
            continue
        parent = schema.get_type(current)
        assert isinstance(parent, GraphQLObjectType | GraphQLInterfaceType)
        for name, field in parent.fields.items():
            required = tuple(a for a, arg in field.args.items() if _required(arg))
            total = cost + 1 + sum(_UNNAMED_ARGUMENT_COST for a in required if a not in values)
            for reached, on in _reached(schema, get_named_type(field.type)):
                if total < best.get(reached, 1 << 30):
                    best[reached] = total
                    frontier.append((total, reached, [*path, Step(name, on, required)]))
    raise LookupError(f"no path of fields from Query reaches {type_name}")


def _reached(schema: GraphQLSchema, target: Any) -> Iterator[tuple[str, str | None]]:
    """The object and interface types a field returning ``target`` may give."""
    if isinstance(target, GraphQLObjectType):
        yield target.name, None
    elif isinstance(target, GraphQLInterfaceType):
        yield target.name, None
        for possible in schema.get_possible_types(target):
            yield possible.name, possible.name
    elif isinstance(target, GraphQLUnionType):
        for possible in target.types:
            yield possible.name, possible.name


def _required(argument: GraphQLArgument) -> bool:
    return isinstance(argument.type, GraphQLNonNull) and argument.default_value is Undefined


def plain_value(name: str, kind: GraphQLInputType, values: Mapping[str, Any]) -> Any:
    """``values[name]``, else a plain value of ``kind``."""
    if name in values:
        return values[name]
    named = get_named_type(kind)
    value: Any
    if isinstance(named, GraphQLEnumType):
        value = next(iter(named.values))
    elif isinstance(named, GraphQLInputObjectType):
        value = {
            field_name: plain_value(field_name, field.type, values)
            for field_name, field in named.fields.items()
            if isinstance(field.type, GraphQLNonNull) and field.default_value is Undefined
        }
    elif named.name == "Int":
        value = 1
    elif named.name == "Float":
        value = 1.0
    elif named.name == "Boolean":
        value = False
    else:
        value = "x"
    return [value] if isinstance(get_nullable_type(kind), GraphQLList) else value


def selection(schema: GraphQLSchema, kind: Any, depth: int = 2) -> str:
    """A selection set of a field's type: its leaf fields without required arguments, and
    (``depth`` levels down) its object fields likewise; empty for a leaf type."""
    named = get_named_type(kind)
    if is_leaf_type(named):
        return ""
    if not isinstance(named, GraphQLObjectType | GraphQLInterfaceType) or depth <= 0:
        return " { __typename }"
    parts = ["__typename"]
    for name, field in named.fields.items():
        if any(_required(a) for a in field.args.values()):
            continue
        inner = get_named_type(field.type)
        if is_leaf_type(inner):
            parts.append(name)
        elif depth > 1:
            parts.append(name + selection(schema, field.type, depth - 1))
    return " { " + " ".join(parts) + " }"


def operation_for(
    schema: GraphQLSchema,
    field: FieldRef,
    arguments: Mapping[str, Any],
    values: Mapping[str, Any],
    *,
    depth: int = 1,
) -> tuple[str, dict[str, Any]]:
    """An operation selecting ``field`` with ``arguments`` (and plain or named values for its
    other required arguments), reached from the root; all values as variables. A field of
    ``Mutation`` or ``Subscription`` makes a mutation or a subscription."""
    values = for_type(values, field.type_name)
    declarations: list[str] = []
    variables: dict[str, Any] = {}

    def bind(definition: GraphQLField, given: Mapping[str, Any]) -> str:
        passed = []
        for name, argument in definition.args.items():
            if name in given:
                value = given[name]
            elif _required(argument):
                value = plain_value(name, argument.type, values)
            else:
                continue
            variable = f"v{len(variables)}"
            declarations.append(f"${variable}: {argument.type}")
            variables[variable] = value
            passed.append(f"{name}: ${variable}")
        return f"({', '.join(passed)})" if passed else ""

    kind = _ROOT_KINDS.get(field.type_name, "query")
    steps = [] if kind != "query" else path_to(schema, field.type_name, values)
    root = schema.get_root_type(OperationType(kind))
    assert root is not None
    opened: list[str] = []
    parent: Any = root
    for step in steps:
        definition = parent.fields[step.field_name]
        opened.append(f"{step.field_name}{bind(definition, {})} {{")
        parent = get_named_type(definition.type)
        if step.on is not None:
            opened.append(f"... on {step.on} {{")
            parent = schema.get_type(step.on)
    definition = parent.fields[field.field_name]
    call = bind(definition, arguments)
    body = f"{field.field_name}{call}{selection(schema, definition.type, depth)}"
    text = " ".join([*opened, body, *("}" for _ in opened)])
    head = f"({', '.join(declarations)})" if declarations else ""
    return f"{kind} Check{head} {{ {text} }}", variables


def for_type(values: Mapping[str, Any], type_name: str) -> dict[str, Any]:
    """``values`` with, for fields of ``type_name``, the overrides ``values[type_name]``
    holds (``{"ref": "component:default/a", "Group": {"ref": "group:default/b"}}``)."""
    found = {k: v for k, v in values.items() if not (k[:1].isupper() and isinstance(v, dict))}
    overrides = values.get(type_name)
    return {**found, **overrides} if isinstance(overrides, dict) else found


def plugin_queries(
    client: Any, plugin_id: str, values: Mapping[str, Any] | None = None, *, depth: int = 2
) -> list[tuple[str, dict[str, Any]]]:
    """A query for each field ``plugin_id`` adds outside ``Mutation``, reached from the root,
    its required arguments given ``values`` (by argument name) or plain values, selecting
    ``depth`` levels of what it returns: (document, variables) pairs for
    ``check_plan_equivalence``."""
    schema = schema_of(client)
    found = []
    for field in plugin_fields(client, plugin_id):
        if field.type_name == "Mutation":
            continue
        try:
            found.append(operation_for(schema, field, {}, values or {}, depth=depth))
        except LookupError:
            continue  # a type of its own no field returns
    return found
