"""GraphQL types of the catalog: the ``Entity`` interface and one type per kind."""

from __future__ import annotations

from collections.abc import Awaitable, Iterable
from datetime import datetime
from typing import ClassVar, TypeVar

import strawberry
from strawberry import relay
from strawberry.scalars import JSON

from graph.cache_control import CacheControl, CacheScope
from graph.catalog.parts import INHERIT, ApiRemote, EntityLink, Profile, UnavailableField
from graph.context import Info
from resolvers import catalog as resolve
from resolvers import stars
from sources.catalog.queries import EntityRecord
from sources.errors import CatalogError

__all__ = [
    "CATALOG_CACHE",
    "ENTITY_TYPES",
    "INHERIT",
    "VIEWERS_OWN",
    "Entity",
    "entity_from_record",
    "one_by_ref",
    "soon",
]

# Catalog data changes by imports and syncs, which drop cached answers at once; the age bounds
# what browsers and proxies may keep without asking again.
CATALOG_CACHE = CacheControl(max_age=60)
# The viewer's own: kept for them alone, and dropped when their stars change.
VIEWERS_OWN = CacheControl(scope=CacheScope.PRIVATE)


@strawberry.type(
    directives=[CATALOG_CACHE],
    description="One relation of an entity; the target may not exist yet.",
)
class Relation:
    type: str
    target_ref: str

    @strawberry.field
    def target(self, info: Info) -> Entity | None:
        return soon(one_by_ref(info, self.target_ref))


@strawberry.interface(
    directives=[CATALOG_CACHE], description="An entity of the software catalog (Backstage's model)."
)
class Entity(relay.Node):
    node_ref: relay.NodeID[str]
    record: strawberry.Private[EntityRecord]
    ref: str = strawberry.field(description="kind:namespace/name, lowercase.")
    kind: str
    namespace: str
    name: str
    title: str | None
    description: str | None
    tags: list[str]
    labels: JSON
    annotations: JSON
    links: list[EntityLink]
    spec: JSON = strawberry.field(
        description="The entity's spec as ingested, placeholders ($text, $json, $yaml) replaced "
        "by what they read; null where one could not be read (see unavailable)."
    )
    updated_at: datetime

    @strawberry.field(
        description="Fields stored empty because their placeholder ($text, $json or $yaml) "
        "could not be read at the last import, and why; empty when every one was read. The "
        "entity is kept all the same, and the next import tries again."
    )
    def unavailable(self) -> list[UnavailableField]:
        return [
            UnavailableField(field=path, reason=reason)
            for path, reason in sorted(self.record.unavailable.items())
        ]

    @strawberry.field(
        description="Whether the person asking starred this entity; false for nobody.",
        directives=[VIEWERS_OWN],
    )
    async def viewer_starred(self, info: Info) -> bool:
        user = info.context.viewer.ref
        if user is None:
            return False
        info.context.depends_on(stars.stars_tag(user))
        return await stars.is_starred(info.context.loaders, user, self.ref)

    @strawberry.field(description="Relations of the given types, such as ownedBy or dependsOn.")
    async def relations(self, info: Info, types: list[str]) -> list[Relation]:
        found = []
        for relation in dict.fromkeys(types):
            refs = await resolve.related_refs(info.context.loaders, self.ref, relation)
            found += [Relation(type=relation, target_ref=ref) for ref in refs]
        return found

    @classmethod
    async def resolve_nodes(  # type: ignore[override]
        cls, *, info: Info, node_ids: Iterable[str], required: bool = False
    ) -> list[Entity | None]:
        records = await resolve.entities(info.context.loaders, list(node_ids))
        nodes = [entity_from_record(r) if r is not None else None for r in records]
        if required and any(n is None for n in nodes):
            raise CatalogError("no entity has that id")
        return nodes


T = TypeVar("T", bound=Entity)
V = TypeVar("V")


def soon(value: V | Awaitable[V]) -> V:
    """A resolver's answer, or an awaitable of it. graphql-core and the compiled plans await
    what a resolver returns when it is awaitable, so a resolver that can often answer at once
    (everything it reads in the loaders' cache) returns the value itself, sparing the request
    a task and a turn of the event loop, and its coroutine only when it must wait. Typed as
    the value: Strawberry reads the resolver's annotation for the schema."""
    return value  # type: ignore[return-value]


def one_by_ref(info: Info, ref: str | None) -> Entity | Awaitable[Entity | None] | None:
    if ref is None:
        return None
    found = resolve.entity_now(info.context.loaders, ref)
    if found is None or isinstance(found, EntityRecord):
        return entity_from_record(found) if found is not None else None
    return _one_later(found)


async def _one_later(found: Awaitable[EntityRecord | None]) -> Entity | None:
    record = await found
    return entity_from_record(record) if record is not None else None


def _one_of_class(info: Info, ref: str | None, cls: type[T]) -> T | Awaitable[T | None] | None:
    """The entity ``ref`` names, if it is of the kind ``cls`` stands for."""
    found = one_by_ref(info, ref)
    if found is None or isinstance(found, Entity):
        return found if isinstance(found, cls) else None
    return _one_of_class_later(found, cls)


async def _one_of_class_later(found: Awaitable[Entity | None], cls: type[T]) -> T | None:
    entity = await found
    return entity if isinstance(entity, cls) else None


def _all_related(info: Info, ref: str, relation: str, cls: type[T]) -> list[T] | Awaitable[list[T]]:
    """Existing entities at the end of a relation, of the kind ``cls`` stands for."""
    kind = None if cls is Entity else cls.kind_name  # type: ignore[attr-defined]
    found = resolve.related_now(info.context.loaders, ref, relation, kind)
    if isinstance(found, list):
        return _of_class(found, cls)
    return _all_later(found, cls)


async def _all_later(found: Awaitable[list[EntityRecord]], cls: type[T]) -> list[T]:
    return _of_class(await found, cls)


def _of_class(records: list[EntityRecord], cls: type[T]) -> list[T]:
    return [e for e in map(entity_from_record, records) if isinstance(e, cls)]


def _first_related(
    info: Info, ref: str, relation: str, cls: type[T]
) -> T | Awaitable[T | None] | None:
    found = _all_related(info, ref, relation, cls)
    if isinstance(found, list):
        return found[0] if found else None
    return _first_later(found)


async def _first_later(found: Awaitable[list[T]]) -> T | None:
    entities = await found
    return entities[0] if entities else None


@strawberry.type
class _Owned:
    """Fields of kinds that have an owner (Component, API, Resource, System, Domain)."""

    record: strawberry.Private[EntityRecord]

    @strawberry.field(description="The owner's ref, even when no such entity exists yet.")
    def owner_ref(self) -> str | None:
        return self.record.owner_ref

    @strawberry.field(description="The owning group or user.")
    def owner(self, info: Info) -> Entity | None:
        # Through the relation, not owner_ref, so it batches with the entity's other relations.
        return soon(_first_related(info, self.record.ref, "ownedBy", Entity))


@strawberry.type
class _Typed:
    record: strawberry.Private[EntityRecord]

    @strawberry.field
    def type(self) -> str | None:
        return self.record.spec_type


@strawberry.type
class _Lifecycle:
    record: strawberry.Private[EntityRecord]

    @strawberry.field
    def lifecycle(self) -> str | None:
        return self.record.lifecycle


@strawberry.type
class _InSystem:
    record: strawberry.Private[EntityRecord]

    @strawberry.field
    def system(self, info: Info) -> System | None:
        return soon(_first_related(info, self.record.ref, "partOf", System))


@strawberry.type
class _Dependencies:
    record: strawberry.Private[EntityRecord]

    @strawberry.field(description="What this depends on (dependsOn).")
    def dependencies(self, info: Info) -> list[Entity]:
        return soon(_all_related(info, self.record.ref, "dependsOn", Entity))

    @strawberry.field(description="What depends on this (dependencyOf).")
    def dependents(self, info: Info) -> list[Entity]:
        return soon(_all_related(info, self.record.ref, "dependencyOf", Entity))


@strawberry.type
class _Profiled:
    record: strawberry.Private[EntityRecord]

    @strawberry.field
    def profile(self) -> Profile:
        # Built once: the entity object is shared by every request that reads its record.
        found: Profile | None = self.__dict__.get("_profile")
        if found is None:
            raw = self.record.spec.get("profile")
            raw = raw if isinstance(raw, dict) else {}
            found = self.__dict__["_profile"] = Profile(
                display_name=_text(raw.get("displayName")),
                email=_text(raw.get("email")),
                picture=_text(raw.get("picture")),
            )
        return found

    @strawberry.field(description="Entities this owns directly.")
    def owns(self, info: Info) -> list[Entity]:
        return soon(_all_related(info, self.record.ref, "ownerOf", Entity))


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


@strawberry.type(
    directives=[CATALOG_CACHE],
    description="A piece of software: a service, website, library, worker...",
)
class Component(_Owned, _Typed, _Lifecycle, _InSystem, _Dependencies, Entity):
    kind_name: ClassVar[str] = "Component"

    @strawberry.field
    def provides_apis(self, info: Info) -> list[API]:
        return soon(_all_related(info, self.record.ref, "providesApi", API))

    @strawberry.field
    def consumes_apis(self, info: Info) -> list[API]:
        return soon(_all_related(info, self.record.ref, "consumesApi", API))

    @strawberry.field(description="The component this is part of (spec.subcomponentOf).")
    def parent_component(self, info: Info) -> Component | None:
        return soon(_first_related(info, self.record.ref, "partOf", Component))

    @strawberry.field
    def subcomponents(self, info: Info) -> list[Component]:
        return soon(_all_related(info, self.record.ref, "hasPart", Component))


@strawberry.type(
    directives=[CATALOG_CACHE],
    name="API",
    description="An interface a component provides or consumes.",
)
class API(_Owned, _Typed, _Lifecycle, _InSystem, Entity):
    kind_name: ClassVar[str] = "API"

    @strawberry.field(
        description="The API's definition (OpenAPI, AsyncAPI, GraphQL, gRPC...) as text; null "
        "when it has none (an MCP server's remotes describe it) or its placeholder could not be "
        "read (definitionUnavailable says why)."
    )
    def definition(self) -> str | None:
        return _text(self.record.spec.get("definition"))

    @strawberry.field(
        description="Why the definition is null although the entity names one: its "
        "placeholder ($text, $json or $yaml) could not be read at the last import, as in "
        "\"$text './petstore.oas.yaml': no such file\". Null when it was read or none is "
        "named. The next import tries again."
    )
    def definition_unavailable(self) -> str | None:
        return self.record.unavailable.get("spec.definition")

    @strawberry.field(
        description="Where the API is reached (spec.remotes): required of MCP servers and AI "
        "model servers, which have no definition; empty when none is given."
    )
    def remotes(self) -> list[ApiRemote]:
        raw = self.record.spec.get("remotes")
        return [
            ApiRemote(type=r["type"], url=r["url"])
            for r in (raw if isinstance(raw, list) else ())
            if isinstance(r, dict)
            and isinstance(r.get("type"), str)
            and isinstance(r.get("url"), str)
        ]

    @strawberry.field
    def providers(self, info: Info) -> list[Component]:
        return soon(_all_related(info, self.record.ref, "apiProvidedBy", Component))

    @strawberry.field
    def consumers(self, info: Info) -> list[Component]:
        return soon(_all_related(info, self.record.ref, "apiConsumedBy", Component))


@strawberry.type(
    directives=[CATALOG_CACHE],
    description="Infrastructure a component needs: a database, a bucket, a topic.",
)
class Resource(_Owned, _Typed, _InSystem, _Dependencies, Entity):
    kind_name: ClassVar[str] = "Resource"


@strawberry.type(
    directives=[CATALOG_CACHE], description="A collection of components, APIs and resources."
)
class System(_Owned, _Typed, Entity):
    kind_name: ClassVar[str] = "System"

    @strawberry.field
    def domain(self, info: Info) -> Domain | None:
        # A system's partOf is its spec.domain alone, which system_ref holds: read by ref,
        # without the system's relations first (one statement fewer under a system).
        return soon(_one_of_class(info, self.record.system_ref, Domain))

    @strawberry.field
    def components(self, info: Info) -> list[Component]:
        return soon(_all_related(info, self.record.ref, "hasPart", Component))

    @strawberry.field
    def apis(self, info: Info) -> list[API]:
        return soon(_all_related(info, self.record.ref, "hasPart", API))

    @strawberry.field
    def resources(self, info: Info) -> list[Resource]:
        return soon(_all_related(info, self.record.ref, "hasPart", Resource))


@strawberry.type(directives=[CATALOG_CACHE], description="A business area grouping systems.")
class Domain(_Owned, _Typed, Entity):
    kind_name: ClassVar[str] = "Domain"

    @strawberry.field
    def systems(self, info: Info) -> list[System]:
        return soon(_all_related(info, self.record.ref, "hasPart", System))

    @strawberry.field
    def parent_domain(self, info: Info) -> Domain | None:
        return soon(_first_related(info, self.record.ref, "partOf", Domain))


@strawberry.type(directives=[CATALOG_CACHE], description="A team or other organisational unit.")
class Group(_Typed, _Profiled, Entity):
    kind_name: ClassVar[str] = "Group"

    @strawberry.field
    def parent(self, info: Info) -> Group | None:
        return soon(_first_related(info, self.record.ref, "childOf", Group))

    @strawberry.field
    def children(self, info: Info) -> list[Group]:
        return soon(_all_related(info, self.record.ref, "parentOf", Group))

    @strawberry.field(description="Direct members.")
    def members(self, info: Info) -> list[User]:
        return soon(_all_related(info, self.record.ref, "hasMember", User))


@strawberry.type(directives=[CATALOG_CACHE], description="A person.")
class User(_Profiled, Entity):
    kind_name: ClassVar[str] = "User"

    @strawberry.field(description="Groups this person is a direct member of.")
    def member_of(self, info: Info) -> list[Group]:
        return soon(_all_related(info, self.record.ref, "memberOf", Group))


@strawberry.type(directives=[CATALOG_CACHE], description="A pointer to more catalog files.")
class Location(_Typed, Entity):
    kind_name: ClassVar[str] = "Location"

    @strawberry.field
    def targets(self) -> list[str]:
        spec = self.record.spec
        found = [spec["target"]] if isinstance(spec.get("target"), str) else []
        targets = spec.get("targets")
        if isinstance(targets, list):
            found += [t for t in targets if isinstance(t, str)]
        return found


ENTITY_TYPES: tuple[type[Entity], ...] = (
    Component,
    API,
    Resource,
    System,
    Domain,
    Group,
    User,
    Location,
)
_BY_KIND: dict[str, type[Entity]] = {t.kind_name: t for t in ENTITY_TYPES}  # type: ignore[attr-defined]


def entity_from_record(record: EntityRecord) -> Entity:
    """The schema's object for ``record``: built once, kept with the record (so for as long as
    the loaders' cache holds it) and shared by every request that reads it. Entity objects are
    never changed once built: resolvers only read them, and what a request needs of its own
    lives in its context."""
    found: Entity | None = record.built
    if found is not None:
        return found
    entity = _build(record)
    record.keep(entity)
    return entity


def _build(record: EntityRecord) -> Entity:
    cls = _BY_KIND[record.kind]
    return cls(
        node_ref=record.ref,
        record=record,
        ref=record.ref,
        kind=record.kind,
        namespace=record.namespace,
        name=record.name,
        title=record.title,
        description=record.description,
        tags=record.tags,
        labels=JSON(record.labels),
        annotations=JSON(record.annotations),
        links=[
            EntityLink(
                url=link["url"],
                title=link.get("title"),
                icon=link.get("icon"),
                type=link.get("type"),
            )
            for link in record.links
        ],
        spec=JSON(record.spec),
        updated_at=record.updated_at,
    )
