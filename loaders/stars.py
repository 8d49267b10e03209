"""Whether people starred entities: one statement per batch, whatever the number of rows."""

from __future__ import annotations

from strawberry.dataloader import DataLoader

from loaders.registry import LoaderServices
from sources.catalog.stars import starred_among

__all__ = ["STARRED", "starred_loader", "stars_tag"]

STARRED = "catalog.starred"


def stars_tag(user_ref: str) -> str:
    """What an answer showing a person's stars depends on, and what a change of their stars
    announces: that drops only this person's answers, not the entities' public ones."""
    return f"stars:{user_ref}"


def starred_loader(services: LoaderServices) -> DataLoader[tuple[str, str], bool]:
    """Keys are (person's ref, entity ref). Not behind the shared caches: a star is one
    person's, read by that person's requests, whose whole answers the response cache keeps
    (tagged by the fields that show stars)."""

    async def load(keys: list[tuple[str, str]]) -> list[bool]:
        found = await starred_among(services.db, keys)
        return [key in found for key in keys]

    return DataLoader(load_fn=load)
