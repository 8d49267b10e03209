"""Ownership resolvers: who owns what, transitively, and whether a viewer may change it."""

from __future__ import annotations

from dataclasses import dataclass

from loaders.catalog import ENTITY_BY_REF
from loaders.ownership import ANCESTORS, DESCENDANTS, GROUPS_OF, MEMBERS_OF
from loaders.registry import RequestLoaders
from sources.auth import Viewer
from sources.catalog.queries import EntityRecord
from sources.catalog.refs import normalize_ref

__all__ = [
    "OwnershipRecord",
    "ancestors",
    "groups_of",
    "is_admin",
    "may_change",
    "members_of",
    "owner_set",
    "ownership",
]


@dataclass(frozen=True, slots=True)
class OwnershipRecord:
    entity: EntityRecord
    owner_ref: str | None


async def groups_of(loaders: RequestLoaders, ref: str) -> list[str]:
    """Every group ``ref`` belongs to, directly or through nesting (for a group: its ancestors)."""
    return await loaders[GROUPS_OF].load(ref)  # type: ignore[no-any-return]


async def members_of(loaders: RequestLoaders, ref: str) -> list[str]:
    """Users in the group or in any group below it."""
    return await loaders[MEMBERS_OF].load(ref)  # type: ignore[no-any-return]


async def ancestors(loaders: RequestLoaders, ref: str) -> list[str]:
    """Parent groups, nearest first."""
    return await loaders[ANCESTORS].load(ref)  # type: ignore[no-any-return]


async def ownership(loaders: RequestLoaders, ref: str) -> OwnershipRecord | None:
    record: EntityRecord | None = await loaders[ENTITY_BY_REF].load(normalize_ref(ref))
    if record is None:
        return None
    return OwnershipRecord(record, record.owner_ref)


async def owner_set(loaders: RequestLoaders, ref: str, *, transitive: bool) -> list[str]:
    """The owner refs whose entities ``ref`` owns: itself, and with ``transitive`` every group
    a user is in (through nesting), or every group below a group."""
    normalised = normalize_ref(ref, default_kind="User")
    if not transitive:
        return [normalised]
    if normalised.startswith("group:"):
        below: list[str] = await loaders[DESCENDANTS].load(normalised)
        return [normalised, *below]
    return [normalised, *await groups_of(loaders, normalised)]


async def is_admin(loaders: RequestLoaders, viewer: Viewer, admin_group: str | None) -> bool:
    if "admin" in viewer.scopes:
        return True
    if viewer.ref is None or admin_group is None or viewer.via == "token":
        return False
    group = normalize_ref(admin_group, default_kind="Group")
    return viewer.ref == group or group in await groups_of(loaders, viewer.ref)


async def may_change(loaders: RequestLoaders, viewer: Viewer, owner_ref: str | None) -> bool:
    """Owners may change what they own: the owning user, or anyone in the owning group or in a
    group nested below it; a token acting as a group, for that group and groups below it."""
    if viewer.ref is None or "write" not in viewer.scopes or owner_ref is None:
        return False
    return owner_ref == viewer.ref or owner_ref in await groups_of(loaders, viewer.ref)
