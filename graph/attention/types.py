"""GraphQL types of attention, and the fields joining ``Viewer`` and ``Group``.

Never cached: deploys, alerts and cluster state change by the second, so ``Attention`` carries
no hint (an unhinted object field counts as 0), and the viewer's is private besides.
"""

from __future__ import annotations

from datetime import datetime

import strawberry

from graph.cache_control import CacheControl, CacheScope
from graph.catalog.fields import check_page_size
from graph.catalog.types import Entity, entity_from_record
from graph.context import Info
from graph.parents import EntityParent, Parent, ViewerParent
from resolvers import attention as resolve
from resolvers.attention import MAX_ENTITIES, AttentionLevel

__all__ = ["Attention", "AttentionLevel", "GroupAttention", "ViewerAttention"]

strawberry.enum(
    AttentionLevel,
    name="AttentionLevel",
    description="How urgent: CRITICAL (broken now, e.g. a failed production deploy, a paging "
    "alert, a workload with no replica ready), WARNING (wrong, not yet an outage), NOTICE "
    "(waiting on someone, e.g. a release not yet promoted).",
)


@strawberry.type(description="Something about one of a team's entities that needs a person.")
class Attention:
    entity: Entity = strawberry.field(description="What it is about.")
    level: AttentionLevel
    title: str = strawberry.field(
        description='A sentence a person reads: "Deploy of 1.38.0 to staging failed".'
    )
    detail: str | None = strawberry.field(
        description="More, when known: a deploy's message, an alert's description."
    )
    since: datetime | None = strawberry.field(description="When it began, when known.")
    href: str | None = strawberry.field(
        description="Where in the console to look: an entity page's section "
        '("/catalog/default/component/checkout#deployments") or a workload\'s page.'
    )
    source: str = strawberry.field(
        description="The plugin that said so: deployments, observability, pincompute."
    )


_ORDER = (
    "Most severe first, then the newest (by since); at most `first` (up to the page size "
    f"limit). Over the first {MAX_ENTITIES} entities owned (components first), each plugin "
    "asked at once: one that fails or does not answer in time is left out."
)


async def _attention(info: Info, owner: str | None, first: int) -> list[Attention]:
    check_page_size(info, first)
    if owner is None:
        return []
    context = info.context
    found = await resolve.attention(
        context,
        context.loaders,
        context.db,
        context.attention,
        owner,
        first=first,
        within=context.settings.attention_timeout,
    )
    return [
        Attention(
            entity=entity_from_record(n.entity),
            level=n.item.level,
            title=n.item.title,
            detail=n.item.detail,
            since=n.item.since,
            href=n.item.href,
            source=n.source,
        )
        for n in found
    ]


@strawberry.type
class ViewerAttention:
    @strawberry.field(
        description="What needs attention among what the viewer's teams own (as "
        f"entitiesOwnedBy the viewer counts it, transitively). {_ORDER} Empty for nobody.",
        directives=[CacheControl(scope=CacheScope.PRIVATE)],
    )
    async def attention(
        self, parent: Parent[ViewerParent], info: Info, first: int = 20
    ) -> list[Attention]:
        return await _attention(info, parent.ref, first)


@strawberry.type
class GroupAttention:
    @strawberry.field(
        description=f"What needs attention among what the group owns, through every subgroup. "
        f"{_ORDER}"
    )
    async def attention(
        self, parent: Parent[EntityParent], info: Info, first: int = 20
    ) -> list[Attention]:
        return await _attention(info, parent.ref, first)
