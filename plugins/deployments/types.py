"""The deployments domain's GraphQL types."""

from __future__ import annotations

import re
from datetime import datetime
from enum import Enum
from typing import Final

from strawberry import relay

from graph.plugin import CacheControl, Info, User, entity, strawberry
from plugins.deployments.loaders import ROLLBACK_LOADER
from plugins.deployments.model import DeployState
from plugins.deployments.pipelines import Stage
from plugins.deployments.store import DeployRow, ReleaseRow

__all__ = [
    "DEPLOYS_CACHE",
    "Deploy",
    "DeployConnection",
    "DeployEdge",
    "Dora",
    "Pipeline",
    "PipelineStage",
    "Release",
    "ReleaseConnection",
    "ReleaseEdge",
    "StageWorkload",
]

# Answers showing deploys are cached briefly and dropped the moment a deploy changes
# (tagged ``deploys:<component>``); resolvers tighten this to the configured seconds.
DEPLOYS_CACHE = CacheControl(max_age=60)
INHERIT = CacheControl(inherit_max_age=True)

# A catalog name (Backstage's rule), and a token's actor: ``token:<name> (<ref it acts as>)``.
_NAME: Final = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9_.]{0,61}[A-Za-z0-9]$|^[A-Za-z0-9]$")
_TOKEN_FOR: Final = re.compile(r"^token:.* \((user:[^()\s]+)\)$")


def actor_user_ref(actor: str | None) -> str | None:
    """The user ref an actor may name: ``user:default/amelia.chen`` (or ``user:amelia.chen``),
    a token acting for a user, or a plain ``amelia.chen`` (a CD system's or GitHub's login,
    which names a user only when the catalog has one by that name). None for anything else:
    another kind of ref, ``anonymous``, text that cannot be a name."""
    if not actor:
        return None
    text = actor.strip()
    token = _TOKEN_FOR.match(text)
    if token is not None:
        text = token[1]
    kind, colon, rest = text.partition(":")
    if not colon:
        return f"user:default/{text.lower()}" if _NAME.match(text) else None
    if kind.lower() != "user":
        return None
    namespace, slash, name = rest.rpartition("/")
    if not _NAME.match(name) or (slash and not _NAME.match(namespace)):
        return None
    return f"user:{(namespace or 'default').lower()}/{name.lower()}"


DeployStateEnum = strawberry.enum(
    DeployState, name="DeployState", description="Where a deploy stands; it only moves forward."
)


class PipelineSource(Enum):
    CATALOG = "catalog"
    API = "api"
    EVENTS = "events"


strawberry.enum(
    PipelineSource,
    name="PipelineSource",
    description="Where a pipeline comes from: the entity's catalog-info.yaml (spec.pipeline), "
    "setPipeline, or only the stages deploys went to.",
)


@strawberry.type(directives=[DEPLOYS_CACHE])
class Release:
    row: strawberry.Private[ReleaseRow]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.row.id))

    @strawberry.field
    def version(self) -> str:
        return self.row.version

    @strawberry.field
    def commit_sha(self) -> str | None:
        return self.row.commit_sha

    @strawberry.field
    def commit_time(self) -> datetime | None:
        return self.row.commit_time

    @strawberry.field(description="The image or package, with its digest when known.")
    def artifact(self) -> str | None:
        return self.row.artifact

    @strawberry.field
    def created_by(self) -> str | None:
        return self.row.created_by

    @strawberry.field
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field(description="A link to its build.")
    def build_url(self) -> str | None:
        return self.row.build_url


@strawberry.type(directives=[DEPLOYS_CACHE])
class Deploy:
    row: strawberry.Private[DeployRow]

    @strawberry.field
    def id(self) -> strawberry.ID:
        return strawberry.ID(str(self.row.id))

    @strawberry.field
    def state(self) -> DeployState:
        return DeployState(self.row.state)

    @strawberry.field
    def stage(self) -> str:
        return self.row.stage

    @strawberry.field
    def release(self) -> Release:
        return Release(row=self.row.release)

    @strawberry.field(description="Who started it: a user, a token, or the CD system's actor.")
    def actor(self) -> str | None:
        return self.row.actor

    @strawberry.field(
        description="The catalog user the actor names (`user:default/amelia.chen`, a token "
        "acting for one, or a plain `amelia.chen` that is a user's name), to show a person by "
        "name; null for a bot, a CD system or a name the catalog does not know."
    )
    async def actor_user(self, info: Info) -> User | None:
        ref = actor_user_ref(self.row.actor)
        if ref is None:
            return None
        # The catalog's entity loader: the actors of a page of deploys are one batch.
        found = await entity(info, ref)
        return found if isinstance(found, User) else None

    @strawberry.field
    def started_at(self) -> datetime:
        return self.row.started_at

    @strawberry.field
    def finished_at(self) -> datetime | None:
        return self.row.finished_at

    @strawberry.field(description="A deploy of an earlier release than the stage was running.")
    def is_rollback(self) -> bool:
        return self.row.is_rollback

    @strawberry.field(description="github, webhook (another CD system) or atrium.")
    def source(self) -> str:
        return self.row.source

    @strawberry.field(description="A link to the deploy in the system that ran it.")
    def url(self) -> str | None:
        return self.row.url

    @strawberry.field(description="Why it failed, when known.")
    def message(self) -> str | None:
        return self.row.message

    @strawberry.field(description="The ref of the component deployed.")
    def component_ref(self) -> str:
        return self.row.component_ref


@strawberry.type(directives=[INHERIT])
class DeployEdge:
    cursor: str
    node: Deploy


@strawberry.type(directives=[DEPLOYS_CACHE], description="A page of deploys, newest first.")
class DeployConnection:
    edges: list[DeployEdge]
    page_info: relay.PageInfo
    total_count: int


@strawberry.type(directives=[INHERIT])
class ReleaseEdge:
    cursor: str
    node: Release


@strawberry.type(directives=[DEPLOYS_CACHE], description="A page of releases, newest first.")
class ReleaseConnection:
    edges: list[ReleaseEdge]
    page_info: relay.PageInfo
    total_count: int


@strawberry.type(directives=[DEPLOYS_CACHE], description="The PinApp a stage deploys to.")
class StageWorkload:
    cluster: str
    namespace: str
    name: str


@strawberry.type(directives=[DEPLOYS_CACHE])
class PipelineStage:
    stage: strawberry.Private[Stage]
    component_ref: strawberry.Private[str]
    current: Deploy | None = strawberry.field(
        description="The newest deploy that succeeded here: what the stage runs."
    )
    latest: Deploy | None = strawberry.field(description="The newest deploy here, in any state.")
    waiting: list[Release] = strawberry.field(
        description="Releases running in the stage before this one and newer than what runs "
        "here: what waits to be promoted (newest first)."
    )

    @strawberry.field
    def name(self) -> str:
        return self.stage.name

    @strawberry.field(description="Counted by DORA figures.")
    def production(self) -> bool:
        return self.stage.production

    not_deployable_reason: str | None = strawberry.field(
        description='Why Atrium cannot deploy to this stage, for a person to read ("not bound '
        'to a workload and no CD system is configured"); null when it can. promoteRelease and '
        "rollbackStage refuse such a stage with this reason (FAILED_PRECONDITION)."
    )

    @strawberry.field(
        description="Whether Atrium can deploy to this stage at all: bound to a PinApp that "
        "PinCompute reports, or handed to a configured CD system. Whether the viewer may is "
        "Component.viewerCanDeploy; a deploy in flight (latest) makes the stage busy for a while."
    )
    def deployable(self) -> bool:
        return self.not_deployable_reason is None

    @strawberry.field(
        description="The release rollbackStage without toRelease would deploy now: the stage's "
        "last good release before what runs there now; null when there is none."
    )
    async def rollback_to(self, info: Info) -> Release | None:
        # One statement for every stage of the page (and every component on it).
        loader = info.context.loaders[ROLLBACK_LOADER]
        found = await loader.load((self.component_ref, self.stage.name))
        return Release(row=found) if found is not None else None

    @strawberry.field
    def workload(self) -> StageWorkload | None:
        if self.stage.pin_app is None:
            return None
        cluster, namespace, name = self.stage.pin_app
        return StageWorkload(cluster=cluster, namespace=namespace, name=name)


@strawberry.type(directives=[DEPLOYS_CACHE])
class Pipeline:
    stages: list[PipelineStage]
    source: PipelineSource


@strawberry.type(
    directives=[DEPLOYS_CACHE],
    description="DORA's four keys over a window, from production deploys.",
)
class Dora:
    days: int
    deploys: int = strawberry.field(description="Production deploys that succeeded.")
    deploys_per_day: float
    lead_time_seconds: float | None = strawberry.field(
        description="Median time from a release's commit to its production deploy finishing."
    )
    change_failure_rate: float | None = strawberry.field(
        description="Share of finished production deploys that failed or were rolled back."
    )
    time_to_restore_seconds: float | None = strawberry.field(
        description="Median time from a failed or rolled-back production deploy to the next "
        "successful one."
    )
    failures: int


def deploy_of(row: DeployRow) -> Deploy:
    return Deploy(row=row)
