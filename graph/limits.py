"""The cost of a query: what it could make the server resolve, refused above a limit.

Every field costs one, times the size of every list above it. A field with a ``first`` or
``last`` argument (a page) counts as that many items, capped at the largest page the API
serves; the lists inside it (a connection's ``edges`` and ``nodes``) are that page, not more.
A list with no size argument counts as ``assumed_list_size`` items. Variables are read from
the request, so ``first: $n`` costs what ``n`` is.

Checked after validation, before anything executes: a refused query costs a walk of its
document, which the token limit keeps short.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    GraphQLError,
    GraphQLInterfaceType,
    GraphQLNamedType,
    GraphQLObjectType,
    GraphQLSchema,
    IntValueNode,
    OperationDefinitionNode,
    SelectionSetNode,
    VariableNode,
    get_named_type,
    get_nullable_type,
    get_operation_ast,
    is_list_type,
)
from strawberry.extensions import SchemaExtension

from graph.documents import fragments_of, selected_fields

__all__ = ["CostLimit", "query_cost", "size_variables"]

_SIZE_ARGUMENTS = ("first", "last")


def query_cost(
    schema: GraphQLSchema,
    operation: OperationDefinitionNode,
    fragments: dict[str, FragmentDefinitionNode],
    variables: dict[str, Any] | None,
    *,
    max_page: int,
    assumed_list_size: int,
) -> int:
    root = schema.get_root_type(operation.operation)
    if root is None:
        return 0
    walker = _Walker(schema, fragments, variables or {}, max_page, assumed_list_size)
    return walker.selection_cost(operation.selection_set, root, sized=False)


def size_variables(document: DocumentNode) -> tuple[str, ...]:
    """The variables a document's cost depends on: those given as page sizes. A document
    with none costs the same whatever its variables."""
    found: dict[str, None] = {}
    pending: list[Any] = list(document.definitions)
    while pending:
        node = pending.pop()
        if isinstance(node, FieldNode):
            for argument in node.arguments or ():
                if argument.name.value in _SIZE_ARGUMENTS and isinstance(
                    argument.value, VariableNode
                ):
                    found[argument.value.name.value] = None
        selection_set = getattr(node, "selection_set", None)
        if selection_set is not None:
            pending += selection_set.selections
    return tuple(sorted(found))


class _Walker:
    def __init__(
        self,
        schema: GraphQLSchema,
        fragments: dict[str, FragmentDefinitionNode],
        variables: dict[str, Any],
        max_page: int,
        assumed_list_size: int,
    ) -> None:
        self.schema = schema
        self.fragments = fragments
        self.variables = variables
        self.max_page = max_page
        self.assumed_list_size = assumed_list_size

    def selection_cost(
        self,
        selection_set: SelectionSetNode,
        parent: GraphQLNamedType,
        *,
        sized: bool,
    ) -> int:
        fields = selected_fields(self.schema, selection_set, parent, self.fragments)
        return sum(self.field_cost(node, on, sized=sized) for node, on in fields)

    def field_cost(self, node: FieldNode, parent: GraphQLNamedType, *, sized: bool) -> int:
        if node.name.value.startswith("__"):
            return 1
        field = None
        if isinstance(parent, GraphQLObjectType | GraphQLInterfaceType):
            field = parent.fields.get(node.name.value)
        if field is None:
            return 1
        page = self._page_size(node, field.args)
        is_list = is_list_type(get_nullable_type(field.type))
        if page is not None:
            times = page
        elif is_list and not sized:
            times = self.assumed_list_size
        else:
            times = 1
        below = 0
        if node.selection_set is not None:
            below = self.selection_cost(
                node.selection_set,
                get_named_type(field.type),
                # Lists right inside a page are the page: edges and nodes of a connection.
                sized=page is not None,
            )
        return times * (1 + below)

    def _page_size(self, node: FieldNode, arguments: dict[str, Any]) -> int | None:
        sizes: list[int] = []
        given = {a.name.value: a.value for a in node.arguments or ()}
        for name in _SIZE_ARGUMENTS:
            if name not in arguments:
                continue
            value: Any = None
            if name in given:
                literal = given[name]
                if isinstance(literal, IntValueNode):
                    value = int(literal.value)
                elif isinstance(literal, VariableNode):
                    value = self.variables.get(literal.name.value)
            else:
                value = arguments[name].default_value
            if isinstance(value, int) and not isinstance(value, bool):
                sizes.append(max(0, min(value, self.max_page)))
            elif name in given:
                sizes.append(self.max_page)  # a size that is not a number yet: the largest
        return max(sizes) if sizes else None


class CostLimit(SchemaExtension):
    """Refuses a valid query whose cost is above ``max_cost``, with code
    ``COST_ESTIMATED_TOO_EXPENSIVE`` and the cost in the error's extensions."""

    def __init__(self, *, max_cost: int, max_page: int, assumed_list_size: int) -> None:
        self.max_cost = max_cost
        self.max_page = max_page
        self.assumed_list_size = assumed_list_size

    def on_validate(self) -> Iterator[None]:
        # Runs after the validation cache (an earlier extension) has validated the document:
        # an invalid one has errors already and is not costed.
        self._check()
        yield

    def _check(self) -> None:
        execution_context = self.execution_context
        document = execution_context.graphql_document
        if execution_context.pre_execution_errors or document is None:
            return
        operation = get_operation_ast(document, execution_context.operation_name)
        if operation is None:
            return
        cost = query_cost(
            execution_context.schema._schema,
            operation,
            fragments_of(document),
            execution_context.variables,
            max_page=self.max_page,
            assumed_list_size=self.assumed_list_size,
        )
        if cost > self.max_cost:
            execution_context.pre_execution_errors = [
                GraphQLError(
                    f"the query would cost {cost}, above the limit of {self.max_cost}: ask for "
                    "smaller pages or fewer nested lists",
                    extensions={
                        "code": "COST_ESTIMATED_TOO_EXPENSIVE",
                        "cost": cost,
                        "maxCost": self.max_cost,
                    },
                )
            ]
