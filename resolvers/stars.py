"""Stars: whether the viewer starred an entity, their starred entities, starring."""

from __future__ import annotations

from loaders.catalog import ENTITY_BY_REF
from loaders.registry import RequestLoaders
from loaders.stars import STARRED, stars_tag
from sources.catalog.queries import EntityRecord
from sources.catalog.refs import normalize_ref
from sources.catalog.stars import add_star, remove_star, starred_refs
from sources.db import Database
from sources.errors import NotFound

__all__ = ["is_starred", "set_star", "starred", "stars_tag"]


async def is_starred(loaders: RequestLoaders, user_ref: str, ref: str) -> bool:
    return await loaders[STARRED].load((user_ref, ref))  # type: ignore[no-any-return]


async def starred(
    loaders: RequestLoaders, db: Database, user_ref: str, first: int
) -> list[EntityRecord]:
    """The person's starred entities, newest star first; stars of entities that do not exist
    are left out. Every star read is loaded by ref, so the answer depends on each of them."""
    refs = await starred_refs(db, user_ref, first)
    records = await loaders[ENTITY_BY_REF].load_many(refs)
    return [r for r in records if r is not None][:first]


async def set_star(
    loaders: RequestLoaders, db: Database, user_ref: str, ref: str, *, starred: bool
) -> tuple[EntityRecord, bool]:
    """Star or unstar the entity ``ref`` names for the person; the entity, and whether that
    changed anything. An entity that does not exist is NotFound, and nothing changes."""
    normalised = normalize_ref(ref)
    record: EntityRecord | None = await loaders[ENTITY_BY_REF].load(normalised)
    if record is None:
        raise NotFound(f"no entity {normalised}")
    if starred:
        changed = await add_star(db, user_ref, record.ref)
    else:
        changed = await remove_star(db, user_ref, record.ref)
    # Later fields of the same request read the new state.
    loader = loaders[STARRED]
    loader.clear((user_ref, record.ref))
    loader.prime((user_ref, record.ref), starred)
    return record, changed
