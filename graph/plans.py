"""Compiled plans: known operations run without the generic executor, answering the same.

A persisted or trusted document is the same text every time it runs, so whatever graphql-core
and Strawberry work out from the document on each request can be worked out once: which fields
each selection set selects on each concrete type (fragments and ``@skip``/``@include`` resolved,
once per combination of the variables those directives read), how each field is resolved and
how its value is completed. A ``Plan`` keeps that, and its runner walks the plan:

- a field with no resolver of its own is an attribute read (no Info, no wrapper);
- a resolver without field extensions is called directly with its converted arguments
  (arguments written as literals are coerced once); one with extensions (``Authorize``,
  Relay connections, a plugin's) goes through Strawberry's own wrapper, unchanged;
- leaves of the built-in scalars are checked inline, others coerced by their type;
- an asynchronous resolver runs as one task, and nothing more: no wrapper coroutine, no
  ``gather``; its value is completed once the task is done. Tasks of one level run in the
  same turn of the loop, so loaders batch level by level as under the generic executor.

The answer is the generic executor's, byte for byte once encoded: the same values, null
propagation (graphql-core's rules, errors below a nulled position dropped), error messages,
paths and locations, ``extensions.code``s, cache policy and tags. ``tests/graph/test_plans.py``
checks that differentially. Whatever the plan cannot vouch for goes the generic way: a document
not yet validated by a generic run, variables that do not coerce or that the input guard or the
cost limit refuses, introspection, ``@defer``/``@stream``, subscriptions, and every document
when a plugin adds a schema extension (its hooks expect to run).

Plans are built at a document's first use after it validated, kept by (text, operation name)
in a bounded LRU, and each keeps at most a few ``@skip``/``@include`` variants.
"""

from __future__ import annotations

import logging
import math
from asyncio import Future, ensure_future, get_running_loop
from collections import OrderedDict
from collections.abc import Callable, Iterable
from functools import partial
from types import CoroutineType
from typing import Any, Final

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLAbstractType,
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
    GraphQLResolveInfo,
    GraphQLString,
    ListValueNode,
    ObjectValueNode,
    OperationType,
    ValueNode,
    VariableNode,
    is_abstract_type,
    is_leaf_type,
    is_non_null_type,
    is_object_type,
    located_error,
    parse,
)
from graphql.execution.collect_fields import (
    FieldDetails,
    FragmentDetails,
    collect_fields,
    collect_subfields,
)
from graphql.execution.executor import (
    CollectedErrors,
    Executor,
    default_field_resolver,
    default_type_resolver,
    invalid_return_type_error,
)
from graphql.execution.values import VariableValues, get_argument_values, get_variable_values
from graphql.pyutils import Path, is_iterable
from graphql.pyutils.gather_with_cancel import gather_with_cancel
from graphql.type.definition import GraphQLResolveInfoHelpers
from graphql.type.introspection import TypeNameMetaFieldDef
from graphql.type.schema import GraphQLSchema
from graphql.utilities import get_operation_ast
from strawberry.execution.is_awaitable import optimized_is_awaitable
from strawberry.types import ExecutionResult
from strawberry.types.arguments import convert_arguments
from strawberry.types.cast import TYPE_CAST_ATTRIBUTE
from strawberry.types.graphql import OperationType as StrawberryOperationType

from graph.cache_control import PolicyCache
from graph.documents import fragments_of
from graph.errors import AtriumSchema, mask_unexpected
from graph.input_guard import LiteralChecks, first_unstorable
from graph.limits import query_cost, size_variables

__all__ = ["NotPlannable", "Plan", "Plans"]

log = logging.getLogger("atrium.plans")

# Directives whose meaning the runner does not implement: documents using them run generically.
_UNPLANNED_DIRECTIVES: Final = frozenset(
    {"defer", "stream", "experimental_disableErrorPropagation"}
)
_INTROSPECTION: Final = frozenset({"__schema", "__type"})
_MAX_VARIANTS: Final = 8
_INT_MIN: Final = -(2**31)
_INT_MAX: Final = 2**31 - 1

# How a field gets its value.
_TYPENAME, _ATTRIBUTE, _CALL, _WRAPPED, _CALL_DEFAULT = range(5)
# How a value is completed.
_NON_NULL, _LIST, _LEAF, _OBJECT, _ABSTRACT = range(5)
# Leaves checked inline.
_STRING, _BOOLEAN, _INT, _FLOAT, _OTHER = range(5)
# How the runner's inner loop takes a field: an attribute read, a resolver called with the
# object alone, __typename, or anything else (arguments, Info, a wrapper).
_FAST_ATTRIBUTE, _FAST_SELF_CALL, _FAST_TYPENAME, _FAST_OTHER = range(4)
# A Path as the named tuple's constructor makes it, without its Python-level __new__.
_path: Final = partial(tuple.__new__, Path)


class NotPlannable(Exception):
    """A document the runner leaves to the generic executor, and why."""


class Plans:
    """Plans of known documents by (text, operation name): built at first use, LRU-bounded.

    ``get`` answers from what is built; ``learn`` builds a plan for a document the generic
    path has just run past validation (so every rule, including the limits, has passed)."""

    def __init__(
        self,
        schema: AtriumSchema,
        policies: PolicyCache,
        literals: LiteralChecks,
        *,
        max_cost: int,
        max_page: int,
        assumed_list_size: int,
        production: bool,
        capacity: int = 512,
    ) -> None:
        self.schema = schema
        self.policies = policies
        self.literals = literals
        self.max_cost = max_cost
        self.max_page = max_page
        self.assumed_list_size = assumed_list_size
        self.production = production
        self.capacity = capacity
        self.runs = 0  # operations answered on a plan
        self._plans: OrderedDict[tuple[str, str | None], Plan | None] = OrderedDict()

    def get(self, query: str | None, operation_name: str | None) -> Plan | None:
        if query is None:
            return None
        plan = self._plans.get((query, operation_name))
        if plan is not None:
            self._plans.move_to_end((query, operation_name))
        return plan

    def learn(self, query: str, operation_name: str | None) -> Plan | None:
        key = (query, operation_name)
        if key in self._plans:
            return self._plans[key]
        try:
            plan: Plan | None = Plan(self, query, operation_name)
        except NotPlannable as why:
            log.debug("operation left to the generic executor", extra={"reason": str(why)})
            plan = None
        self._plans[key] = plan
        if len(self._plans) > self.capacity:
            self._plans.popitem(last=False)
        return plan


class Plan:
    """One operation of one document, specialised for the schema it runs on."""

    def __init__(self, plans: Plans, query: str, operation_name: str | None) -> None:
        schema = plans.schema
        graphql_schema: GraphQLSchema = schema._schema
        document = parse(query)
        operation = get_operation_ast(document, operation_name)
        if operation is None:
            raise NotPlannable("no such operation")
        if operation.operation not in (OperationType.QUERY, OperationType.MUTATION):
            raise NotPlannable("subscriptions run generically")
        root = graphql_schema.get_root_type(operation.operation)
        if root is None:
            raise NotPlannable("the schema has no such root")
        definitions = fragments_of(document)
        _check_document(document)
        if plans.literals(query, document) is not None:
            raise NotPlannable("a string literal cannot be stored")
        self.plans = plans
        self.schema = schema
        self.graphql_schema = graphql_schema
        self.document = document
        self.operation = operation
        # As Strawberry names it, for the allowed operation types of a request.
        self.operation_type = StrawberryOperationType(operation.operation.value)
        self.root = root
        self.fragment_definitions: dict[str, FragmentDefinitionNode] = definitions
        self.fragments = {name: FragmentDetails(d, None) for name, d in definitions.items()}
        self.hide_suggestions = schema.config.disable_field_suggestions
        self.directive_variables = _directive_variables(document)
        self.size_variables = size_variables(document)
        self._costs: dict[tuple[Any, ...], int] = {}
        self.static_cost: int | None = None
        if not self.size_variables:
            self.static_cost = self._cost({})
        policy = plans.policies(query, operation_name, document)
        self.policy = policy
        self.variants: OrderedDict[tuple[Any, ...], _ObjectPlan] = OrderedDict()
        converter = schema.schema_converter
        self.scalar_registry = converter.scalar_registry
        self.config = schema.config
        self.no_handlers = not getattr(converter, "exception_handlers", ())
        self.default_resolver = schema.config.default_resolver
        self.fields: dict[tuple[str, str], _FieldDefinition] = {}

    # -- per request ------------------------------------------------------------------------

    async def execute(
        self, context: Any, variables: dict[str, Any] | None
    ) -> ExecutionResult | None:
        """Run the operation; None when the generic executor must answer (variables that do
        not coerce, or that the input guard or the cost limit refuses)."""
        plans = self.plans
        raw = variables or {}
        coerced = get_variable_values(
            self.graphql_schema,
            self.operation.variable_definitions or (),
            raw,
            hide_suggestions=self.hide_suggestions,
        )
        if isinstance(coerced, list):
            return None
        for value in raw.values():
            if first_unstorable(value) is not None:
                return None
        cost = self.static_cost
        if cost is None:
            sizes = tuple(_hashable(raw.get(name)) for name in self.size_variables)
            cost = self._costs.get(sizes)
            if cost is None:
                cost = self._cost(raw)
                if len(self._costs) < 64:
                    self._costs[sizes] = cost
        if cost > plans.max_cost:
            return None
        if hasattr(context, "cache"):
            context.cache = self.policy.copy() if self.policy is not None else None
        root = self._variant(coerced)
        run = _Run(self, context, coerced)
        data = await run.execute(root, self.operation.operation is OperationType.MUTATION)
        plans.runs += 1
        errors = run.errors.errors
        if errors:
            self.schema.process_errors(errors, None)
            if plans.production:
                errors = mask_unexpected(errors)
        return ExecutionResult(data=data, errors=errors or None)

    def _cost(self, variables: dict[str, Any]) -> int:
        plans = self.plans
        return query_cost(
            self.graphql_schema,
            self.operation,
            self.fragment_definitions,
            variables,
            max_page=plans.max_page,
            assumed_list_size=plans.assumed_list_size,
        )

    def _variant(self, variables: VariableValues) -> _ObjectPlan:
        key = tuple(_hashable(variables.coerced.get(n)) for n in self.directive_variables)
        found = self.variants.get(key)
        if found is None:
            collected = collect_fields(
                self.graphql_schema,
                self.fragments,
                variables,
                self.root,
                self.operation,
                self.hide_suggestions,
            )
            found = _ObjectPlan(self, self.root, collected.grouped_field_set, variables)
            self.variants[key] = found
            if len(self.variants) > _MAX_VARIANTS:
                self.variants.popitem(last=False)
        return found

    # -- building ---------------------------------------------------------------------------

    def definition(self, parent: GraphQLObjectType, name: str) -> _FieldDefinition | None:
        key = (parent.name, name)
        found = self.fields.get(key)
        if found is None:
            field = TypeNameMetaFieldDef if name == "__typename" else parent.fields.get(name)
            if field is None:
                return None
            found = self.fields[key] = _FieldDefinition(self, parent, name, field)
        return found


class _FieldDefinition:
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
        self, plan: Plan, parent: GraphQLObjectType, name: str, field: GraphQLField
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
            self.kind = _TYPENAME
        elif definition is None or definition.extensions or not plan.no_handlers:
            self.kind = _WRAPPED
            self.resolve = field.resolve or default_field_resolver
        elif definition.base_resolver is None:
            self.kind = _ATTRIBUTE
            self.python_name = definition.python_name
            if plan.default_resolver is not getattr:
                self.kind = _CALL_DEFAULT
                self.resolve = plan.default_resolver
        else:
            resolver = definition.base_resolver
            self.kind = _CALL
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


class _FieldPlan:
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
        plan: Plan,
        definition: _FieldDefinition,
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
        self.shape = _shape(plan, field.type, self)
        # A leaf, or a list of leaves: an attribute read may be ready as it is.
        shape = self.shape.inner if self.shape.kind == _NON_NULL else self.shape
        self.simple = shape is not None and (
            (shape.kind == _LEAF and shape.leaf != _OTHER) or shape.plain is not None
        )
        # The Python type whose values are their own serialisation here (str for a String).
        self.ready_type: type | None = None
        if shape is not None and shape.kind == _LEAF:
            self.ready_type = {_STRING: str, _BOOLEAN: bool}.get(shape.leaf)
        self.fast = _FAST_OTHER
        if self.kind == _ATTRIBUTE:
            self.fast = _FAST_ATTRIBUTE
        elif self.kind == _TYPENAME:
            self.fast = _FAST_TYPENAME
        elif (
            self.kind == _CALL
            and definition.self_argument
            and definition.info_name is None
            and not definition.arguments
            and not definition.root_name
        ):
            self.fast = _FAST_SELF_CALL
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


class _ObjectPlan:
    """The fields a selection set selects on one object type, in response order."""

    __slots__ = ("fields", "type", "type_name")

    def __init__(
        self,
        plan: Plan,
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
            fields.append(_FieldPlan(plan, definition, key, details, variables))
        self.fields = fields


class _Shape:
    """How a value of one output type is completed at one place of the document."""

    __slots__ = (
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

    def __init__(self, plan: Plan, kind: int, output_type: Any, field: _FieldPlan) -> None:
        self.plan = plan
        self.kind = kind
        self.output_type = output_type
        self.field = field
        self.inner: _Shape | None = None
        self.leaf = _OTHER
        self.objects: dict[str, _ObjectPlan] = {}
        self.is_type_of: Any = None
        self.strawberry_is_type_of = False
        # An interface whose resolve_type is Strawberry's own: its class, to answer as it does.
        self.interface: type | None = None
        # Runtime types met, checked once: name → object type.
        self.runtime: dict[str, GraphQLObjectType] = {}
        # A list of built-in leaves: (leaf, items may be null), checked in one go.
        self.plain: tuple[int, bool] | None = None

    def object_plan(self, object_type: GraphQLObjectType, variables: VariableValues) -> _ObjectPlan:
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
            found = _ObjectPlan(plan, object_type, collected.grouped_field_set, variables)
            self.objects[object_type.name] = found
        return found


def _shape(plan: Plan, output_type: GraphQLOutputType, field: _FieldPlan) -> _Shape:
    if isinstance(output_type, GraphQLNonNull):
        shape = _Shape(plan, _NON_NULL, output_type, field)
        shape.inner = _shape(plan, output_type.of_type, field)
        return shape
    if isinstance(output_type, GraphQLList):
        shape = _Shape(plan, _LIST, output_type, field)
        inner = shape.inner = _shape(plan, output_type.of_type, field)
        item = inner.inner if inner.kind == _NON_NULL else inner
        if item is not None and item.kind == _LEAF and item.leaf != _OTHER:
            shape.plain = (item.leaf, inner.kind != _NON_NULL)
        return shape
    if is_leaf_type(output_type):
        shape = _Shape(plan, _LEAF, output_type, field)
        if output_type is GraphQLString or output_type is GraphQLID:
            shape.leaf = _STRING
        elif output_type is GraphQLBoolean:
            shape.leaf = _BOOLEAN
        elif output_type is GraphQLInt:
            shape.leaf = _INT
        elif output_type is GraphQLFloat:
            shape.leaf = _FLOAT
        return shape
    if is_abstract_type(output_type):
        shape = _Shape(plan, _ABSTRACT, output_type, field)
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
        shape = _Shape(plan, _OBJECT, output_type, field)
        check = output_type.is_type_of
        shape.is_type_of = check
        # Strawberry's own is_type_of looks only at the value, never at the info.
        shape.strawberry_is_type_of = check is not None and _strawberry_made(check)
        return shape
    raise NotPlannable(f"unexpected output type {output_type}")


def _strawberry_made(function: Any) -> bool:
    return getattr(function, "__module__", "") == "strawberry.schema.schema_converter" and (
        function.__qualname__.endswith("_get_is_type_of.<locals>.is_type_of")
    )


class _Boundary:
    """The nearest position above that may be null: where a non-null failure below lands."""

    __slots__ = ("container", "key", "path")

    def __init__(self, container: Any, key: Any, path: Path | None) -> None:
        self.container = container
        self.key = key
        self.path = path


class _Suspended:
    """A resolver's awaitable, run as one task (a future is waited on as it is), and where
    its value goes once done."""

    __slots__ = ("boundary", "container", "field", "future", "key", "path", "run", "shape")

    def __init__(
        self,
        run: _Run,
        future: Future[Any],
        field: _FieldPlan,
        shape: _Shape,
        container: Any,
        key: Any,
        path: Path,
        boundary: _Boundary,
    ) -> None:
        self.run = run
        self.future = future
        self.field = field
        self.shape = shape
        self.container = container
        self.key = key
        self.path = path
        self.boundary = boundary

    def __call__(self, _future: Any) -> None:  # done
        run = self.run
        run.ready.append(self)
        wake = run.wake
        if wake is not None and not wake.done():
            wake.set_result(None)


class _Run:
    """One execution of a plan."""

    def __init__(self, plan: Plan, context: Any, variables: VariableValues) -> None:
        self.plan = plan
        self.context = context
        self.variables = variables
        self.errors = CollectedErrors()
        self.nulled = False
        self.ready: list[_Suspended] = []
        self.waiting: set[_Suspended] = set()
        self.wake: Future[None] | None = None
        self.failure: BaseException | None = None
        self.holder: dict[str, Any] = {"data": None}
        self.root_boundary = _Boundary(self.holder, "data", None)
        self.helpers = GraphQLResolveInfoHelpers(gather=_gather, track=_track)
        self.loop = get_running_loop()

    async def execute(self, root: _ObjectPlan, serially: bool) -> dict[str, Any] | None:
        holder = self.holder
        try:
            try:
                if serially:
                    data: dict[str, Any] = {}
                    holder["data"] = data
                    for field in root.fields:
                        path = _path((None, field.key, root.type_name))
                        data[field.key] = self.field(field, None, data, path, self.root_boundary)
                        if self.waiting:
                            await self.drain()
                        if holder["data"] is None:
                            break
                else:
                    holder["data"] = self.fields(root, None, None, self.root_boundary)
                    if self.waiting:
                        await self.drain()
            except GraphQLError as error:
                self.errors.add(error, None)
                holder["data"] = None
                self.nulled = True
                if self.waiting:
                    await self.drain()
        except BaseException:
            self.abandon()
            raise
        if self.failure is not None:
            raise self.failure
        data = holder["data"]
        return data if isinstance(data, dict) else None

    # -- fields -----------------------------------------------------------------------------

    def fields(
        self, plan: _ObjectPlan, source: Any, path: Path | None, boundary: _Boundary
    ) -> dict[str, Any]:
        result: dict[str, Any] = {}
        type_name = plan.type_name
        for field in plan.fields:
            fast = field.fast
            key = field.key
            if fast == _FAST_TYPENAME:
                result[key] = type_name
                continue
            if fast == _FAST_OTHER:
                result[key] = self.field(
                    field, source, result, _path((path, key, type_name)), boundary
                )
                continue
            # An attribute, or a resolver taking nothing but the object: no Info, no Path
            # unless the value needs completing or fails.
            try:
                if fast == _FAST_ATTRIBUTE:
                    value = getattr(source, field.python_name)  # type: ignore[arg-type]
                else:
                    value = field.definition.resolve(source)  # type: ignore[misc]
            except Exception as raw:
                result[key] = self.field_error(raw, field, _path((path, key, type_name)))
                continue
            value_type = type(value)
            if value_type is field.ready_type or (value is None and field.nullable):
                result[key] = value
                continue
            if field.simple and _ready(field.shape, value):
                result[key] = list(value) if value_type is list else value
                continue
            if fast == _FAST_SELF_CALL and optimized_is_awaitable(value):
                result[key] = None
                self.suspend(
                    value, field, field.shape, result, key, _path((path, key, type_name)), boundary
                )
                continue
            result[key] = self.completed(
                field, value, result, _path((path, key, type_name)), boundary
            )
        return result

    def field(
        self,
        field: _FieldPlan,
        source: Any,
        container: dict[str, Any],
        path: Path,
        boundary: _Boundary,
    ) -> Any:
        definition = field.definition
        try:
            kind = field.kind
            if kind == _ATTRIBUTE:
                value = getattr(source, field.python_name)  # type: ignore[arg-type]
            elif kind == _TYPENAME:
                return definition.parent_name
            elif kind == _CALL_DEFAULT:
                value = definition.resolve(source, definition.strawberry.python_name)  # type: ignore[misc, union-attr]
            else:
                args = field.args
                if args is None:
                    args = get_argument_values(
                        definition.field,
                        field.node,
                        self.variables,
                        field.details[0].fragment_variable_values,
                        self.plan.hide_suggestions,
                    )
                if kind == _CALL:
                    value = self.call(field, source, path, args)
                else:
                    value = definition.resolve(source, self.info(field, path), **args)  # type: ignore[misc]
            if optimized_is_awaitable(value):
                self.suspend(value, field, field.shape, container, field.key, path, boundary)
                return None
            return self.complete(field.shape, value, container, field.key, path, boundary)
        except Exception as raw:
            return self.field_error(raw, field, path)

    def completed(
        self,
        field: _FieldPlan,
        value: Any,
        container: Any,
        path: Path,
        boundary: _Boundary,
    ) -> Any:
        """The field's value completed; a failure is handled as the field's error."""
        try:
            return self.complete(field.shape, value, container, field.key, path, boundary)
        except Exception as raw:
            return self.field_error(raw, field, path)

    def call(self, field: _FieldPlan, source: Any, path: Path, args: dict[str, Any]) -> Any:
        """A Strawberry resolver without extensions, called as Strawberry would call it."""
        definition = field.definition
        kwargs: dict[str, Any] = {}
        if definition.info_name is not None or definition.arguments:
            plan = self.plan
            info = plan.config.info_class(
                _raw_info=self.info(field, path),
                _field=definition.strawberry,  # type: ignore[arg-type]
            )
            if definition.arguments:
                kwargs = convert_arguments(
                    args,
                    definition.arguments,
                    scalar_registry=plan.scalar_registry,
                    config=plan.config,
                    info=info,
                )
            if definition.info_name is not None:
                kwargs[definition.info_name] = info
        for name in definition.root_name:
            kwargs[name] = source
        resolve = definition.resolve
        assert resolve is not None
        if definition.self_argument:
            return resolve(source, **kwargs)
        return resolve(**kwargs)

    def info(self, field: _FieldPlan, path: Path) -> Any:
        plan = self.plan
        definition = field.definition
        # As the named tuple's own constructor would, without its Python-level __new__.
        return tuple.__new__(
            GraphQLResolveInfo,
            (
                definition.field_name,
                field.nodes,
                field.return_type,
                definition.parent,
                path,
                plan.graphql_schema,
                plan.fragment_definitions,
                None,
                plan.operation,
                self.variables,
                self.context,
                optimized_is_awaitable,
                None,
                self.helpers,
            ),
        )

    def field_error(self, raw: Exception, field: _FieldPlan, path: Path) -> Any:
        error = located_error(raw, field.nodes, path.as_list())
        if not field.nullable:
            raise error
        self.errors.add(error, path)
        return None

    # -- values -----------------------------------------------------------------------------

    def complete(
        self,
        shape: _Shape,
        value: Any,
        container: Any,
        key: Any,
        path: Path,
        boundary: _Boundary,
        nullable: bool = True,
    ) -> Any:
        kind = shape.kind
        if kind == _NON_NULL:
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
        if kind == _LEAF:
            leaf = shape.leaf
            value_type = type(value)
            if (
                (leaf == _STRING and value_type is str)
                or (leaf == _BOOLEAN and value_type is bool)
                or (leaf == _INT and value_type is int and _INT_MIN <= value <= _INT_MAX)
                or (leaf == _FLOAT and value_type is float and math.isfinite(value))
            ):
                return value
            if isinstance(value, Exception):  # graphql-core raises a returned exception
                raise value
            return Executor.complete_leaf_value(shape.output_type, value)
        if isinstance(value, Exception):
            raise value
        # A composite value: its descendants land here when a non-null one fails later.
        if nullable:
            boundary = _Boundary(container, key, path)
        if kind == _LIST:
            return self.complete_list(shape, value, path, boundary)
        if kind == _OBJECT:
            object_type = shape.output_type
            check = shape.is_type_of
            if check is not None:
                ok = check(
                    value, None if shape.strawberry_is_type_of else self.info(shape.field, path)
                )
                if optimized_is_awaitable(ok):
                    raise NotPlannableAtRun("an asynchronous is_type_of")
                if not ok:
                    raise invalid_return_type_error(object_type, value, shape.field.details)
            return self.fields(
                shape.object_plan(object_type, self.variables), value, path, boundary
            )
        return self.complete_abstract(shape, value, path, boundary)

    def complete_list(
        self, shape: _Shape, value: Any, path: Path, boundary: _Boundary
    ) -> list[Any]:
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
        item_nullable = inner.kind != _NON_NULL
        if (
            shape.plain is not None
            and isinstance(value, list | tuple)
            and _plain(value, *shape.plain)
        ):
            return list(value)  # leaves that need no coercion (strings, series of floats)
        for index, item in enumerate(value):
            item_path = _path((path, index, None))
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
        self, shape: _Shape, value: Any, path: Path, boundary: _Boundary
    ) -> dict[str, Any]:
        abstract: GraphQLAbstractType = shape.output_type
        plan = self.plan
        field = shape.field
        name: Any = None
        info: Any = None
        origin = shape.interface
        if (
            origin is not None
            and getattr(value, TYPE_CAST_ATTRIBUTE, None) is None
            and isinstance(value, origin)
        ):
            # What Strawberry's own resolve_type answers for an instance of the interface.
            definition = getattr(value, "__strawberry_definition__", None)
            if definition is not None and not definition.is_graphql_generic:
                name = definition.name
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
            if info is None and not _strawberry_made(check):
                info = self.info(field, path)
            ok = check(value, info)
            if optimized_is_awaitable(ok):
                raise NotPlannableAtRun("an asynchronous is_type_of")
            if not ok:
                raise invalid_return_type_error(runtime, value, field.details)
        return self.fields(shape.object_plan(runtime, self.variables), value, path, boundary)

    # -- awaiting -----------------------------------------------------------------------------

    def suspend(
        self,
        awaitable: Any,
        field: _FieldPlan,
        shape: _Shape,
        container: Any,
        key: Any,
        path: Path,
        boundary: _Boundary,
    ) -> None:
        """Leave a resolver's awaitable to run, and complete its value once it is done.

        A coroutine becomes a task of its own, and nothing more: no wrapper coroutine, no
        gather. It has to be a task: code below a resolver may rely on the task it runs in
        (asyncio.timeout, aiohttp's timeouts and anyio's cancel scopes cancel the current
        task), so coroutines are never stepped by hand. A future is waited on as it is."""
        future = (
            self.loop.create_task(awaitable)
            if type(awaitable) is CoroutineType
            else ensure_future(awaitable)
        )
        suspended = _Suspended(self, future, field, shape, container, key, path, boundary)
        self.waiting.add(suspended)
        future.add_done_callback(suspended)

    async def drain(self) -> None:
        loop = get_running_loop()
        while self.waiting:
            if not self.ready:
                self.wake = loop.create_future()
                try:
                    await self.wake
                finally:
                    self.wake = None
            ready, self.ready = self.ready, []
            for suspended in ready:
                self.waiting.discard(suspended)
                future = suspended.future
                if future.cancelled():
                    continue  # below a nulled position: its answer cannot be seen
                error = future.exception()
                if error is None:
                    self.settle(suspended, future.result())
                elif isinstance(error, Exception):
                    self.fail(suspended, error)
                elif self.failure is None:  # an exit, or a cancellation from below
                    self.failure = error
            if self.failure is not None:
                raise self.failure

    def abandon(self) -> None:
        for suspended in self.waiting:
            suspended.future.cancel()
        self.waiting.clear()

    def settle(self, suspended: _Suspended, value: Any) -> None:
        container, key, path = suspended.container, suspended.key, suspended.path
        if self.nulled and self.errors.has_nulled_position(path):
            return
        try:
            container[key] = self.complete(
                suspended.shape, value, container, key, path, suspended.boundary
            )
        except Exception as raw:
            self.fail(suspended, raw)

    def fail(self, suspended: _Suspended, raw: Exception) -> None:
        path = suspended.path
        if self.nulled and self.errors.has_nulled_position(path):
            return
        error = located_error(raw, suspended.field.nodes, path.as_list())
        if suspended.shape.kind != _NON_NULL:
            self.errors.add(error, path)
            suspended.container[suspended.key] = None
            return
        boundary = suspended.boundary
        self.errors.add(error, boundary.path)
        boundary.container[boundary.key] = None
        self.nulled = True
        # What still runs below the nulled position cannot be seen: cancelled, as
        # graphql-core cancels the siblings of a failure.
        for other in list(self.waiting):
            if self.errors.has_nulled_position(other.path):
                other.future.cancel()


class NotPlannableAtRun(Exception):
    """Something only the generic executor supports, met while running (reported as an
    internal error: the schema changed under the plan)."""


class _SchemaHolder:
    __slots__ = ("schema",)

    def __init__(self, schema: GraphQLSchema) -> None:
        self.schema = schema


async def _gather(values: Iterable[Any]) -> list[Any]:
    return await gather_with_cancel(*values)


def _track(values: Iterable[Any]) -> None:
    for value in values:
        if optimized_is_awaitable(value):
            future = ensure_future(value)
            _BACKGROUND.add(future)
            future.add_done_callback(_BACKGROUND.discard)


_BACKGROUND: set[Future[Any]] = set()


def _ready(shape: _Shape, value: Any) -> bool:
    """Whether a value of a leaf (or a list of leaves) is already its own serialisation."""
    if shape.kind == _NON_NULL:
        if value is None:
            return False
        shape = shape.inner  # type: ignore[assignment]
    elif value is None:
        return True
    if shape.kind == _LEAF:
        leaf, value_type = shape.leaf, type(value)
        return (
            (leaf == _STRING and value_type is str)
            or (leaf == _BOOLEAN and value_type is bool)
            or (leaf == _INT and value_type is int and _INT_MIN <= value <= _INT_MAX)
            or (leaf == _FLOAT and value_type is float and math.isfinite(value))
        )
    return shape.plain is not None and type(value) is list and _plain(value, *shape.plain)


def _plain(items: list[Any] | tuple[Any, ...], leaf: int, nullable: bool) -> bool:
    """Whether every item is already its own serialisation (or null where nulls may be)."""
    if leaf == _STRING:
        return all(type(i) is str or (nullable and i is None) for i in items)
    if leaf == _FLOAT:
        return all(
            (type(i) is float and math.isfinite(i)) or (nullable and i is None) for i in items
        )
    if leaf == _INT:
        return all(
            (type(i) is int and _INT_MIN <= i <= _INT_MAX) or (nullable and i is None)
            for i in items
        )
    return all(type(i) is bool or (nullable and i is None) for i in items)


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


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


def _directive_variables(document: DocumentNode) -> tuple[str, ...]:
    """Variables read by @skip and @include anywhere in the document, in a stable order."""
    from graphql import DirectiveNode, VariableNode, visit
    from graphql.language import Visitor

    found: dict[str, None] = {}

    class Finder(Visitor):
        def enter_directive(self, node: DirectiveNode, *_args: Any) -> None:
            if node.name.value in ("skip", "include"):
                for argument in node.arguments or ():
                    if isinstance(argument.value, VariableNode):
                        found[argument.value.name.value] = None

    visit(document, Finder())
    return tuple(found)


def _check_document(document: DocumentNode) -> None:
    from graphql import DirectiveNode, visit
    from graphql.language import Visitor

    class Checker(Visitor):
        def enter_directive(self, node: DirectiveNode, *_args: Any) -> None:
            if node.name.value in _UNPLANNED_DIRECTIVES:
                raise NotPlannable(f"@{node.name.value} runs generically")

        def enter_field(self, node: FieldNode, *_args: Any) -> None:
            if node.name.value in _INTROSPECTION:
                raise NotPlannable("introspection runs generically")

        def enter_fragment_definition(self, node: FragmentDefinitionNode, *_args: Any) -> None:
            if node.variable_definitions:
                raise NotPlannable("fragment variables run generically")

    visit(document, Checker())
