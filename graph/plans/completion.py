"""Completing values: a resolver's value made the answer's at its place in the document.

Leaves of the built-in scalars are checked inline, others coerced by their type; lists item by
item (a list of built-in leaves in one go); objects by their object plan, an abstract type's
by the runtime type its value resolves to, as graphql-core and Strawberry resolve it. A
non-null position that completes to null fails, and its failure lands on the nearest position
above that may be null (its ``Boundary``).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any

from graphql import GraphQLAbstractType, GraphQLError, GraphQLObjectType, located_error
from graphql.execution.executor import (
    CollectedErrors,
    Executor,
    default_type_resolver,
    invalid_return_type_error,
)
from graphql.execution.values import VariableValues
from graphql.pyutils import Path, is_iterable
from graphql.type.schema import GraphQLSchema
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.types.cast import TYPE_CAST_ATTRIBUTE

from graph.plans.nodes import (
    BOOLEAN,
    FLOAT,
    INT,
    INT_MAX,
    INT_MIN,
    LEAF,
    LIST,
    NON_NULL,
    OBJECT,
    STRING,
    Compiled,
    FieldPlan,
    ObjectPlan,
    Shape,
    new_path,
    strawberry_made,
)

__all__ = ["Boundary", "Completion", "NotPlannableAtRun", "all_plain", "is_ready"]


class Boundary:
    """The nearest position above that may be null: where a non-null failure below lands."""

    __slots__ = ("container", "key", "path")

    def __init__(self, container: Any, key: Any, path: Path | None) -> None:
        self.container = container
        self.key = key
        self.path = path


class Completion(ABC):
    """The completing half of a run (``runner.Run``), which gives it the fields of an object,
    a field's Info and the awaiting of what a resolver has not answered yet."""

    plan: Compiled
    variables: VariableValues
    errors: CollectedErrors

    @abstractmethod
    def fields(
        self, plan: ObjectPlan, source: Any, path: Path | None, boundary: Boundary
    ) -> dict[str, Any]: ...

    @abstractmethod
    def info(self, field: FieldPlan, path: Path) -> Any: ...

    @abstractmethod
    def suspend(
        self,
        awaitable: Any,
        field: FieldPlan,
        shape: Shape,
        container: Any,
        key: Any,
        path: Path,
        boundary: Boundary,
    ) -> None: ...

    def complete(
        self,
        shape: Shape,
        value: Any,
        container: Any,
        key: Any,
        path: Path,
        boundary: Boundary,
        nullable: bool = True,
    ) -> Any:
        kind = shape.kind
        if kind == NON_NULL:
            inner = shape.inner
            assert inner is not None
            completed = self.complete(inner, value, container, key, path, boundary, False)
            if completed is None:
                definition = shape.field.definition
                raise TypeError(
                    "Cannot return null for non-nullable field"
                    f" {definition.parent_name}.{definition.field_name}."
                )
            return completed
        if value is None:
            return None
        if kind == LEAF:
            leaf = shape.leaf
            value_type = type(value)
            if (
                (leaf == STRING and value_type is str)
                or (leaf == BOOLEAN and value_type is bool)
                or (leaf == INT and value_type is int and INT_MIN <= value <= INT_MAX)
                or (leaf == FLOAT and value_type is float and math.isfinite(value))
            ):
                return value
            if isinstance(value, Exception):  # graphql-core raises a returned exception
                raise value
            return Executor.complete_leaf_value(shape.output_type, value)
        if isinstance(value, Exception):
            raise value
        # A composite value: its descendants land here when a non-null one fails later.
        if nullable:
            boundary = Boundary(container, key, path)
        if kind == LIST:
            return self.complete_list(shape, value, path, boundary)
        if kind == OBJECT:
            object_type = shape.output_type
            check = shape.is_type_of
            if check is not None and not (
                type(value) in shape.by_class and getattr(value, TYPE_CAST_ATTRIBUTE, None) is None
            ):
                ok = check(
                    value, None if shape.strawberry_is_type_of else self.info(shape.field, path)
                )
                if optimized_is_awaitable(ok):
                    raise NotPlannableAtRun("an asynchronous is_type_of")
                if not ok:
                    raise invalid_return_type_error(object_type, value, shape.field.details)
                if shape.strawberry_is_type_of and not hasattr(value, TYPE_CAST_ATTRIBUTE):
                    shape.by_class[type(value)] = object_type
            return self.fields(
                shape.object_plan(object_type, self.variables), value, path, boundary
            )
        return self.complete_abstract(shape, value, path, boundary)

    def complete_list(self, shape: Shape, value: Any, path: Path, boundary: Boundary) -> list[Any]:
        if type(value) is not list and (hasattr(value, "__aiter__") or not is_iterable(value)):
            definition = shape.field.definition
            raise GraphQLError(
                "Expected Iterable, but did not find one for field"
                f" '{definition.parent_name}.{definition.field_name}'."
            )
        inner = shape.inner
        assert inner is not None
        field = shape.field
        items: list[Any] = []
        item_nullable = inner.kind != NON_NULL
        if (
            shape.plain is not None
            and isinstance(value, list | tuple)
            and all_plain(value, *shape.plain)
        ):
            return list(value)  # leaves that need no coercion (strings, series of floats)
        for index, item in enumerate(value):
            item_path = new_path((path, index, None))
            if optimized_is_awaitable(item):
                items.append(None)
                self.suspend(item, field, inner, items, index, item_path, boundary)
                continue
            try:
                items.append(self.complete(inner, item, items, index, item_path, boundary))
            except Exception as raw:
                error = located_error(raw, field.nodes, item_path.as_list())
                if not item_nullable:
                    raise error from None
                self.errors.add(error, item_path)
                items.append(None)
        return items

    def complete_abstract(
        self, shape: Shape, value: Any, path: Path, boundary: Boundary
    ) -> dict[str, Any]:
        known = shape.by_class.get(type(value))
        if known is not None and getattr(value, TYPE_CAST_ATTRIBUTE, None) is None:
            return self.fields(shape.object_plan(known, self.variables), value, path, boundary)
        abstract: GraphQLAbstractType = shape.output_type
        plan = self.plan
        field = shape.field
        name: Any = None
        info: Any = None
        origin = shape.interface
        by_class = False  # whether the answer below holds for every value of this class
        if (
            origin is not None
            and getattr(value, TYPE_CAST_ATTRIBUTE, None) is None
            and isinstance(value, origin)
        ):
            # What Strawberry's own resolve_type answers for an instance of the interface.
            definition = getattr(value, "__strawberry_definition__", None)
            if definition is not None and not definition.is_graphql_generic:
                name = definition.name
                by_class = True
        if name is None:
            info = self.info(field, path)
            resolve_type = abstract.resolve_type or default_type_resolver
            name = resolve_type(value, info, abstract)
            if optimized_is_awaitable(name):
                raise NotPlannableAtRun("an asynchronous resolve_type")
        runtime = shape.runtime.get(name) if isinstance(name, str) else None
        if runtime is None:
            found: Any = plan.graphql_schema.get_type(name) if isinstance(name, str) else None
            runtime = found
            if isinstance(runtime, GraphQLObjectType) and plan.graphql_schema.is_sub_type(
                abstract, runtime
            ):
                shape.runtime[name] = runtime
            else:
                runtime = Executor.ensure_valid_runtime_type(
                    _SchemaHolder(plan.graphql_schema),  # type: ignore[arg-type]
                    name,
                    abstract,
                    field.details,
                    info if info is not None else self.info(field, path),
                    value,
                )
        check = runtime.is_type_of
        if check is not None:
            made = strawberry_made(check)
            if info is None and not made:
                info = self.info(field, path)
            ok = check(value, info)
            if optimized_is_awaitable(ok):
                raise NotPlannableAtRun("an asynchronous is_type_of")
            if not ok:
                raise invalid_return_type_error(runtime, value, field.details)
            by_class = by_class and made
        if by_class:
            shape.by_class[type(value)] = runtime
        return self.fields(shape.object_plan(runtime, self.variables), value, path, boundary)


class NotPlannableAtRun(Exception):
    """Something only the generic executor supports, met while running (reported as an
    internal error: the schema changed under the plan)."""


class _SchemaHolder:
    __slots__ = ("schema",)

    def __init__(self, schema: GraphQLSchema) -> None:
        self.schema = schema


def is_ready(shape: Shape, value: Any) -> bool:
    """Whether a value of a leaf (or a list of leaves) is already its own serialisation."""
    if shape.kind == NON_NULL:
        if value is None:
            return False
        shape = shape.inner  # type: ignore[assignment]
    elif value is None:
        return True
    if shape.kind == LEAF:
        leaf, value_type = shape.leaf, type(value)
        return (
            (leaf == STRING and value_type is str)
            or (leaf == BOOLEAN and value_type is bool)
            or (leaf == INT and value_type is int and INT_MIN <= value <= INT_MAX)
            or (leaf == FLOAT and value_type is float and math.isfinite(value))
        )
    return shape.plain is not None and type(value) is list and all_plain(value, *shape.plain)


def all_plain(items: list[Any] | tuple[Any, ...], leaf: int, nullable: bool) -> bool:
    """Whether every item is already its own serialisation (or null where nulls may be)."""
    if leaf == STRING:
        return all(type(i) is str or (nullable and i is None) for i in items)
    if leaf == FLOAT:
        return all(
            (type(i) is float and math.isfinite(i)) or (nullable and i is None) for i in items
        )
    if leaf == INT:
        return all(
            (type(i) is int and INT_MIN <= i <= INT_MAX) or (nullable and i is None) for i in items
        )
    return all(type(i) is bool or (nullable and i is None) for i in items)
