"""What the deployments plugin does: ingest events, read pipelines, follow rollouts (promoting
and rolling back are ``plugins.deployments.promote``).

``Deployments`` is the plugin's lifespan state (``context.extras["deployments"]``). Writes run
in one transaction each and announce ``deploys:<component ref>`` once committed.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Final

import httpx
import orjson

from graph.plugin import (
    Context,
    Fanout,
    ServiceMissing,
    UserError,
    Viewer,
    announce_changes,
    entities_with_annotation,
    entity,
    follow_changes,
    service,
)
from plugins.deployments.events import from_atrium, from_github
from plugins.deployments.live import deploy_fanout
from plugins.deployments.model import Incoming, IncomingRelease
from plugins.deployments.pipelines import Pipeline, PipelineError, Stage, declared, stored
from plugins.deployments.settings import DeploymentSettings
from plugins.deployments.store import (
    DEPLOY_COLUMNS,
    DeployRow,
    apply,
    changed_keys,
    mark_event,
    mark_rolled_back,
    record_event,
)

__all__ = ["PLUGIN_ID", "Deployments", "Ingested", "running", "sign"]

PLUGIN_ID: Final = "deployments"
SLUG_ANNOTATION: Final = "github.com/project-slug"
# Who webhooks act as, for the catalog look-ups they need (never for a permission).
HOOK_VIEWER: Final = Viewer(None, "webhook", frozenset({"read"}))
WAITING_BATCH: Final = 500

log = logging.getLogger("atrium.deployments")

# The stages a component's deploys went to, oldest first: a skip scan of the
# (component_ref, stage, started_at) index, one probe per stage however many deploys.
_STAGES_SEEN: Final = """
with recursive seen(stage) as (
    (select stage from deployment_deploys where component_ref = $1 order by stage limit 1)
    union all
    select (
        select d.stage from deployment_deploys d
        where d.component_ref = $1 and d.stage > seen.stage order by d.stage limit 1
    ) from seen where seen.stage is not null
)
select s.stage, (
    select min(d.started_at) from deployment_deploys d
    where d.component_ref = $1 and d.stage = s.stage
) as first
from seen s where s.stage is not null order by first
"""


def sign(secret: str, body: bytes) -> str:
    """``sha256=<hex>``, the HMAC-SHA256 of the body, as GitHub signs (and so does Atrium)."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


@dataclass(frozen=True, slots=True)
class Ingested:
    outcome: str  # "applied", "unchanged", "duplicate", "waiting"
    component_ref: str | None = None
    deploy_id: int | None = None
    state: str | None = None


@dataclass(slots=True)
class Deployments:
    settings: DeploymentSettings
    services: Any
    http: httpx.AsyncClient
    # Rollouts this replica started, by PinApp: woken by the informer when it changes.
    following: dict[tuple[str, str, str], set[int]] = field(default_factory=dict)
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    # Whether the catalog may have changed since waiting events were last tried.
    catalog_changed: bool = True
    # The componentDeploys subscriptions: one upstream per component (``live``).
    live: Fanout[str, Any] = field(init=False)

    def __post_init__(self) -> None:
        self.live = deploy_fanout(self.services)

    # Reading.

    async def pipeline(self, context: Context, ref: str) -> Pipeline | None:
        """The declared pipeline (catalog, then API); None when neither declares one."""
        found = await entity(context, ref)
        if found is not None:
            try:
                pipeline = declared(found.spec, found.annotations)
            except PipelineError as exc:
                log.warning("pipeline not usable", extra={"ref": ref, "error": str(exc)})
                pipeline = None
            if pipeline is not None:
                return pipeline
        row = await context.db.fetchval(
            "select stages from deployment_pipelines where component_ref = $1", ref
        )
        return stored(row) if row is not None else None

    async def pipeline_or_seen(self, context: Context, ref: str) -> Pipeline:
        """The declared pipeline, else the stages deploys went to, oldest first."""
        pipeline = await self.pipeline(context, ref)
        if pipeline is not None:
            return pipeline
        rows = await context.db.fetch(_STAGES_SEEN, ref)
        production = set(self.settings.deployments_production_stages)
        return Pipeline(tuple(Stage(r["stage"], r["stage"] in production) for r in rows), "events")

    async def is_production(self, context: Context, ref: str, stage: str) -> bool:
        return self.production_of(await self.pipeline(context, ref), stage)

    def production_of(self, pipeline: Pipeline | None, stage: str) -> bool:
        """Whether DORA figures count a stage: as its pipeline says, else by its name."""
        found = pipeline.stage(stage) if pipeline is not None else None
        if found is not None:
            return found.production
        return stage in self.settings.deployments_production_stages

    # Ingesting.

    async def ingest(
        self, source: str, delivery: str, event: str, body: bytes, parsed: Any
    ) -> Ingested:
        """Record a verified delivery raw and apply it; a delivery id seen before changes
        nothing. An event naming no known component waits (``attach_waiting``)."""
        incoming = self.read(source, event, parsed)
        db = self.services.database
        context = await self.services.context(None, viewer=HOOK_VIEWER)
        # Reads first, on connections of their own: the transaction then holds one connection
        # and waits for no other (many deliveries at once cannot starve the pool).
        component = await self.component_of(context, incoming)
        production = (
            await self.is_production(context, component, incoming.stage) if component else False
        )
        async with db.transaction() as tx:
            event_id = await record_event(
                tx, source, delivery, event, body.decode("utf-8"), incoming.subject
            )
            if event_id is None:
                return Ingested("duplicate")
            if component is None:
                await mark_event(tx, event_id, None, None, f"no component for {incoming.subject}")
                return Ingested("waiting")
            result = await self._apply(tx, event_id, incoming, component, production)
        if result.outcome == "applied":
            await announce_changes(self.services, changed_keys([component]))
        return result

    @staticmethod
    def read(source: str, event: str, parsed: Any) -> Incoming:
        return from_github(event, parsed) if source == "github" else from_atrium(parsed)

    async def component_of(self, context: Context, incoming: Incoming) -> str | None:
        if incoming.source == "github":
            refs = await entities_with_annotation(
                context, SLUG_ANNOTATION, incoming.subject, kind="Component"
            )
            return refs[0] if refs else None
        found = await entity(context, incoming.subject)
        return found.ref if found is not None and found.kind == "Component" else None

    @staticmethod
    async def _apply(
        tx: Any, event_id: int, incoming: Incoming, component: str, production: bool
    ) -> Ingested:
        applied = await apply(tx, incoming, component, production)
        outcome = "applied" if applied.changed else "unchanged"
        await mark_event(tx, event_id, component, applied.deploy_id, outcome)
        return Ingested(outcome, component, applied.deploy_id, applied.state)

    async def attach_waiting(self) -> int:
        """Apply waiting events whose component has appeared since, in the order received;
        returns how many were attached. Only after the catalog changed (the change feed says
        so): waiting events are not read again for nothing. Replicas share the work: an event
        is applied under a row lock the others skip."""
        if not self.catalog_changed:
            return 0
        self.catalog_changed = False
        db = self.services.database
        subjects = await db.fetch(
            "select source, subject from deployment_events where attached_at is null"
            " group by source, subject"
        )
        if not subjects:
            return 0
        context = await self.services.context(None, viewer=HOOK_VIEWER)
        changed: set[str] = set()
        attached = 0
        for subject in subjects:
            probe = Incoming(
                subject["source"],
                "",
                subject["subject"],
                "",
                IncomingRelease(""),
                None,
                datetime.now(UTC),
            )
            component = await self.component_of(context, probe)
            if component is None:
                continue
            # Read before the transaction, which then holds one connection and waits for none.
            pipeline = await self.pipeline(context, component)
            while True:
                async with db.transaction() as tx:
                    rows = await tx.fetch(
                        "select id, source, event, body from deployment_events"
                        " where attached_at is null and source = $1 and subject = $2"
                        " order by id limit $3 for update skip locked",
                        subject["source"],
                        subject["subject"],
                        WAITING_BATCH,
                    )
                    for row in rows:
                        incoming = self.read(row["source"], row["event"], orjson.loads(row["body"]))
                        production = self.production_of(pipeline, incoming.stage)
                        result = await self._apply(tx, row["id"], incoming, component, production)
                        attached += 1
                        if result.outcome == "applied":
                            changed.add(component)
                if len(rows) < WAITING_BATCH:
                    break
        if changed:
            await announce_changes(self.services, changed_keys(changed))
        return attached

    async def follow_catalog(self) -> None:
        """Note catalog changes (entities written anywhere), for ``attach_waiting``."""
        async for _ in follow_changes(self.services, "component:"):
            self.catalog_changed = True

    # Releases.

    async def release(self, context: Context, ref: str, version: str) -> dict[str, Any]:
        row = await context.db.fetchrow(
            "select * from deployment_releases where component_ref = $1 and version = $2",
            ref,
            version,
        )
        if row is None:
            raise UserError(f"{ref} has no release {version}", "NOT_FOUND")
        return dict(row)

    # Following rollouts.

    def follow(self, pin_app: tuple[str, str, str], deploy_id: int) -> None:
        self.following.setdefault(pin_app, set()).add(deploy_id)

    def changed(self, cluster: str, namespace: str, name: str) -> None:
        """The informer saw a PinApp change: check the rollouts of it this replica follows."""
        ids = self.following.get((cluster, namespace, name))
        if ids:
            task = asyncio.get_running_loop().create_task(self.check_rollouts(sorted(ids)))
            self.tasks.add(task)
            task.add_done_callback(self.tasks.discard)

    async def check_rollouts(self, ids: list[int] | None = None) -> int:
        """Move in-flight PinApp deploys on from the informer's view: ``succeeded`` once
        rolled out, ``failed`` when replaced, gone or past their deadline. Every replica may
        run this: a deploy moves once (the update checks its state). Returns how many moved."""
        db = self.services.database
        rows = await db.fetch(
            "select id, component_ref, rollout, deadline, is_rollback, stage"
            " from deployment_deploys where state in ('pending', 'in_progress')"
            " and rollout is not null and ($1::bigint[] is null or id = any($1))",
            ids,
        )
        if not rows:
            return 0
        try:
            workloads = service(self.services, "workloads")
        except ServiceMissing:
            return 0
        moved: set[str] = set()
        now = datetime.now(UTC)
        for row in rows:
            rollout = (
                orjson.loads(row["rollout"]) if isinstance(row["rollout"], str) else row["rollout"]
            )
            state = workloads.rollout_state(rollout)
            message = None
            if state == "complete":
                new = "succeeded"
            elif state in ("failed", "gone"):
                new = "failed"
                message = (
                    f"PinApp {rollout['cluster']}/{rollout['namespace']}/{rollout['name']} "
                    + ("is gone" if state == "gone" else "did not roll out")
                )
            elif row["deadline"] is not None and now >= row["deadline"]:
                new = "failed"
                message = "progress deadline passed before the rollout completed"
            else:
                continue
            async with db.transaction() as tx:
                done = await tx.fetchval(
                    "update deployment_deploys set state = $2, finished_at = now(),"
                    " message = coalesce($3, message), updated_at = now()"
                    " where id = $1 and state in ('pending', 'in_progress') returning id",
                    row["id"],
                    new,
                    message,
                )
                if done is not None and new == "succeeded" and row["is_rollback"]:
                    await mark_rolled_back(tx, row["component_ref"], row["stage"], row["id"])
            if done is not None:
                moved.add(row["component_ref"])
                key = (rollout["cluster"], rollout["namespace"], rollout["name"])
                self.following.get(key, set()).discard(row["id"])
        if moved:
            await announce_changes(self.services, changed_keys(moved))
        return len(moved)

    @staticmethod
    async def one(db: Any, deploy_id: int) -> DeployRow:
        row = await db.fetchrow(
            f"select {DEPLOY_COLUMNS} from deployment_deploys d"
            " join deployment_releases r on r.id = d.release_id where d.id = $1",
            deploy_id,
        )
        assert row is not None
        return DeployRow.of(row)


async def _logged(work: Any) -> None:
    try:
        await work
    except Exception:
        log.exception("the demo's deploy history could not be written")


@contextlib.asynccontextmanager
async def running(
    settings: DeploymentSettings,
    services: Any,
    *,
    demo_history: Callable[[Any], Awaitable[None]] | None = None,
) -> AsyncIterator[Deployments]:
    """The service, following the catalog and the workloads while it runs. ``demo_history``
    (the demo's, ``demo.seed_history``) is written alongside, in the background."""
    async with httpx.AsyncClient() as http:
        deployments = Deployments(settings, services, http)
        stop = None
        try:
            workloads = service(services, "workloads")
        except ServiceMissing:
            workloads = None
        if workloads is not None:
            with contextlib.suppress(ServiceMissing):
                stop = workloads.on_change(deployments.changed)
        catalog = asyncio.create_task(deployments.follow_catalog(), name="catalog changes")
        deployments.tasks.add(catalog)
        if demo_history is not None:
            task = asyncio.create_task(_logged(demo_history(services)), name="demo history")
            deployments.tasks.add(task)
            task.add_done_callback(deployments.tasks.discard)
        try:
            yield deployments
        finally:
            if stop is not None:
                stop()
            for task in list(deployments.tasks):
                task.cancel()
            await asyncio.gather(*deployments.tasks, return_exceptions=True)
