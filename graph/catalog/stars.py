"""Stars: any signed-in person marks the entities they care about (``starEntity``,
``unstarEntity``); ``Entity.viewerStarred`` and ``Viewer.starred`` show them their own."""

from __future__ import annotations

from typing import Any

import strawberry
from strawberry.types import Info as StrawberryInfo

from graph.authz import Authorize, Target
from graph.catalog.types import Entity, entity_from_record
from graph.context import Context, Info
from resolvers import stars
from sources.catalog.refs import normalize_ref
from sources.errors import InvalidRef

__all__ = ["StarMutation", "ViewerStar"]


class ViewerStar:
    """The viewer's star of the entity an argument names. A star is the viewer's own, so
    anyone signed in may set theirs, whoever owns the entity; the audit log keeps whether it
    was starred before and after."""

    admin_only = False
    owners_only = False

    def __init__(self, argument: str = "ref") -> None:
        self.argument = argument

    async def target(
        self, info: StrawberryInfo[Context, None], arguments: dict[str, Any]
    ) -> Target:
        try:
            ref = normalize_ref(str(arguments[self.argument]))
        except InvalidRef:  # the mutation says so, as a client error
            return Target(None, None, exists=False)
        return Target(ref, None, state=await self._state(info, ref))

    async def snapshot(
        self, info: StrawberryInfo[Context, None], target: Target
    ) -> dict[str, Any] | None:
        return await self._state(info, target.ref) if target.ref else None

    async def _state(self, info: StrawberryInfo[Context, None], ref: str) -> dict[str, Any] | None:
        user = info.context.viewer.ref
        if user is None:
            return None
        return {"starred": await stars.is_starred(info.context.loaders, user, ref)}


async def _set_star(info: Info, ref: str, *, starred: bool) -> Entity:
    context = info.context
    user = context.viewer.ref
    assert user is not None  # ViewerStar lets only a signed-in person through
    record, changed = await stars.set_star(context.loaders, context.db, user, ref, starred=starred)
    if changed:
        # Drops this person's kept answers everywhere; nobody else's show their stars.
        await context.invalidate([stars.stars_tag(user)])
    return entity_from_record(record)


@strawberry.type
class StarMutation:
    @strawberry.mutation(
        description="Star an entity for the person asking (any signed-in person). Starring "
        "again changes nothing. Audited.",
        extensions=[Authorize(ViewerStar("ref"), "catalog.starEntity")],
    )
    async def star_entity(self, info: Info, ref: str) -> Entity:
        return await _set_star(info, ref, starred=True)

    @strawberry.mutation(
        description="Remove the person's star from an entity; nothing changes when there is "
        "none. Audited.",
        extensions=[Authorize(ViewerStar("ref"), "catalog.unstarEntity")],
    )
    async def unstar_entity(self, info: Info, ref: str) -> Entity:
        return await _set_star(info, ref, starred=False)
