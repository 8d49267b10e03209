"""Compiling a document into plans: ``Plans`` keeps them, a ``Plan`` is one operation.

A plan is built at a document's first use after it validated (so every rule, the limits
included, has passed), for the operation it names: its fragments resolved, its cost worked out
once (or once per page size when ``first``/``last`` are variables), its cache policy and
string-literal check too. Its root selection set is planned per combination of the variables
that ``@skip``/``@include`` read (a few variants at most); the selection sets below it are
planned as values of each concrete type are met (``nodes.Shape.object_plan``). ``Plan.execute``
hands each request to the runner.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from typing import Any, Final

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLObjectType,
    OperationType,
    parse,
)
from graphql.execution.collect_fields import FragmentDetails, collect_fields
from graphql.execution.values import VariableValues, get_variable_values
from graphql.type.introspection import TypeNameMetaFieldDef
from graphql.type.schema import GraphQLSchema
from graphql.utilities import get_operation_ast
from strawberry.types import ExecutionResult
from strawberry.types.graphql import OperationType as StrawberryOperationType

from graph.cache_control import PolicyCache
from graph.documents import fragments_of
from graph.errors import AtriumSchema, mask_unexpected
from graph.input_guard import LiteralChecks, first_unstorable
from graph.limits import query_cost, size_variables
from graph.plans.nodes import FieldDefinition, NotPlannable, ObjectPlan
from graph.plans.runner import Run

__all__ = ["NotPlannable", "Plan", "Plans"]

log = logging.getLogger("atrium.plans")

# Directives whose meaning the runner does not implement: documents using them run generically.
_UNPLANNED_DIRECTIVES: Final = frozenset(
    {"defer", "stream", "experimental_disableErrorPropagation"}
)
_INTROSPECTION: Final = frozenset({"__schema", "__type"})
_MAX_VARIANTS: Final = 8


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

    def tried(self, query: str | None, operation_name: str | None) -> bool:
        """Whether this document was learned (planned, or found not plannable)."""
        return (query, operation_name) in self._plans

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
        self.variants: OrderedDict[tuple[Any, ...], ObjectPlan] = OrderedDict()
        converter = schema.schema_converter
        self.scalar_registry = converter.scalar_registry
        self.config = schema.config
        self.no_handlers = not getattr(converter, "exception_handlers", ())
        self.default_resolver = schema.config.default_resolver
        self.fields: dict[tuple[str, str], FieldDefinition] = {}

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
        run = Run(self, context, coerced)
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

    def _variant(self, variables: VariableValues) -> ObjectPlan:
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
            found = ObjectPlan(self, self.root, collected.grouped_field_set, variables)
            self.variants[key] = found
            if len(self.variants) > _MAX_VARIANTS:
                self.variants.popitem(last=False)
        return found

    # -- building ---------------------------------------------------------------------------

    def definition(self, parent: GraphQLObjectType, name: str) -> FieldDefinition | None:
        key = (parent.name, name)
        found = self.fields.get(key)
        if found is None:
            field = TypeNameMetaFieldDef if name == "__typename" else parent.fields.get(name)
            if field is None:
                return None
            found = self.fields[key] = FieldDefinition(self, parent, name, field)
        return found


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


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
