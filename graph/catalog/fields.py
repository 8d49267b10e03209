"""Root fields of the catalog: look-ups, lists with filters and search, facets, and imports."""

from __future__ import annotations

from collections.abc import Sequence

import strawberry
from strawberry import relay
from strawberry.scalars import JSON
from strawberry.types.nodes import SelectedField, Selection

from graph.authz import AdminOnly, Authorize, EntityOwner
from graph.catalog.types import (
    CATALOG_CACHE,
    INHERIT,
    Entity,
    entity_from_record,
    one_by_ref,
    soon,
)
from graph.context import Info
from resolvers import catalog as resolve
from resolvers.catalog import EntitiesPage, FilterArgs
from sources.catalog.listing import Order
from sources.catalog.queries import FacetField
from sources.catalog.refs import normalize_ref
from sources.catalog.store import ApplyResult
from sources.errors import CatalogError, InvalidRef

__all__ = ["CatalogMutation", "CatalogQuery", "catalog_query", "filter_args"]


@strawberry.input(description="Each field matches any of its values; fields combine with AND.")
class EntityFilter:
    kind: list[str] | None = None
    type: list[str] | None = None
    owner: list[str] | None = strawberry.field(
        default=None, description="Owner refs; the kind defaults to group."
    )
    lifecycle: list[str] | None = None
    tag: list[str] | None = None
    system: list[str] | None = strawberry.field(
        default=None, description="System refs; the kind defaults to system."
    )
    namespace: list[str] | None = None
    labels: JSON | None = strawberry.field(
        default=None, description='Labels that must all match, as {"key": "value"}.'
    )
    annotations: JSON | None = strawberry.field(
        default=None,
        description="Annotations that must all match, key and value exactly, as "
        '{"github.com/project-slug": "juniper/checkout"}: who owns a repository, a '
        "Kubernetes id or a PagerDuty service.",
    )
    refs: list[str] | None = strawberry.field(
        default=None,
        description="Only these entities: whole refs (kind:namespace/name, the namespace "
        "optional), at most as many as a page may hold; an empty list matches nothing.",
    )

    def args(self, max_refs: int) -> FilterArgs:
        for name, value in (("labels", self.labels), ("annotations", self.annotations)):
            if value is not None and (
                not isinstance(value, dict)
                or not all(isinstance(k, str) and isinstance(v, str) for k, v in value.items())
            ):
                raise CatalogError(f'filter.{name} must be an object of strings, as {{"a": "b"}}')
        if self.refs is not None and len(self.refs) > max_refs:
            raise CatalogError(f"filter.refs may name at most {max_refs} entities")
        return FilterArgs(
            kind=self.kind,
            type=self.type,
            owner=self.owner,
            lifecycle=self.lifecycle,
            tag=self.tag,
            system=self.system,
            namespace=self.namespace,
            labels=self.labels,  # type: ignore[arg-type]  # checked above: strings by strings
            annotations=self.annotations,  # type: ignore[arg-type]  # likewise
            refs=self.refs,
        )


def filter_args(info: Info, filter: EntityFilter | None) -> FilterArgs | None:
    """A list field's filter as the resolvers take it; refs bounded by the page size."""
    return filter.args(info.context.settings.max_page_size) if filter else None


# The sources' enums, exposed under the schema's names.
strawberry.enum(Order, name="EntityOrder", description="How a list is sorted.")
strawberry.enum(FacetField, name="FacetField", description="A field facets can count.")


@strawberry.type(directives=[CATALOG_CACHE])
class Facet:
    value: str
    count: int


@strawberry.type(directives=[INHERIT])
class EntityEdge:
    cursor: str
    node: Entity


@strawberry.type(directives=[CATALOG_CACHE], description="A page of entities (Relay connection).")
class EntityConnection:
    page: strawberry.Private[EntitiesPage]
    edges: list[EntityEdge]
    page_info: relay.PageInfo

    @strawberry.field
    def nodes(self) -> list[Entity]:
        return [edge.node for edge in self.edges]

    @strawberry.field(description="How many entities match, over all pages.")
    async def total_count(self, info: Info) -> int:
        return await resolve.count(info.context.db, self.page)


def check_page_size(info: Info, first: int) -> None:
    limit = info.context.settings.max_page_size
    if not 0 <= first <= limit:
        raise CatalogError(f"first must be between 0 and {limit}")


def connection(page: EntitiesPage) -> EntityConnection:
    edges = [
        EntityEdge(cursor=cursor, node=entity_from_record(record))
        for record, cursor in zip(page.records, page.cursors, strict=True)
    ]
    return EntityConnection(
        page=page,
        edges=edges,
        page_info=relay.PageInfo(
            has_next_page=page.has_next,
            has_previous_page=page.has_previous,
            start_cursor=page.cursors[0] if page.cursors else None,
            end_cursor=page.cursors[-1] if page.cursors else None,
        ),
    )


@strawberry.type
class EntityError:
    location: str
    document: int | None = strawberry.field(description="1-based index in a multi-document file.")
    field: str | None = strawberry.field(description="Dotted path of the offending field.")
    message: str


@strawberry.type(
    description="A field an entity was stored without: the placeholder ($text, $json or $yaml) "
    "that should give it could not be read. The entity's unavailable field says the same until "
    "an import reads it."
)
class UnavailableEntityField:
    ref: str = strawberry.field(description="The entity stored without the field.")
    location: str
    document: int = strawberry.field(description="1-based index in a multi-document file.")
    field: str = strawberry.field(description="Dotted path of the field, as spec.definition.")
    reason: str = strawberry.field(description="The placeholder, and why it could not be read.")


@strawberry.type
class ApplyEntitiesResult:
    result: strawberry.Private[ApplyResult]
    errors: list[EntityError]

    @strawberry.field(
        description="Fields entities were stored without, their placeholder unreadable. Text "
        "sent here has no file tree: placeholders may name absolute http(s) URLs only."
    )
    def unavailable(self) -> list[UnavailableEntityField]:
        return [
            UnavailableEntityField(
                ref=u.ref, location=u.location, document=u.document, field=u.field, reason=u.reason
            )
            for u in self.result.unavailable
        ]

    @strawberry.field
    def created(self) -> list[str]:
        return self.result.created

    @strawberry.field
    def updated(self) -> list[str]:
        return self.result.updated

    @strawberry.field
    def deleted(self) -> list[str]:
        return self.result.deleted

    @strawberry.field
    def unchanged(self) -> int:
        return len(self.result.unchanged)


@strawberry.type
class CatalogQuery:
    @strawberry.field(
        description="One entity by ref; the kind is required, the namespace optional."
    )
    def entity(self, info: Info, ref: str) -> Entity | None:
        return soon(one_by_ref(info, ref))

    @strawberry.field(description="Entities matching a filter and a free-text search.")
    async def entities(
        self,
        info: Info,
        filter: EntityFilter | None = None,
        search: str | None = None,
        order_by: Order | None = None,
        first: int = 20,
        after: str | None = None,
    ) -> EntityConnection:
        check_page_size(info, first)
        info.context.depends_on(*_list_tags(filter))
        page = await resolve.entities_page(
            info.context.db,
            info.context.loaders,
            filter_args(info, filter),
            search,
            order=order_by,
            first=first,
            after=after,
            with_total=_asks(info.selected_fields, "totalCount"),
        )
        return connection(page)

    @strawberry.field(description="Counts of entities per value of a field, most frequent first.")
    async def facets(
        self,
        info: Info,
        field: FacetField,
        filter: EntityFilter | None = None,
        search: str | None = None,
        first: int = 50,
    ) -> list[Facet]:
        if not 1 <= first <= 1000:
            raise CatalogError("first must be between 1 and 1000")
        info.context.depends_on(*_list_tags(filter))
        counts = await resolve.facets(
            info.context.db, field, filter_args(info, filter), search, first
        )
        return [Facet(value=value, count=count) for value, count in counts]


def _asks(selections: Sequence[Selection], name: str) -> bool:
    """Whether a field ``name`` is selected right under these (through any fragments)."""
    for selection in selections:
        for inner in selection.selections:
            if isinstance(inner, SelectedField):
                if inner.name == name:
                    return True
            elif _asks([inner], name):
                return True
    return False


def _list_tags(filter: EntityFilter | None) -> list[str]:
    """A list of some refs changes only with those entities; of some kinds, with any entity of
    those kinds; of all kinds, with any."""
    if filter is not None and filter.refs is not None:
        try:
            return [normalize_ref(ref) for ref in filter.refs]
        except InvalidRef:
            return ["catalog"]  # the list itself refuses them
    if filter is not None and filter.kind:
        return [f"kind:{kind.strip().lower()}" for kind in filter.kind]
    return ["catalog"]


def catalog_query() -> type:
    """The catalog's root fields with a fresh ``node`` field: Strawberry's relay extension
    binds to the schema it is first built into, so each schema needs its own."""

    @strawberry.type
    class CatalogQueryWithNode(CatalogQuery):
        node: relay.Node | None = relay.node(description="Any object by its global ID.")

    return CatalogQueryWithNode


@strawberry.type
class CatalogMutation:
    @strawberry.mutation(
        description="Import catalog-info.yaml text (one or more documents) as from `location`. "
        "Invalid documents are reported and skipped; the rest is stored in one transaction. "
        "Admins only.",
        extensions=[Authorize(AdminOnly(), "catalog.applyEntities")],
    )
    async def apply_entities(
        self, info: Info, yaml: str, location: str = "api"
    ) -> ApplyEntitiesResult:
        context = info.context
        result = await resolve.apply_entities(
            context.db, yaml, location, context.settings.catalog_fetch
        )
        await context.invalidate(result.affected)
        return ApplyEntitiesResult(
            result=result,
            errors=[
                EntityError(
                    location=e.location, document=e.document, field=e.field, message=e.message
                )
                for e in result.errors
            ],
        )

    @strawberry.mutation(
        description="Unregister an entity. Its owners (members of the owning group, at any "
        "depth) and admins may.",
        extensions=[Authorize(EntityOwner("ref"), "catalog.deleteEntity")],
    )
    async def delete_entity(self, info: Info, ref: str) -> DeleteEntityResult:
        normalised = normalize_ref(ref)
        affected = await resolve.delete_entity(info.context.db, normalised)
        await info.context.invalidate(affected)
        return DeleteEntityResult(ref=normalised, deleted=bool(affected))


@strawberry.type
class DeleteEntityResult:
    ref: str
    deleted: bool
