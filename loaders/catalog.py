"""Catalog loaders: entities by ref, and related refs by (ref, relation type)."""

from __future__ import annotations

from dataclasses import fields, replace
from datetime import datetime
from typing import Any, Final

import orjson
from strawberry.dataloader import DataLoader

from loaders.cache_first import CacheFirstLoader
from loaders.memory import MISSING
from loaders.registry import LoaderServices
from sources.catalog.queries import (
    EntityRecord,
    all_relations_of,
    entities_by_refs,
    relations_of,
)

__all__ = [
    "ENTITY_BY_REF",
    "RELATED_REFS",
    "RELATIONS_BY_REF",
    "entity_by_ref_loader",
    "related_refs_loader",
    "relations_by_ref_loader",
]

ENTITY_BY_REF = "catalog.entityByRef"
RELATED_REFS = "catalog.relatedRefs"
RELATIONS_BY_REF = "catalog.relationsByRef"


def entity_by_ref_loader(services: LoaderServices) -> DataLoader[str, EntityRecord | None]:
    """Keys are lowercase refs; a ref with no entity loads as None. Behind the multi-level
    cache when the app has one."""

    async def source(refs: list[str]) -> dict[str, EntityRecord]:
        return await entities_by_refs(services.db, refs)

    cache = services.caches.cache(ENTITY_CACHE, _encode, _decode) if services.caches else None

    async def load(refs: list[str]) -> list[EntityRecord | None]:
        services.tags.update(refs)
        if cache is not None:
            return await cache.load_many(refs, source)
        found = await source(refs)
        return [found.get(ref) for ref in refs]

    if cache is None:
        return DataLoader(load_fn=load)

    def peek(ref: str) -> Any:
        value = cache.peek(ref)
        if value is not MISSING:
            services.tags.add(ref)
        return value

    return CacheFirstLoader(load, peek)


# Versioned with the record's fields: replicas of another version read their own entries.
ENTITY_CACHE = "entity.2"


# The record's own fields, in order (not what the graph built from it).
_FIELDS: Final = tuple(f.name for f in fields(EntityRecord) if f.init)


def _encode(record: EntityRecord) -> bytes:
    return orjson.dumps([getattr(record, f) for f in _FIELDS])


def _decode(raw: bytes) -> EntityRecord:
    values = orjson.loads(raw)
    record = EntityRecord(*values)
    return replace(record, updated_at=datetime.fromisoformat(values[-1]))


def related_refs_loader(services: LoaderServices) -> DataLoader[tuple[str, str], list[str]]:
    """Keys are (ref, relation type); values the target refs, whether or not they exist yet.
    Behind the multi-level cache when the app has one, by ref: an entry holds every relation
    of its ref, and a write that changes a relation names both its ends, so the entry goes
    when either does."""

    cache = (
        services.caches.cache(RELATION_CACHE, orjson.dumps, orjson.loads)
        if services.caches
        else None
    )

    async def source(refs: list[str]) -> dict[str, dict[str, list[str]]]:
        return await all_relations_of(services.db, refs)

    async def load(keys: list[tuple[str, str]]) -> list[list[str]]:
        # A relation belongs to both its ends; writes name both, so the source ref will do.
        services.tags.update(ref for ref, _ in keys)
        if cache is not None:
            refs = list(dict.fromkeys(ref for ref, _ in keys))
            by_ref = dict(zip(refs, await cache.load_many(refs, source), strict=True))
            return [_targets(by_ref[ref], relation) for ref, relation in keys]
        found = await relations_of(services.db, keys)
        return [found.get(key, []) for key in keys]

    if cache is None:
        return DataLoader(load_fn=load)

    def peek(key: tuple[str, str]) -> Any:
        ref, relation = key
        by_ref = cache.peek(ref)
        if by_ref is MISSING:
            return MISSING
        services.tags.add(ref)
        return _targets(by_ref, relation)

    return CacheFirstLoader(load, peek)


def _targets(by_ref: dict[str, list[str]] | None, relation: str) -> list[str]:
    """A copy of one relation's targets from a cached entry: the entry is shared by every
    request."""
    return list((by_ref or {}).get(relation, ()))


RELATION_CACHE = "relations.1"


def relations_by_ref_loader(
    services: LoaderServices,
) -> DataLoader[str, dict[str, list[str]]]:
    """Keys are refs; values every relation of the ref, targets by type (Backstage's
    ``relations`` of an entity). The same cache entries as ``related_refs_loader``."""

    cache = (
        services.caches.cache(RELATION_CACHE, orjson.dumps, orjson.loads)
        if services.caches
        else None
    )

    async def source(refs: list[str]) -> dict[str, dict[str, list[str]]]:
        return await all_relations_of(services.db, refs)

    async def load(refs: list[str]) -> list[dict[str, list[str]]]:
        services.tags.update(refs)
        if cache is not None:
            found = await cache.load_many(refs, source)
        else:
            by_ref = await source(refs)
            found = [by_ref.get(ref) for ref in refs]
        return [_copy(entry) for entry in found]

    if cache is None:
        return DataLoader(load_fn=load)

    def peek(ref: str) -> Any:
        entry = cache.peek(ref)
        if entry is MISSING:
            return MISSING
        services.tags.add(ref)
        return _copy(entry)

    return CacheFirstLoader(load, peek)


def _copy(by_type: dict[str, list[str]] | None) -> dict[str, list[str]]:
    """A request's own copy of a cached entry, which every request shares."""
    return {relation: list(targets) for relation, targets in (by_type or {}).items()}
