"""Refuses, before anything runs, an operation carrying a string PostgreSQL cannot store.

A NUL character (or a lone surrogate, which has no UTF-8 spelling) in any argument or variable
would otherwise reach SQL somewhere (a search, a filter, the audit log) and fail there as an
internal error. Checked once per operation, after validation: the document's string literals
once per document (remembered by its text), the variables each time. The answer is one
``BAD_USER_INPUT`` error naming the argument or variable, and no ``data`` (HTTP 400 under
``application/graphql-response+json``; over a websocket, a subscription's one ``next``).

A refused mutation is still an attempt: each of its root fields is written to the audit log
(outcome ``failed``, with the arguments spelled out), under the action its ``Authorize`` names.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import AsyncIterator, Iterator
from typing import Any

from graphql import (
    ArgumentNode,
    DocumentNode,
    ExecutionResult,
    FieldNode,
    GraphQLError,
    GraphQLSchema,
    ListValueNode,
    ObjectValueNode,
    OperationDefinitionNode,
    OperationType,
    StringValueNode,
    ValueNode,
    VariableNode,
    get_operation_ast,
    value_from_ast_untyped,
)
from strawberry.extensions import SchemaExtension

from graph.authz import Authorize
from sources.audit import record_audit
from sources.text import unstorable

__all__ = ["InputGuard", "LiteralChecks", "first_unstorable"]

_Literal = tuple[str, str, str] | None  # (field, argument, why), or None: all storable


class LiteralChecks:
    """What is wrong with documents' string literals, by document text; shared by requests."""

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        self._found: OrderedDict[str, _Literal] = OrderedDict()

    def __call__(self, query: str, document: DocumentNode) -> _Literal:
        if query in self._found:
            self._found.move_to_end(query)
            return self._found[query]
        found = self._found[query] = _literal_problem(document)
        if len(self._found) > self.size:
            self._found.popitem(last=False)
        return found


class InputGuard(SchemaExtension):
    def __init__(self, literals: LiteralChecks) -> None:
        self.literals = literals

    async def on_execute(self) -> AsyncIterator[None]:
        context = self.execution_context
        document = context.graphql_document
        if document is None or context.result is not None:
            yield
            return
        problem = self._problem(context.query or "", document, context.variables)
        if problem is None:
            yield
            return
        operation = get_operation_ast(document, context.operation_name)
        if operation is not None and operation.operation is OperationType.MUTATION:
            await _audit_refusal(context.schema._schema, operation, context, problem)
        refusal = GraphQLError(problem, extensions={"code": "BAD_USER_INPUT"})
        if operation is not None and operation.operation is OperationType.SUBSCRIPTION:
            # Strawberry subscribes whatever result an extension set; what on_execute raises
            # becomes the subscription's one answer instead.
            raise refusal
        context.result = ExecutionResult(None, [refusal])
        yield

    def _problem(
        self, query: str, document: DocumentNode, variables: dict[str, Any] | None
    ) -> str | None:
        for name, value in (variables or {}).items():
            why = first_unstorable(value)
            if why is not None:
                return f"variable ${name} {why}: it cannot be stored, so it is refused"
        found = self.literals(query, document)
        if found is None:
            return None
        field, argument, why = found
        return f"argument {argument} of {field} {why}: it cannot be stored, so it is refused"


def first_unstorable(value: Any) -> str | None:
    # A walk with a stack of its own: JSON variables may be nested as deep as the body parser
    # allows (about a thousand levels), deeper than Python's recursion limit leaves room for.
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            why = unstorable(item)
            if why is not None:
                return why
        elif isinstance(item, dict):
            pending += item.keys()
            pending += item.values()
        elif isinstance(item, list):
            pending += item
    return None


def _literal_problem(document: DocumentNode) -> _Literal:
    for definition in document.definitions:
        if isinstance(definition, OperationDefinitionNode):
            for variable in definition.variable_definitions or ():
                if variable.default_value is None:
                    continue
                for text in _strings(variable.default_value):
                    why = unstorable(text)
                    if why is not None:
                        return "the operation", f"${variable.variable.name.value}", why
        for field, argument in _arguments(definition):
            for text in _strings(argument.value):
                why = unstorable(text)
                if why is not None:
                    return field.name.value, argument.name.value, why
    return None


def _arguments(node: Any) -> Iterator[tuple[FieldNode, ArgumentNode]]:
    selection_set = getattr(node, "selection_set", None)
    if selection_set is None:
        return
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            for argument in selection.arguments or ():
                yield selection, argument
        yield from _arguments(selection)


def _strings(value: ValueNode) -> Iterator[str]:
    if isinstance(value, StringValueNode):
        yield value.value
    elif isinstance(value, ListValueNode):
        for item in value.values:
            yield from _strings(item)
    elif isinstance(value, ObjectValueNode):
        for field in value.fields:
            yield from _strings(field.value)


async def _audit_refusal(
    schema: GraphQLSchema, operation: OperationDefinitionNode, context: Any, problem: str
) -> None:
    request = context.context
    viewer = getattr(request, "viewer", None)
    db = getattr(request, "db", None)
    mutation = schema.mutation_type
    if viewer is None or db is None or mutation is None:
        return
    for selection in operation.selection_set.selections:
        if not isinstance(selection, FieldNode):
            continue
        definition = mutation.fields.get(selection.name.value)
        if definition is None:
            continue
        strawberry_field = (definition.extensions or {}).get("strawberry-definition")
        authorize = next(
            (e for e in getattr(strawberry_field, "extensions", ()) if isinstance(e, Authorize)),
            None,
        )
        arguments = _as_sent(selection, context.variables or {})
        ref = arguments.get("ref")
        await record_audit(
            db,
            actor=viewer.actor,
            action=authorize.action if authorize is not None else selection.name.value,
            target_ref=ref if isinstance(ref, str) else None,
            outcome="failed",
            arguments=arguments,
            message=problem,
        )


def _as_sent(field: FieldNode, variables: dict[str, Any]) -> dict[str, Any]:
    """A field's arguments as the client sent them (uncoerced: they may not coerce)."""
    arguments: dict[str, Any] = {}
    for argument in field.arguments or ():
        value = argument.value
        if isinstance(value, VariableNode):
            arguments[argument.name.value] = variables.get(value.name.value)
        else:
            arguments[argument.name.value] = value_from_ast_untyped(value, variables)
    return arguments
