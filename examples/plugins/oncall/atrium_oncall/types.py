"""The on-call plugin's GraphQL types: ``OnCall`` (who is on call for a component now) and the
override in force, if any."""

from __future__ import annotations

from datetime import datetime

from graph.plugin import (
    CacheControl,
    CacheScope,
    Info,
    User,
    entity,
    entity_owner,
    strawberry,
    viewer_may_change,
)

from atrium_oncall.rotations import OnCallNow
from atrium_oncall.store import Override

__all__ = ["ONCALL_CACHE", "OnCall", "OnCallOverride"]

# Rotations hand over at set times and overrides are announced when made: a minute at most,
# and resolvers tighten it to the next hand-over.
ONCALL_CACHE = CacheControl(max_age=60)


async def _user(info: Info, ref: str | None) -> User | None:
    found = await entity(info, ref) if ref else None
    return found if isinstance(found, User) else None


@strawberry.type(
    description="Someone on call for a component in place of its team's rotation.",
    directives=[ONCALL_CACHE],
)
class OnCallOverride:
    row: strawberry.Private[Override]

    @strawberry.field(description="Who made it (a user ref, or a token).")
    def by(self) -> str:
        return self.row.created_by

    @strawberry.field(description="Why, as its author said.")
    def reason(self) -> str | None:
        return self.row.reason

    @strawberry.field(description="When it was made.")
    def at(self) -> datetime:
        return self.row.created_at

    @strawberry.field(description="When it ends and the rotation takes over again.")
    def until(self) -> datetime:
        return self.row.until


@strawberry.type(
    description="Who is on call for a component now: its owner's rotation (the rotations "
    "file), or an override made for it.",
    directives=[ONCALL_CACHE],
)
class OnCall:
    component_ref: strawberry.Private[str]
    now: strawberry.Private[OnCallNow]
    override_row: strawberry.Private[Override | None]

    @strawberry.field(description="oncall:<the component's ref>, for clients' caches.")
    def id(self) -> strawberry.ID:
        return strawberry.ID(f"oncall:{self.component_ref}")

    @strawberry.field(description="The rotation's name.")
    def rotation(self) -> str:
        return self.now.rotation.name

    @strawberry.field(description="The team whose rotation it is (the component's owner).")
    def team_ref(self) -> str:
        return self.now.rotation.team

    @strawberry.field(description="The user ref of who is paged first.")
    def primary_ref(self) -> str:
        return self.override_row.primary_ref if self.override_row else self.now.primary

    @strawberry.field(description="Who is paged first, when the catalog knows them.")
    async def primary(self, info: Info) -> User | None:
        return await _user(info, self.primary_ref())

    @strawberry.field(description="The user ref of who is paged when the primary does not answer.")
    def secondary_ref(self) -> str | None:
        return self.now.secondary

    @strawberry.field(description="Who is paged when the primary does not answer.")
    async def secondary(self, info: Info) -> User | None:
        return await _user(info, self.now.secondary)

    @strawberry.field(
        description="When the primary hands over: the shift's end, or the override's."
    )
    def until(self) -> datetime:
        return self.override_row.until if self.override_row else self.now.until

    @strawberry.field(description="Who is paged after whom, as the rotations file says.")
    def escalation_policy(self) -> str:
        return self.now.rotation.escalation_policy

    @strawberry.field(description="The override in force, if the rotation's primary is replaced.")
    def override(self) -> OnCallOverride | None:
        return OnCallOverride(row=self.override_row) if self.override_row else None

    @strawberry.field(
        description="Whether the viewer may override who is on call (the component's owners' "
        "members and admins): for a console deciding to show the button.",
        directives=[CacheControl(max_age=60, scope=CacheScope.PRIVATE)],
    )
    async def viewer_can_override(self, info: Info) -> bool:
        owner = await entity_owner(info.context, self.component_ref)
        return await viewer_may_change(info.context, owner)
