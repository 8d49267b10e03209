"""Backstage's locations and an entity's ancestry, from the origins Atrium records
(``sources.catalog.locations``)."""

from __future__ import annotations

from dataclasses import dataclass

from loaders.catalog import ENTITY_BY_REF, RELATIONS_BY_REF
from loaders.registry import RequestLoaders
from resolvers.backstage import Served
from sources.catalog.locations import Location, location_of, locations, origins_of, target_index
from sources.db import Database

__all__ = ["Ancestor", "ancestry", "entity_location", "location", "locations"]


async def location(db: Database, location_id: str) -> Location | None:
    wanted = location_id.strip().lower()
    return next((found for found in await locations(db) if found.id == wanted), None)


async def entity_location(db: Database, ref: str) -> Location | None:
    origin = (await origins_of(db, [ref])).get(ref)
    return location_of(origin) if origin is not None else None


@dataclass(frozen=True, slots=True)
class Ancestor:
    served: Served
    parents: list[str]


async def ancestry(db: Database, loaders: RequestLoaders, ref: str) -> list[Ancestor] | None:
    """The entity, then the Location entities that led to it, nearest first, each with its
    parents' refs (Backstage's ``entityAncestry``); None when no entity has the ref."""
    by_ref = loaders[ENTITY_BY_REF]
    root = await by_ref.load(ref)
    if root is None:
        return None
    index = await target_index(db)
    origin = (await origins_of(db, [ref])).get(ref)
    found: list[Ancestor] = []
    seen = {ref}
    todo = [(ref, origin)]
    while todo:
        current, current_origin = todo.pop()
        record = root if current == ref else await by_ref.load(current)
        if record is None:  # deleted since the index was read
            continue
        parents = [p for p in index.parents(current_origin or "") if p != current]
        for parent in parents:
            if parent not in seen:
                seen.add(parent)
                todo.append((parent, index.origins.get(parent)))
        relations = await loaders[RELATIONS_BY_REF].load(current)
        found.append(Ancestor(Served(record, relations), parents))
    return found
