"""GraphQL types of ownership: the answer to "who owns this", the viewer, sync runs, audit."""

from __future__ import annotations

from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from graph.cache_control import CacheControl, CacheScope
from graph.catalog.types import CATALOG_CACHE, Entity, Group, User, entity_from_record
from graph.context import Info
from resolvers import catalog as catalog_resolvers
from resolvers import ownership as resolve
from resolvers import stars
from sources.audit import AuditEntry
from sources.errors import CatalogError
from sources.ldap.runs import SyncRun

__all__ = ["AuditLogEntry", "LdapSyncRun", "Ownership", "SkippedRecord", "ViewerType"]


async def _entities(info: Info, refs: list[str], cls: type) -> list:  # type: ignore[type-arg]
    records = await catalog_resolvers.entities(info.context.loaders, refs)
    found = [entity_from_record(r) for r in records if r is not None]
    return [e for e in found if isinstance(e, cls)]


@strawberry.type(
    directives=[CATALOG_CACHE],
    description="Who owns an entity: the owner, its people, its line of groups.",
)
class Ownership:
    entity: Entity
    owner_ref: str | None = strawberry.field(
        description="The owner's ref, even when no such group or user exists yet."
    )

    @strawberry.field(description="The owning group or user.")
    async def owner(self, info: Info) -> Entity | None:
        if self.owner_ref is None:
            return None
        found = await _entities(info, [self.owner_ref], Entity)
        return found[0] if found else None

    @strawberry.field(
        description="People who own it: the owning user, or every member of the owning group "
        "and of the groups nested below it."
    )
    async def members(self, info: Info) -> list[User]:
        if self.owner_ref is None:
            return []
        if self.owner_ref.startswith("user:"):
            return await _entities(info, [self.owner_ref], User)
        members = await resolve.members_of(info.context.loaders, self.owner_ref)
        return await _entities(info, members, User)

    @strawberry.field(description="The owning group's parent, grandparent, ...: nearest first.")
    async def chain(self, info: Info) -> list[Group]:
        if self.owner_ref is None or not self.owner_ref.startswith("group:"):
            return []
        chain = await resolve.ancestors(info.context.loaders, self.owner_ref)
        return await _entities(info, chain, Group)


@strawberry.type(
    name="Viewer",
    directives=[CacheControl(max_age=60, scope=CacheScope.PRIVATE)],
    description="Who is asking.",
)
class ViewerType:
    ref: str | None
    authenticated_by: str = strawberry.field(
        description="proxy, session (signed in with the provider), token, demo or anonymous"
    )
    scopes: list[str]
    is_admin: bool

    @strawberry.field(description="The viewer's User entity, when the directory knows them.")
    async def user(self, info: Info) -> User | None:
        if self.ref is None or not self.ref.startswith("user:"):
            return None
        found = await _entities(info, [self.ref], User)
        return found[0] if found else None

    @strawberry.field(
        description="Entities the viewer starred, newest star first; none for nobody. Stars "
        "of entities that no longer exist are left out."
    )
    async def starred(self, info: Info, first: int = 50) -> list[Entity]:
        limit = info.context.settings.max_page_size
        if not 0 <= first <= limit:
            raise CatalogError(f"first must be between 0 and {limit}")
        if self.ref is None:
            return []
        info.context.depends_on(stars.stars_tag(self.ref))
        records = await stars.starred(info.context.loaders, info.context.db, self.ref, first)
        return [entity_from_record(r) for r in records]

    @strawberry.field(description="Every group the viewer is in, directly or through nesting.")
    async def groups(self, info: Info) -> list[Group]:
        if self.ref is None:
            return []
        return await _entities(info, await resolve.groups_of(info.context.loaders, self.ref), Group)


@strawberry.type
class SkippedRecord:
    dn: str
    reason: str


@strawberry.type(description="One run of the directory sync.")
class LdapSyncRun:
    run: strawberry.Private[SyncRun]
    id: int
    started_at: datetime
    finished_at: datetime | None
    outcome: str = strawberry.field(description="running, succeeded, braked or failed")
    forced: bool
    users_read: int
    groups_read: int
    added: int
    changed: int
    removed: int
    skipped: int
    warnings: list[str]
    error: str | None

    @strawberry.field(description="Records that did not fit, with why (the first 1,000).")
    def skipped_records(self) -> list[SkippedRecord]:
        return [SkippedRecord(dn=r["dn"], reason=r["reason"]) for r in self.run.skipped_records]

    @classmethod
    def of(cls, run: SyncRun) -> LdapSyncRun:
        return cls(
            run=run,
            id=run.id,
            started_at=run.started_at,
            finished_at=run.finished_at,
            outcome=run.outcome,
            forced=run.forced,
            users_read=run.users_read,
            groups_read=run.groups_read,
            added=run.added,
            changed=run.changed,
            removed=run.removed,
            skipped=run.skipped,
            warnings=run.warnings,
            error=run.error,
        )


@strawberry.type(description="One mutation attempt: allowed, denied or failed.")
class AuditLogEntry:
    id: int
    at: datetime
    actor: str
    action: str
    target_ref: str | None
    outcome: str
    arguments: JSON
    before: JSON | None
    after: JSON | None
    message: str | None

    @classmethod
    def of(cls, entry: AuditEntry) -> AuditLogEntry:
        return cls(
            id=entry.id,
            at=entry.at,
            actor=entry.actor,
            action=entry.action,
            target_ref=entry.target_ref,
            outcome=entry.outcome,
            arguments=JSON(entry.arguments),
            before=JSON(entry.before) if entry.before else None,
            after=JSON(entry.after) if entry.after else None,
            message=entry.message,
        )
