"""Cache hints on types and fields, and the cache policy of a response (Apollo's semantics).

A type or field says how long its data may be kept and by whom::

    @strawberry.type(directives=[CacheControl(max_age=60)])
    class Component: ...

    @strawberry.field(directives=[CacheControl(scope=CacheScope.PRIVATE)])
    def viewer(self) -> ...

A response may be kept for the smallest ``maxAge`` over the fields it selects, and only by the
viewer (``PRIVATE``) if any of them says so. Root fields and fields of object types count as 0
unless hinted (on the field, or on the type it returns); other fields inherit their parent's. A
field hint wins over its type's; ``inheritMaxAge`` makes a field or type take its parent's.

The policy is worked out from the document once (and cached): where Apollo looks at the objects
a request happened to resolve, this looks at what the document could resolve, so a field of an
interface type counts as the strictest of its implementations unless the interface is hinted.
Resolvers can only tighten it, for their request: ``info.context.cache.restrict(...)``.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from enum import Enum
from typing import Any

import strawberry
from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLField,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    OperationType,
    get_named_type,
    get_operation_ast,
    is_abstract_type,
    is_composite_type,
)
from strawberry.extensions import SchemaExtension
from strawberry.schema_directive import Location

from graph.documents import fragments_of, selected_fields

__all__ = [
    "CacheControl",
    "CacheHints",
    "CachePolicy",
    "CachePolicyExtension",
    "CacheScope",
    "PolicyCache",
    "static_policy",
]


@strawberry.enum(name="CacheControlScope")
class CacheScope(Enum):
    PUBLIC = "PUBLIC"
    PRIVATE = "PRIVATE"


@strawberry.schema_directive(
    name="cacheControl",
    locations=[
        Location.OBJECT,
        Location.INTERFACE,
        Location.UNION,
        Location.FIELD_DEFINITION,
    ],
    description="How long a cache may keep this, and whether only for the viewer.",
)
class CacheControl:
    # Unset arguments are left out of the printed schema.
    max_age: int | None = strawberry.UNSET
    scope: CacheScope | None = strawberry.UNSET
    inherit_max_age: bool | None = strawberry.UNSET


@dataclass(slots=True)
class CachePolicy:
    """One response's policy: the document's, tightened by what resolvers said."""

    max_age: float = math.inf
    private: bool = False

    def restrict(self, max_age: float | None = None, scope: CacheScope | None = None) -> None:
        if max_age is not None:
            self.max_age = min(self.max_age, max(0.0, max_age))
        if scope is CacheScope.PRIVATE:
            self.private = True

    @property
    def seconds(self) -> int:
        """Whole seconds a cache may keep the response (0: not at all)."""
        return 0 if self.max_age == math.inf else int(self.max_age)

    def header(self) -> str:
        """``Cache-Control`` for an error-free GET answer."""
        seconds = self.seconds
        if seconds <= 0:
            return "no-store"
        return f"max-age={seconds}, {'private' if self.private else 'public'}"

    def copy(self) -> CachePolicy:
        return CachePolicy(self.max_age, self.private)


@dataclass(frozen=True, slots=True)
class _Hint:
    max_age: int | None = None
    private: bool | None = None
    inherit: bool = False


_NO_HINT = _Hint()
# Types the schema gets from Strawberry itself, which cannot carry a directive.
_BUILT_IN = {"PageInfo": _Hint(inherit=True)}


def _hint_of(definition: Any) -> _Hint:
    for directive in getattr(definition, "directives", None) or ():
        if isinstance(directive, CacheControl):
            scope = directive.scope
            return _Hint(
                directive.max_age if isinstance(directive.max_age, int) else None,
                scope is CacheScope.PRIVATE if isinstance(scope, CacheScope) else None,
                directive.inherit_max_age is True,
            )
    return _NO_HINT


class CacheHints:
    """Every hint of a schema, read once from the Strawberry definitions behind it."""

    def __init__(self, schema: GraphQLSchema) -> None:
        self.schema = schema
        self.types: dict[str, _Hint] = {k: v for k, v in _BUILT_IN.items() if k in schema.type_map}
        self.fields: dict[tuple[str, str], _Hint] = {}
        for name, graphql_type in schema.type_map.items():
            definition = (graphql_type.extensions or {}).get("strawberry-definition")
            hint = _hint_of(definition)
            if hint is not _NO_HINT:
                self.types[name] = hint
            for field_name, field in getattr(graphql_type, "fields", {}).items():
                if not isinstance(graphql_type, GraphQLObjectType | GraphQLInterfaceType):
                    continue
                field_hint = _hint_of((field.extensions or {}).get("strawberry-definition"))
                if field_hint is not _NO_HINT:
                    self.fields[name, field_name] = field_hint
        # Abstract types without a hint of their own: the strictest of their possible types.
        for name, graphql_type in schema.type_map.items():
            if is_abstract_type(graphql_type) and name not in self.types:
                self.types[name] = self._strictest(graphql_type)

    def _strictest(self, abstract: Any) -> _Hint:
        possible = self.schema.get_possible_types(abstract)
        hints = [self.types.get(t.name, _NO_HINT) for t in possible]
        if not hints or any(h.max_age is None and not h.inherit for h in hints):
            max_age = 0
        else:
            max_age = min(h.max_age if h.max_age is not None else math.inf for h in hints)  # type: ignore[assignment]
        private = any(h.private for h in hints)
        return _Hint(None if max_age == math.inf else int(max_age), private or None)

    def type_hint(self, named: GraphQLNamedType) -> _Hint:
        return self.types.get(named.name, _NO_HINT)


def static_policy(
    hints: CacheHints, document: DocumentNode, operation_name: str | None
) -> CachePolicy | None:
    """The policy of a query's answers as the document alone decides it; None for a mutation
    or subscription (never cached) or a document without that operation."""
    operation = get_operation_ast(document, operation_name)
    if operation is None or operation.operation is not OperationType.QUERY:
        return None
    fragments = fragments_of(document)
    policy = CachePolicy()
    root = hints.schema.query_type
    assert root is not None
    for field, parent in selected_fields(hints.schema, operation.selection_set, root, fragments):
        _visit(hints, field, parent, None, policy, fragments)
    if policy.max_age == math.inf:
        policy.max_age = 0  # nothing hinted a lifetime
    return policy


def _visit(
    hints: CacheHints,
    node: FieldNode,
    parent: GraphQLNamedType,
    parent_age: float | None,
    policy: CachePolicy,
    fragments: dict[str, FragmentDefinitionNode],
) -> None:
    name = node.name.value
    if name == "__typename":
        return
    is_root = parent_age is None
    field: GraphQLField | None = None
    if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
        field = parent.fields.get(name)
    if field is None:  # introspection (__schema, __type): not kept
        policy.restrict(0)
        return
    named = get_named_type(field.type)
    composite = is_composite_type(named)
    field_hint = hints.fields.get((parent.name, name), _NO_HINT)
    type_hint = hints.type_hint(named) if composite else _NO_HINT
    age: float | None
    if field_hint.max_age is not None:
        age = field_hint.max_age
    elif field_hint.inherit or (type_hint.inherit and not is_root):
        age = parent_age
    elif type_hint.max_age is not None:
        age = type_hint.max_age
    elif composite or is_root:
        age = 0
    else:
        age = parent_age  # a leaf takes its parent's
    if age is not None:
        policy.restrict(age)
    private = field_hint.private if field_hint.private is not None else type_hint.private
    if private:
        policy.private = True
    if composite and node.selection_set is not None:
        below = age if age is not None else math.inf
        for child, on in selected_fields(hints.schema, node.selection_set, named, fragments):
            _visit(hints, child, on, below, policy, fragments)


class PolicyCache:
    """Policies by (document text, operation name), so a document is worked out once."""

    def __init__(self, maxsize: int = 1024) -> None:
        self.hints: CacheHints | None = None  # bound once the schema is built
        self.maxsize = maxsize
        self._items: OrderedDict[tuple[str | None, str | None], CachePolicy | None] = OrderedDict()

    def never_cached(self, query: str | None, operation_name: str | None) -> bool:
        """Whether answers to this document are known never to be kept (a mutation, or a
        policy of 0): the response cache need not even look."""
        key = (query, operation_name)
        if key not in self._items:
            return False
        policy = self._items[key]
        return policy is None or policy.seconds <= 0

    def __call__(
        self, query: str | None, operation_name: str | None, document: DocumentNode
    ) -> CachePolicy | None:
        if self.hints is None:
            return None
        key = (query, operation_name)
        if key in self._items:
            self._items.move_to_end(key)
            return self._items[key]
        policy = self._items[key] = static_policy(self.hints, document, operation_name)
        if len(self._items) > self.maxsize:
            self._items.popitem(last=False)
        return policy


class CachePolicyExtension(SchemaExtension):
    """Puts the document's policy on the request's context before execution, for the HTTP
    view to read after it (resolvers may have tightened it meanwhile)."""

    def __init__(self, policies: PolicyCache) -> None:
        self.policies = policies

    def on_execute(self) -> Iterator[None]:
        execution_context = self.execution_context
        document = execution_context.graphql_document
        context = execution_context.context
        if document is not None and hasattr(context, "cache"):
            static = self.policies(
                execution_context.query, execution_context.operation_name, document
            )
            context.cache = static.copy() if static is not None else None
        yield
