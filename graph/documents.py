"""Walking a validated GraphQL document: the fields each selection set selects, fragments
expanded, with the type each field is selected on. Shared by the cache policy and the cost."""

from __future__ import annotations

from collections.abc import Iterator

from graphql import (
    DocumentNode,
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLNamedType,
    GraphQLSchema,
    InlineFragmentNode,
    SelectionSetNode,
)

__all__ = ["fragments_of", "selected_fields"]


def fragments_of(document: DocumentNode) -> dict[str, FragmentDefinitionNode]:
    return {d.name.value: d for d in document.definitions if isinstance(d, FragmentDefinitionNode)}


def selected_fields(
    schema: GraphQLSchema,
    selection_set: SelectionSetNode,
    parent: GraphQLNamedType,
    fragments: dict[str, FragmentDefinitionNode],
) -> Iterator[tuple[FieldNode, GraphQLNamedType]]:
    """The fields of a selection set with the type each is selected on. The document must have
    passed validation: fragments exist and do not spread themselves."""
    for selection in selection_set.selections:
        if isinstance(selection, FieldNode):
            yield selection, parent
        elif isinstance(selection, InlineFragmentNode):
            condition = selection.type_condition
            on = schema.get_type(condition.name.value) if condition else parent
            yield from selected_fields(schema, selection.selection_set, on or parent, fragments)
        elif isinstance(selection, FragmentSpreadNode):
            fragment = fragments.get(selection.name.value)
            if fragment is not None:
                on = schema.get_type(fragment.type_condition.name.value)
                yield from selected_fields(schema, fragment.selection_set, on or parent, fragments)
