"""The deployments plugin's fields: on Component and Group, the root queries and the
subscription (the mutations are ``plugins.deployments.mutations``)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from datetime import datetime
from typing import Any, Final

from strawberry import relay

from graph.plugin import (
    WHOLE_CATALOG,
    CacheControl,
    CacheScope,
    EntityParent,
    Info,
    Parent,
    UserError,
    entities_owned_by,
    entity,
    entity_owner,
    owner_refs,
    strawberry,
    viewer_may_change,
)
from plugins.deployments.live import follow_component
from plugins.deployments.model import DeployState
from plugins.deployments.promote import blocker
from plugins.deployments.queries import (
    DeployFilter,
    deploys_count,
    deploys_page,
    dora,
    pipeline_state,
    releases_page,
)
from plugins.deployments.service import PLUGIN_ID, Deployments
from plugins.deployments.store import (
    ANY_DEPLOY,
    DEPLOY_COLUMNS,
    DeployRow,
    deploys_key,
)
from plugins.deployments.types import (
    Deploy,
    DeployConnection,
    DeployEdge,
    Dora,
    Pipeline,
    PipelineSource,
    PipelineStage,
    Release,
    ReleaseConnection,
    ReleaseEdge,
)

__all__ = [
    "ComponentDeployments",
    "DeploymentQuery",
    "DeploymentSubscription",
    "GroupDeployments",
    "component_ref",
    "deployments_of",
    "pipeline_of",
]

MAX_DAYS: Final = 366


def deployments_of(info: Info) -> Deployments:
    found: Deployments | None = info.context.extras.get(PLUGIN_ID)
    if found is None:
        raise UserError("the deployments plugin has not started", "UNAVAILABLE")
    return found


async def component_ref(info: Info, ref: str) -> str:
    """The ref of the component named, normalised (``component:x`` is
    ``component:default/x``); NOT_FOUND unless it is a component of the catalog."""
    found = await entity(info, ref)
    if found is None or found.kind != "Component":
        raise UserError(f"no component {ref}", "NOT_FOUND")
    return found.ref


def _shows(info: Info, ref: str) -> None:
    """This answer shows the component's deploys: cached briefly, dropped when they change."""
    info.context.depends_on(deploys_key(ref))
    info.context.cache_hint(max_age=deployments_of(info).settings.deployments_cache_seconds)


def _page_size(info: Info, first: int) -> None:
    limit = info.context.settings.max_page_size
    if not 0 <= first <= limit:
        raise UserError(f"first must be between 0 and {limit}")


def _connection(
    items: list[tuple[str, DeployRow]], more: bool, total: int, after: str | None
) -> DeployConnection:
    return DeployConnection(
        edges=[DeployEdge(cursor=c, node=Deploy(row=r)) for c, r in items],
        page_info=relay.PageInfo(
            has_next_page=more,
            has_previous_page=after is not None,
            start_cursor=items[0][0] if items else None,
            end_cursor=items[-1][0] if items else None,
        ),
        total_count=total,
    )


async def _deploys(
    info: Info, where: DeployFilter, first: int, after: str | None
) -> DeployConnection:
    _page_size(info, first)
    db = info.context.db
    try:
        items, more = await deploys_page(db, where, first, after)
    except ValueError:
        raise UserError("after is not a cursor this API issued") from None
    return _connection(items, more, await deploys_count(db, where), after)


def _states(state: list[DeployState] | None) -> list[str] | None:
    return [s.value for s in state] if state else None


def _window(days: int) -> None:
    if not 1 <= days <= MAX_DAYS:
        raise UserError(f"days must be between 1 and {MAX_DAYS}")


def _dora(figures: Any) -> Dora:
    return Dora(
        days=figures.days,
        deploys=figures.deploys,
        deploys_per_day=figures.deploys / figures.days,
        lead_time_seconds=figures.lead_time,
        change_failure_rate=figures.failures / figures.finished if figures.finished else None,
        time_to_restore_seconds=figures.time_to_restore,
        failures=figures.failures,
    )


async def pipeline_of(info: Info, ref: str) -> Pipeline:
    _shows(info, ref)
    deployments = deployments_of(info)
    pipeline = await deployments.pipeline_or_seen(info.context, ref)
    states = await pipeline_state(info.context.db, ref, pipeline)
    return Pipeline(
        stages=[
            PipelineStage(
                stage=stage,
                component_ref=ref,
                not_deployable_reason=blocker(deployments, info.context, ref, pipeline, stage),
                current=Deploy(row=state.current) if state.current else None,
                latest=Deploy(row=state.latest) if state.latest else None,
                waiting=[Release(row=r) for r in state.waiting],
            )
            for stage, state in zip(pipeline.stages, states, strict=True)
        ],
        source=PipelineSource(pipeline.declared_in),
    )


@strawberry.type
class ComponentDeployments:
    """Fields joining ``Component`` (``parent`` is the Component)."""

    @strawberry.field(
        description="Its pipeline: stages in order, the release each runs, and what waits to "
        "be promoted."
    )
    async def pipeline(self, parent: Parent[EntityParent], info: Info) -> Pipeline:
        return await pipeline_of(info, parent.ref)

    @strawberry.field(description="Its deploys, newest first.")
    async def deployments(
        self,
        parent: Parent[EntityParent],
        info: Info,
        first: int = 20,
        after: str | None = None,
        stage: str | None = None,
        state: list[DeployState] | None = None,
    ) -> DeployConnection:
        ref = parent.ref
        _shows(info, ref)
        where = DeployFilter(components=[ref], stage=stage, states=_states(state))
        return await _deploys(info, where, first, after)

    @strawberry.field(description="Its releases, newest first.")
    async def releases(
        self, parent: Parent[EntityParent], info: Info, first: int = 20, after: str | None = None
    ) -> ReleaseConnection:
        ref = parent.ref
        _shows(info, ref)
        _page_size(info, first)
        try:
            items, more, total = await releases_page(info.context.db, ref, first, after)
        except ValueError:
            raise UserError("after is not a cursor this API issued") from None
        return ReleaseConnection(
            edges=[ReleaseEdge(cursor=c, node=Release(row=r)) for c, r in items],
            page_info=relay.PageInfo(
                has_next_page=more,
                has_previous_page=after is not None,
                start_cursor=items[0][0] if items else None,
                end_cursor=items[-1][0] if items else None,
            ),
            total_count=total,
        )

    @strawberry.field(description="DORA figures of its production deploys over the last days.")
    async def dora(self, parent: Parent[EntityParent], info: Info, days: int = 30) -> Dora:
        ref = parent.ref
        _window(days)
        _shows(info, ref)
        return _dora(await dora(info.context.db, [ref], days))

    @strawberry.field(
        description="Whether the viewer may promote and roll back its releases (its owners' "
        "members and admins): for a console deciding to show the buttons.",
        directives=[CacheControl(max_age=60, scope=CacheScope.PRIVATE)],
    )
    async def viewer_can_deploy(self, parent: Parent[EntityParent], info: Info) -> bool:
        owner = await entity_owner(info.context, parent.ref)
        return await viewer_may_change(info.context, owner)


@strawberry.type
class GroupDeployments:
    @strawberry.field(
        description="DORA figures of every component the group owns (through any subgroup)."
    )
    async def dora(self, parent: Parent[EntityParent], info: Info, days: int = 30) -> Dora:
        ref = parent.ref
        _window(days)
        owners = await owner_refs(info.context, ref)
        # Any component's deploys may change a team's figures, and so may ownership (a catalog
        # change): dropped by either.
        info.context.depends_on(ANY_DEPLOY, WHOLE_CATALOG)
        info.context.cache_hint(max_age=deployments_of(info).settings.deployments_cache_seconds)
        return _dora(await dora(info.context.db, [], days, owners=owners))


@strawberry.input(description="Which deploys: every condition given must hold.")
class DeploymentFilter:
    owner: str | None = strawberry.field(
        default=None, description="A user or group ref: what it owns, through any subgroup."
    )
    component: str | None = None
    stage: str | None = None
    state: list[DeployState] | None = None
    since: datetime | None = strawberry.field(default=None, description="Started at or after.")
    until: datetime | None = strawberry.field(default=None, description="Started before.")


@strawberry.type
class DeploymentQuery:
    @strawberry.field(description="One deploy by its id.")
    async def deploy(self, info: Info, id: strawberry.ID) -> Deploy | None:
        if not str(id).isdigit() or len(str(id)) > 18:
            return None
        row = await info.context.db.fetchrow(
            f"select {DEPLOY_COLUMNS} from deployment_deploys d"
            " join deployment_releases r on r.id = d.release_id where d.id = $1",
            int(str(id)),
        )
        if row is None:
            return None
        found = DeployRow.of(row)
        _shows(info, found.component_ref)
        return Deploy(row=found)

    @strawberry.field(description="Deploys across components, newest first.")
    async def deployments(
        self,
        info: Info,
        filter: DeploymentFilter | None = None,
        first: int = 20,
        after: str | None = None,
    ) -> DeployConnection:
        wanted = filter or DeploymentFilter()
        components: list[str] | None = None
        if wanted.owner is not None:
            components = await entities_owned_by(info.context, wanted.owner.strip().lower())
        if wanted.component is not None:
            ref = await component_ref(info, wanted.component)
            components = [ref] if components is None or ref in components else []
        # Wide lists change with any deploy: a short life in the cache, and no tag to rely on.
        info.context.cache_hint(max_age=0)
        where = DeployFilter(
            components=components,
            stage=wanted.stage,
            states=_states(wanted.state),
            since=wanted.since,
            until=wanted.until,
        )
        return await _deploys(info, where, first, after)


@strawberry.type
class DeploymentSubscription:
    @strawberry.subscription(
        description="A component's deploys as they change (created, moving on, rolled back), "
        "wherever the change was made."
    )
    async def component_deploys(self, info: Info, component: str) -> AsyncGenerator[Deploy, None]:
        ref = await component_ref(info, component)
        # One listener and one read per change for all of the component's subscribers; a
        # catch-up first (what changed in the last minute: a deploy that moved on while the
        # client was subscribing), then each change as it comes.
        follow = follow_component(
            deployments_of(info).live,
            info.context.db,
            ref,
            info.context.settings.subscription_queue,
        )
        try:
            async for row in follow:
                yield Deploy(row=row)
        finally:
            await follow.aclose()
