"""The nodes of a plan, as the planner builds them and the runner walks them.

``FieldDefinition``: how one field of one object type is resolved, whatever document selects
it. ``ObjectPlan``: the fields a selection set selects on one object type, in response order,
each a ``FieldPlan`` (one response key). ``Shape``: how a value of one output type is completed
at one place of the document; the object plans below it are built for the concrete types met.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, Final, Protocol

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    GraphQLBoolean,
    GraphQLError,
    GraphQLField,
    GraphQLFloat,
    GraphQLID,
    GraphQLInt,
    GraphQLList,
    GraphQLNonNull,
    GraphQLObjectType,
    GraphQLOutputType,
    GraphQLString,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    ValueNode,
    VariableNode,
    is_abstract_type,
    is_leaf_type,
    is_non_null_type,
    is_object_type,
)
from graphql.execution.collect_fields import FieldDetails, FragmentDetails, collect_subfields
from graphql.execution.executor import default_field_resolver
from graphql.execution.values import VariableValues, get_argument_values
from graphql.pyutils import Path
from graphql.type.schema import GraphQLSchema
from strawberry.schema.config import StrawberryConfig

__all__ = [
    "Compiled",
    "FieldDefinition",
    "FieldPlan",
    "NotPlannable",
    "ObjectPlan",
    "Shape",
    "new_path",
    "shape_of",
    "strawberry_made",
]

INT_MIN: Final = -(2**31)
INT_MAX: Final = 2**31 - 1

# How a field gets its value.
TYPENAME, ATTRIBUTE, CALL, WRAPPED, CALL_DEFAULT = range(5)
# How a value is completed.
NON_NULL, LIST, LEAF, OBJECT, ABSTRACT = range(5)
# Leaves checked inline.
STRING, BOOLEAN, INT, FLOAT, OTHER = range(5)
# How the runner's inner loop takes a field: an attribute read, a resolver called with the
# object alone, __typename, or anything else (arguments, Info, a wrapper).
FAST_ATTRIBUTE, FAST_SELF_CALL, FAST_TYPENAME, FAST_OTHER = range(4)
# A Path as the named tuple's constructor makes it, without its Python-level __new__.
new_path: Final = partial(tuple.__new__, Path)


class NotPlannable(Exception):
    """A document the runner leaves to the generic executor, and why."""


class Compiled(Protocol):
    """What the nodes and the runner read of the plan they belong to (``planner.Plan``): the
    schema, the operation and its fragments, and how Strawberry calls resolvers."""

    graphql_schema: GraphQLSchema
    operation: OperationDefinitionNode
    fragment_definitions: dict[str, FragmentDefinitionNode]
    fragments: dict[str, FragmentDetails]
    hide_suggestions: bool
    config: StrawberryConfig
    scalar_registry: Any
    no_handlers: bool
    default_resolver: Callable[[Any, str], object]

    def definition(self, parent: GraphQLObjectType, name: str) -> FieldDefinition | None: ...


class FieldDefinition:
    """How one field of one object type is resolved, whatever document selects it."""

    __slots__ = (
        "arguments",
        "field",
        "field_name",
        "info_name",
        "kind",
        "parent",
        "parent_name",
        "python_name",
        "resolve",
        "root_name",
        "self_argument",
        "strawberry",
    )

    def __init__(
        self, plan: Compiled, parent: GraphQLObjectType, name: str, field: GraphQLField
    ) -> None:
        self.parent = parent
        self.parent_name = parent.name
        self.field_name = name
        self.field = field
        definition = (field.extensions or {}).get("strawberry-definition")
        self.strawberry = definition
        self.python_name: str | None = None
        self.resolve: Callable[..., Any] | None = None
        self.arguments: Any = None
        self.self_argument = False
        self.root_name: tuple[str, ...] = ()
        self.info_name: str | None = None
        if name == "__typename":
            self.kind = TYPENAME
        elif definition is None or definition.extensions or not plan.no_handlers:
            self.kind = WRAPPED
            self.resolve = field.resolve or default_field_resolver
        elif definition.base_resolver is None:
            self.kind = ATTRIBUTE
            self.python_name = definition.python_name
            if plan.default_resolver is not getattr:
                self.kind = CALL_DEFAULT
                self.resolve = plan.default_resolver
        else:
            resolver = definition.base_resolver
            self.kind = CALL
            self.resolve = resolver.wrapped_func
            self.arguments = definition.arguments
            self.self_argument = resolver.self_parameter is not None
            self.root_name = tuple(
                p.name
                for p in (resolver.parent_parameter, resolver.root_parameter)
                if p is not None
            )
            info = resolver.info_parameter
            self.info_name = info.name if info is not None else None


class FieldPlan:
    """One response key of a selection set on one object type."""

    __slots__ = (
        "args",
        "definition",
        "details",
        "fast",
        "key",
        "kind",
        "node",
        "nodes",
        "nullable",
        "python_name",
        "ready_type",
        "return_type",
        "shape",
        "simple",
    )

    def __init__(
        self,
        plan: Compiled,
        definition: FieldDefinition,
        key: str,
        details: list[FieldDetails],
        variables: VariableValues,
    ) -> None:
        self.definition = definition
        self.key = key
        self.details = details
        self.node: FieldNode = details[0].node
        self.nodes: list[FieldNode] = [d.node for d in details]
        self.kind = definition.kind
        self.python_name = definition.python_name
        field = definition.field
        self.return_type: GraphQLOutputType = field.type
        self.nullable = not is_non_null_type(field.type)
        self.shape = shape_of(plan, field.type, self)
        # A leaf, or a list of leaves: an attribute read may be ready as it is.
        shape = self.shape.inner if self.shape.kind == NON_NULL else self.shape
        self.simple = shape is not None and (
            (shape.kind == LEAF and shape.leaf != OTHER) or shape.plain is not None
        )
        # The Python type whose values are their own serialisation here (str for a String).
        self.ready_type: type | None = None
        if shape is not None and shape.kind == LEAF:
            self.ready_type = {STRING: str, BOOLEAN: bool}.get(shape.leaf)
        self.fast = FAST_OTHER
        if self.kind == ATTRIBUTE:
            self.fast = FAST_ATTRIBUTE
        elif self.kind == TYPENAME:
            self.fast = FAST_TYPENAME
        elif (
            self.kind == CALL
            and definition.self_argument
            and definition.info_name is None
            and not definition.arguments
            and not definition.root_name
        ):
            self.fast = FAST_SELF_CALL
        # Arguments written as literals (or absent) are coerced once; None: per request.
        self.args: dict[str, Any] | None = {}
        if field.args or self.node.arguments:
            if _reads_variables(self.node):
                self.args = None
            else:
                try:
                    coerced = get_argument_values(field, self.node, variables)
                except GraphQLError:
                    self.args = None
                else:
                    self.args = coerced if _immutable(coerced) else None


class ObjectPlan:
    """The fields a selection set selects on one object type, in response order."""

    __slots__ = ("fields", "type", "type_name")

    def __init__(
        self,
        plan: Compiled,
        object_type: GraphQLObjectType,
        grouped: dict[str, list[FieldDetails]],
        variables: VariableValues,
    ) -> None:
        self.type = object_type
        self.type_name = object_type.name
        fields = []
        for key, details in grouped.items():
            definition = plan.definition(object_type, details[0].node.name.value)
            if definition is None:
                continue  # graphql-core skips fields the type does not have
            fields.append(FieldPlan(plan, definition, key, details, variables))
        self.fields = fields


class Shape:
    """How a value of one output type is completed at one place of the document."""

    __slots__ = (
        "by_class",
        "field",
        "inner",
        "interface",
        "is_type_of",
        "kind",
        "leaf",
        "objects",
        "output_type",
        "plain",
        "plan",
        "runtime",
        "strawberry_is_type_of",
    )

    def __init__(self, plan: Compiled, kind: int, output_type: Any, field: FieldPlan) -> None:
        self.plan = plan
        self.kind = kind
        self.output_type = output_type
        self.field = field
        self.inner: Shape | None = None
        self.leaf = OTHER
        self.objects: dict[str, ObjectPlan] = {}
        self.is_type_of: Any = None
        self.strawberry_is_type_of = False
        # An interface whose resolve_type is Strawberry's own: its class, to answer as it does.
        self.interface: type | None = None
        # Runtime types met, checked once: name → object type.
        self.runtime: dict[str, GraphQLObjectType] = {}
        # A list of built-in leaves: (leaf, items may be null), checked in one go.
        self.plain: tuple[int, bool] | None = None
        # Python classes of values checked once (no type cast on them): what Strawberry's own
        # resolve_type and is_type_of answer depends on the class alone. An object shape maps
        # a class to its own object type; an abstract one, to the runtime type it resolves to.
        self.by_class: dict[type, GraphQLObjectType] = {}

    def object_plan(self, object_type: GraphQLObjectType, variables: VariableValues) -> ObjectPlan:
        found = self.objects.get(object_type.name)
        if found is None:
            plan = self.plan
            collected = collect_subfields(
                plan.graphql_schema,
                plan.fragments,
                variables,
                plan.operation,
                object_type,
                self.field.details,
                plan.hide_suggestions,
            )
            found = ObjectPlan(plan, object_type, collected.grouped_field_set, variables)
            self.objects[object_type.name] = found
        return found


def shape_of(plan: Compiled, output_type: GraphQLOutputType, field: FieldPlan) -> Shape:
    if isinstance(output_type, GraphQLNonNull):
        shape = Shape(plan, NON_NULL, output_type, field)
        shape.inner = shape_of(plan, output_type.of_type, field)
        return shape
    if isinstance(output_type, GraphQLList):
        shape = Shape(plan, LIST, output_type, field)
        inner = shape.inner = shape_of(plan, output_type.of_type, field)
        item = inner.inner if inner.kind == NON_NULL else inner
        if item is not None and item.kind == LEAF and item.leaf != OTHER:
            shape.plain = (item.leaf, inner.kind != NON_NULL)
        return shape
    if is_leaf_type(output_type):
        shape = Shape(plan, LEAF, output_type, field)
        if output_type is GraphQLString or output_type is GraphQLID:
            shape.leaf = STRING
        elif output_type is GraphQLBoolean:
            shape.leaf = BOOLEAN
        elif output_type is GraphQLInt:
            shape.leaf = INT
        elif output_type is GraphQLFloat:
            shape.leaf = FLOAT
        return shape
    if is_abstract_type(output_type):
        shape = Shape(plan, ABSTRACT, output_type, field)
        resolve_type = getattr(output_type, "resolve_type", None)
        definition = (output_type.extensions or {}).get("strawberry-definition")
        if (
            resolve_type is not None
            and getattr(resolve_type, "__module__", "") == "strawberry.schema.schema_converter"
            and resolve_type.__qualname__.endswith("_get_resolve_type.<locals>.resolve_type")
            and definition is not None
        ):
            shape.interface = definition.origin
        return shape
    if is_object_type(output_type):
        shape = Shape(plan, OBJECT, output_type, field)
        check = output_type.is_type_of
        shape.is_type_of = check
        # Strawberry's own is_type_of looks only at the value, never at the info.
        shape.strawberry_is_type_of = check is not None and strawberry_made(check)
        return shape
    raise NotPlannable(f"unexpected output type {output_type}")


def strawberry_made(function: Any) -> bool:
    return getattr(function, "__module__", "") == "strawberry.schema.schema_converter" and (
        function.__qualname__.endswith("_get_is_type_of.<locals>.is_type_of")
    )


def _immutable(values: dict[str, Any]) -> bool:
    from enum import Enum

    return all(v is None or isinstance(v, str | int | float | bool | Enum) for v in values.values())


def _reads_variables(node: FieldNode) -> bool:
    return any(_has_variable(argument.value) for argument in node.arguments or ())


def _has_variable(value: ValueNode) -> bool:
    if isinstance(value, VariableNode):
        return True
    if isinstance(value, ListValueNode):
        return any(_has_variable(v) for v in value.values)
    if isinstance(value, ObjectValueNode):
        return any(_has_variable(f.value) for f in value.fields)
    return False
