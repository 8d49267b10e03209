"""The demo's deployments (``atrium serve --demo``, development only): a generated deploy
history (``demo_history``) for every component with a repository, written once into an empty
history at start-up, and what the demo cluster runs made to match it.

When PinCompute's demo cluster runs a service (a PinApp in namespace ``<system>`` and one in
``<system>-staging``), its pipeline binds staging and production to them, so promoting and
rolling back can be tried on both; and at every start each bound PinApp is set, through the
``workloads`` service, to the artifact of the release its stage runs according to the history
(the emulated cluster starts afresh each time, the history stays): what the console shows
running is what the deploy history says.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from datetime import UTC, datetime
from typing import Any, Final

import orjson

from graph.plugin import ServiceMissing, UserError, Viewer, service
from plugins.deployments.demo_history import DemoDeploy, history
from plugins.deployments.service import SLUG_ANNOTATION

__all__ = ["REGISTRY", "STAGING_SUFFIX", "seed_history"]

log = logging.getLogger("atrium.deployments.demo")

REGISTRY: Final = "registry.junipermarket.example"
# The demo cluster's staging namespaces: ``<system>-staging`` beside ``<system>``.
STAGING_SUFFIX: Final = "-staging"
WORKLOADS_WAIT: Final = 30.0  # seconds to wait for the demo cluster's PinApps to be seen
LOCK: Final = 0x6465706C6F79  # pg_advisory_xact_lock key: one replica writes the history
# The demo itself sets images to match the history: an admin acting for nobody.
DEMO: Final = Viewer(None, "demo", frozenset({"read", "write", "admin"}))

# Components with a repository, and the names of their owners' members (who promote).
_COMPONENTS: Final = """
select e.ref, e.name, array(
    select split_part(r.target_ref, '/', 2) from relations r
    where r.source_ref = e.owner_ref and r.type = 'hasMember' order by r.target_ref
) as people
from entities e where e.kind = 'Component' and e.annotations ? $1 order by e.ref
"""
# What each stage runs, as a pipeline's ``current`` says: its newest successful deploy.
_RUNNING: Final = """
select distinct on (d.component_ref, d.stage) d.component_ref, d.stage, r.artifact
from deployment_deploys d join deployment_releases r on r.id = d.release_id
where d.component_ref = any($1::text[]) and d.state = 'succeeded'
order by d.component_ref, d.stage, d.started_at desc, d.id desc
"""


async def seed_history(services: Any) -> None:
    """Write the demo history unless there is one, bind the pipelines of the services the demo
    cluster runs, and set its PinApps to what the history says each stage runs."""
    db = services.database
    components = await db.fetch(_COMPONENTS, SLUG_ANNOTATION)
    refs = [r["ref"] for r in components]
    workloads = await _workloads(services, refs)
    if not await db.fetchval("select exists (select 1 from deployment_deploys)"):
        now = datetime.now(UTC).replace(microsecond=0)
        deploys = [
            deploy for row in components for deploy in history(row["ref"], now, list(row["people"]))
        ]
        async with db.transaction() as tx:
            await tx.execute("select pg_advisory_xact_lock($1)", LOCK)
            if not await tx.fetchval("select exists (select 1 from deployment_deploys)"):
                await _write(tx, deploys)
                log.info(
                    "demo deploy history written",
                    extra={"components": len(components), "deploys": len(deploys)},
                )
    if workloads:
        await _bind(db, workloads)
        await _run_what_history_says(services, workloads)


async def _workloads(services: Any, refs: list[str]) -> dict[str, dict[str, Any]]:
    """Each component's PinApps in the demo cluster by stage, once the informers have seen
    them; none without PinCompute."""
    try:
        workloads = service(services, "workloads")
    except ServiceMissing:
        return {}
    if not refs:
        return {}
    deadline = asyncio.get_running_loop().time() + WORKLOADS_WAIT
    while True:
        found: dict[str, dict[str, Any]] = {}
        for ref in refs:
            for app in workloads.of_entity(ref):
                stage = "staging" if app.namespace.endswith(STAGING_SUFFIX) else "production"
                found.setdefault(ref, {}).setdefault(stage, app)
        if found or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.5)


async def _bind(db: Any, workloads: dict[str, dict[str, Any]]) -> None:
    """Pipelines whose stages deploy to the demo cluster's PinApps. Rewritten at each start (the
    cluster's names may have changed), unless someone set the pipeline since."""
    refs, pipelines = [], []
    for ref, apps in sorted(workloads.items()):
        stages: list[dict[str, Any]] = []
        for name in ("staging", "production"):
            stage: dict[str, Any] = {"name": name}
            if name == "production":
                stage["production"] = True
            app = apps.get(name)
            if app is not None:
                stage["pinApp"] = {
                    "cluster": app.cluster,
                    "namespace": app.namespace,
                    "name": app.name,
                }
            stages.append(stage)
        refs.append(ref)
        # As text: asyncpg would take a list of lists for a two-dimensional array.
        pipelines.append(orjson.dumps(stages).decode())
    await db.execute(
        "insert into deployment_pipelines (component_ref, stages, updated_by)"
        " select ref, stages::jsonb, 'demo' from unnest($1::text[], $2::text[]) as p(ref, stages)"
        " on conflict (component_ref) do update set stages = excluded.stages,"
        " updated_at = now() where deployment_pipelines.updated_by = 'demo'",
        refs,
        pipelines,
    )


async def _run_what_history_says(services: Any, workloads: dict[str, dict[str, Any]]) -> None:
    """Set each bound PinApp's image to the artifact its stage's current release names."""
    running = await services.database.fetch(_RUNNING, list(workloads))
    context = await services.context(None, viewer=DEMO)
    setter = service(services, "workloads")
    changed = 0
    for row in running:
        app = workloads.get(row["component_ref"], {}).get(row["stage"])
        if app is None or not row["artifact"] or app.image == row["artifact"]:
            continue
        try:
            await setter.set_image(
                context,
                app.cluster,
                app.namespace,
                app.name,
                row["artifact"],
                expect_image=app.image,
            )
            changed += 1
        except UserError as exc:  # another worker set it first, say
            log.debug("demo workload not set", extra={"app": app.name, "error": str(exc)})
    log.debug("demo workloads set to their releases", extra={"changed": changed})


async def _write(tx: Any, deploys: list[DemoDeploy]) -> None:
    releases: dict[tuple[str, str], tuple[datetime, datetime]] = {}
    for d in deploys:
        key = (d.component, d.version)
        if key not in releases or d.started < releases[key][0]:
            releases[key] = (d.started, d.commit_time)
    ordered_releases = sorted(releases.items())
    components = [component for (component, _), _ in ordered_releases]
    versions = [version for (_, version), _ in ordered_releases]
    names = [component.rpartition("/")[2] for component in components]
    # One statement over arrays each, not a statement a row, nor asyncpg's executemany:
    # cancelled while it streams its rows (as when the server stops), that never returns.
    rows = await tx.fetch(
        "insert into deployment_releases (component_ref, version, commit_sha, commit_time,"
        " artifact, created_by, created_at, build_url)"
        " select component, version, sha, committed, artifact, 'ci-bot', created, build"
        " from unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[],"
        " $6::timestamptz[], $7::text[]) as r(component, version, sha, committed, artifact,"
        " created, build)"
        " on conflict (component_ref, version) do update set version = excluded.version"
        " returning id, component_ref, version",
        components,
        versions,
        [
            hashlib.sha1(f"{c}@{v}".encode()).hexdigest()
            for c, v in zip(components, versions, strict=True)
        ],
        [committed for _, (_, committed) in ordered_releases],
        [f"{REGISTRY}/{n}:{v}" for n, v in zip(names, versions, strict=True)],
        [created for _, (created, _) in ordered_releases],
        [
            f"https://ci.junipermarket.example/{n}/builds/{v}"
            for n, v in zip(names, versions, strict=True)
        ],
    )
    ids = {(r["component_ref"], r["version"]): r["id"] for r in rows}
    ordered = sorted(deploys, key=lambda d: d.started)
    await tx.execute(
        "insert into deployment_deploys (component_ref, stage, production, release_id, state,"
        " actor, started_at, finished_at, source, external_id, is_rollback, message)"
        " select component, stage, stage = 'production', release, state, actor, started,"
        " finished, 'webhook', 'demo-' || (n - 1), rollback, message from unnest($1::text[],"
        " $2::text[], $3::bigint[], $4::text[], $5::text[], $6::timestamptz[],"
        " $7::timestamptz[], $8::boolean[], $9::text[]) with ordinality as d(component, stage,"
        " release, state, actor, started, finished, rollback, message, n) order by n",
        [d.component for d in ordered],
        [d.stage for d in ordered],
        [ids[d.component, d.version] for d in ordered],
        [d.state for d in ordered],
        [d.actor for d in ordered],
        [d.started for d in ordered],
        [d.finished for d in ordered],
        [d.rollback for d in ordered],
        [d.message for d in ordered],
    )
    # A successful rollback marks the deploy it replaced.
    await tx.execute(
        "update deployment_deploys d set state = 'rolled_back' from deployment_deploys b"
        " where b.is_rollback and b.state = 'succeeded' and b.source = 'webhook'"
        " and d.id = (select p.id from deployment_deploys p where p.component_ref ="
        " b.component_ref and p.stage = b.stage and p.state = 'succeeded' and p.id <> b.id"
        " and p.finished_at <= b.started_at order by p.finished_at desc limit 1)"
    )
