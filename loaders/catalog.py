"""Catalog loaders: entities by ref, and related refs by (ref, relation type)."""

from __future__ import annotations

from strawberry.dataloader import DataLoader

from loaders.registry import LoaderServices
from sources.catalog.queries import EntityRecord, entities_by_refs, relations_of

__all__ = ["ENTITY_BY_REF", "RELATED_REFS", "entity_by_ref_loader", "related_refs_loader"]

ENTITY_BY_REF = "catalog.entityByRef"
RELATED_REFS = "catalog.relatedRefs"


def entity_by_ref_loader(services: LoaderServices) -> DataLoader[str, EntityRecord | None]:
    """Keys are lowercase refs; a ref with no entity loads as None."""

    async def load(refs: list[str]) -> list[EntityRecord | None]:
        found = await entities_by_refs(services.db, refs)
        return [found.get(ref) for ref in refs]

    return DataLoader(load_fn=load)


def related_refs_loader(services: LoaderServices) -> DataLoader[tuple[str, str], list[str]]:
    """Keys are (ref, relation type); values the target refs, whether or not they exist yet."""

    async def load(keys: list[tuple[str, str]]) -> list[list[str]]:
        found = await relations_of(services.db, keys)
        return [found.get(key, []) for key in keys]

    return DataLoader(load_fn=load)
