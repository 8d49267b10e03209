"""Root fields of ownership."""

from __future__ import annotations

from dataclasses import replace

import strawberry

from graph.authz import is_admin, require_admin
from graph.catalog.fields import (
    EntityConnection,
    EntityFilter,
    check_page_size,
    connection,
    filter_args,
)
from graph.catalog.types import entity_from_record
from graph.context import Info
from graph.ownership.types import AuditLogEntry, LdapSyncRun, Ownership, ViewerType
from resolvers import catalog as catalog_resolvers
from resolvers import ownership as resolve
from resolvers.catalog import FilterArgs
from sources.audit import audit_entries
from sources.catalog.refs import normalize_ref
from sources.errors import CatalogError
from sources.ldap.runs import sync_runs

__all__ = ["OwnershipQuery"]


@strawberry.type
class OwnershipQuery:
    @strawberry.field(description="Who owns an entity, its people and its line of groups.")
    async def ownership(self, info: Info, ref: str) -> Ownership | None:
        found = await resolve.ownership(info.context.loaders, ref)
        if found is None:
            return None
        return Ownership(entity=entity_from_record(found.entity), owner_ref=found.owner_ref)

    @strawberry.field(
        description="What a user or group owns. Transitive: a user's through every group they "
        "are in (nested groups too); a group's including the groups below it."
    )
    async def entities_owned_by(
        self,
        info: Info,
        ref: str,
        transitive: bool = True,
        filter: EntityFilter | None = None,
        first: int = 20,
        after: str | None = None,
    ) -> EntityConnection:
        check_page_size(info, first)
        owners = await resolve.owner_set(info.context.loaders, ref, transitive=transitive)
        args = replace(filter_args(info, filter) or FilterArgs(), owner=owners)
        page = await catalog_resolvers.entities_page(
            info.context.db, info.context.loaders, args, None, order=None, first=first, after=after
        )
        return connection(page)

    @strawberry.field(description="Who is asking: their user, groups and rights.")
    async def viewer(self, info: Info) -> ViewerType:
        viewer = info.context.viewer
        return ViewerType(
            ref=viewer.ref,
            authenticated_by=viewer.via,
            scopes=sorted(viewer.scopes),
            is_admin=await is_admin(info.context),
        )

    @strawberry.field(description="The latest directory sync runs, newest first.")
    async def ldap_sync_runs(self, info: Info, first: int = 10) -> list[LdapSyncRun]:
        if not 1 <= first <= 100:
            raise CatalogError("first must be between 1 and 100")
        return [LdapSyncRun.of(run) for run in await sync_runs(info.context.db, first)]

    @strawberry.field(description="Mutation attempts, newest first. Admins only.")
    async def audit_log(
        self,
        info: Info,
        target: str | None = None,
        actor: str | None = None,
        action: str | None = None,
        first: int = 50,
        before_id: int | None = None,
    ) -> list[AuditLogEntry]:
        await require_admin(info.context, "the audit log")
        if not 1 <= first <= 500:
            raise CatalogError("first must be between 1 and 500")
        entries = await audit_entries(
            info.context.db,
            before_id=before_id,
            target_ref=normalize_ref(target) if target else None,
            actor=actor,
            action=action,
            limit=first,
        )
        return [AuditLogEntry.of(entry) for entry in entries]
