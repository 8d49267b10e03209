"""The demo's deploy history: ninety days of releases going through staging to production for
every component with a repository, a few failing or rolled back, so ``make run`` shows
pipelines, histories and DORA figures. Written once, into an empty history, at start-up in
development mode (``atrium serve --demo``); services get a pipeline whose production stage
deploys to their PinApp when PinCompute's demo cluster runs it, so promoting can be tried."""

from __future__ import annotations

import asyncio
import hashlib
import logging
import random
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from graph.plugin import ServiceMissing, service
from plugins.deployments.service import SLUG_ANNOTATION

__all__ = ["seed_history"]

log = logging.getLogger("atrium.deployments.demo")

DAYS: Final = 90
STAGES: Final = ("staging", "production")
REGISTRY: Final = "registry.junipermarket.example"
WORKLOADS_WAIT: Final = 30.0  # seconds to wait for the demo cluster's PinApps to be seen
LOCK: Final = 0x6465706C6F79  # pg_advisory_xact_lock key: one replica writes the history


@dataclass(frozen=True, slots=True)
class _Deploy:
    component: str
    stage: str
    version: str
    commit_time: datetime
    started: datetime
    finished: datetime
    state: str
    rollback: bool
    actor: str


async def seed_history(services: Any) -> None:
    """Write the demo history unless there is one; wait a little for the demo cluster."""
    db = services.database
    if await db.fetchval("select exists (select 1 from deployment_deploys)"):
        return
    components = await db.fetch(
        "select ref, name, spec->>'type' as type, annotations->>$1 as slug from entities"
        " where kind = 'Component' and annotations ? $1 order by ref",
        SLUG_ANNOTATION,
    )
    workloads = await _workloads(services, [r["ref"] for r in components])
    now = datetime.now(UTC).replace(microsecond=0)
    deploys: list[_Deploy] = []
    for row in components:
        running = workloads.get(row["ref"])
        deploys += _history(row["ref"], row["name"], now, running.image if running else None)
    async with db.transaction() as tx:
        await tx.execute("select pg_advisory_xact_lock($1)", LOCK)
        if await tx.fetchval("select exists (select 1 from deployment_deploys)"):
            return
        for row in components:
            running = workloads.get(row["ref"])
            if running is None:
                continue
            production = {
                "name": "production",
                "production": True,
                "pinApp": {
                    "cluster": running.cluster,
                    "namespace": running.namespace,
                    "name": running.name,
                },
            }
            await tx.execute(
                "insert into deployment_pipelines (component_ref, stages, updated_by)"
                " values ($1, $2::jsonb, 'demo') on conflict do nothing",
                row["ref"],
                [{"name": "staging"}, production],
            )
        await _write(tx, deploys)
    log.info(
        "demo deploy history written",
        extra={"components": len(components), "deploys": len(deploys)},
    )


async def _workloads(services: Any, refs: list[str]) -> dict[str, Any]:
    """Each component's PinApp in the demo cluster, once the informers have seen them."""
    try:
        workloads = service(services, "workloads")
    except ServiceMissing:
        return {}
    deadline = asyncio.get_running_loop().time() + WORKLOADS_WAIT
    while True:
        found = {ref: apps[0] for ref in refs if (apps := workloads.of_entity(ref))}
        if found or asyncio.get_running_loop().time() > deadline:
            return found
        await asyncio.sleep(0.5)


def _history(ref: str, name: str, now: datetime, running_image: str | None) -> list[_Deploy]:
    """A component's releases over the window: each to staging, most on to production."""
    rng = random.Random(int(hashlib.sha256(ref.encode()).hexdigest()[:8], 16))
    major, minor = 1, rng.randint(0, 9)
    people = ["amelia.chen", "noah.patel", "sofia.garcia", "liam.okafor", "ci-bot"]
    at = now - timedelta(days=DAYS) + timedelta(hours=rng.uniform(0, 48))
    found: list[_Deploy] = []
    good: list[str] = []  # versions production ran, newest last
    while at < now - timedelta(hours=6):
        minor += 1
        version = f"{major}.{minor}.{rng.randint(0, 3)}"
        committed = at - timedelta(hours=rng.uniform(1, 30))
        actor = rng.choice(people)
        staged = at + timedelta(minutes=rng.uniform(3, 12))
        staging_ok = rng.random() > 0.05
        found.append(
            _Deploy(
                ref,
                "staging",
                version,
                committed,
                at,
                staged,
                "succeeded" if staging_ok else "failed",
                False,
                actor,
            )
        )
        if staging_ok and rng.random() > 0.15:
            start = staged + timedelta(hours=rng.uniform(1, 20))
            if start >= now:
                break
            end = start + timedelta(minutes=rng.uniform(4, 25))
            failed = rng.random() < 0.06
            found.append(
                _Deploy(
                    ref,
                    "production",
                    version,
                    committed,
                    start,
                    end,
                    "failed" if failed else "succeeded",
                    False,
                    actor,
                )
            )
            if not failed and good and rng.random() < 0.04:
                # A bad release: rolled back to the one before within the hour.
                back = end + timedelta(minutes=rng.uniform(10, 60))
                found.append(
                    _Deploy(
                        ref,
                        "production",
                        good[-1],
                        committed,
                        back,
                        back + timedelta(minutes=5),
                        "succeeded",
                        True,
                        "oncall",
                    )
                )
            elif not failed:
                good.append(version)
        at += timedelta(hours=rng.uniform(24, 110))
    if running_image and good:
        # What production runs now is what the demo cluster's PinApp runs.
        tag = running_image.rpartition(":")[2]
        last = found[-1] if found[-1].stage == "production" else None
        if last is not None and last.state == "succeeded":
            found[-1] = _replace_version(last, tag)
    return found


def _replace_version(deploy: _Deploy, version: str) -> _Deploy:
    return _Deploy(
        deploy.component,
        deploy.stage,
        version,
        deploy.commit_time,
        deploy.started,
        deploy.finished,
        deploy.state,
        deploy.rollback,
        deploy.actor,
    )


async def _write(tx: Any, deploys: list[_Deploy]) -> None:
    releases: dict[tuple[str, str], tuple[datetime, datetime]] = {}
    for d in deploys:
        key = (d.component, d.version)
        if key not in releases or d.started < releases[key][0]:
            releases[key] = (d.started, d.commit_time)
    ids: dict[tuple[str, str], int] = {}
    for (component, version), (created, committed) in sorted(releases.items()):
        name = component.rpartition("/")[2]
        ids[component, version] = await tx.fetchval(
            "insert into deployment_releases (component_ref, version, commit_sha, commit_time,"
            " artifact, created_by, created_at, build_url) values ($1, $2, $3, $4, $5, 'ci-bot',"
            " $6, $7) on conflict (component_ref, version) do update set version = excluded.version"
            " returning id",
            component,
            version,
            hashlib.sha1(f"{component}@{version}".encode()).hexdigest(),
            committed,
            f"{REGISTRY}/{name}:{version}",
            created,
            f"https://ci.junipermarket.example/{name}/builds/{version}",
        )
    # One statement over arrays, not asyncpg's executemany: cancelled while it streams its rows
    # (as when the server stops), that never returns, and the shutdown hangs on it.
    ordered = sorted(deploys, key=lambda d: d.started)
    await tx.execute(
        "insert into deployment_deploys (component_ref, stage, production, release_id, state,"
        " actor, started_at, finished_at, source, external_id, is_rollback)"
        " select component, stage, stage = 'production', release, state, actor, started,"
        " finished, 'webhook', 'demo-' || (n - 1), rollback from unnest($1::text[], $2::text[],"
        " $3::bigint[], $4::text[], $5::text[], $6::timestamptz[], $7::timestamptz[],"
        " $8::boolean[]) with ordinality as d(component, stage, release, state, actor, started,"
        " finished, rollback, n) order by n",
        [d.component for d in ordered],
        [d.stage for d in ordered],
        [ids[d.component, d.version] for d in ordered],
        [d.state for d in ordered],
        [d.actor for d in ordered],
        [d.started for d in ordered],
        [d.finished for d in ordered],
        [d.rollback for d in ordered],
    )
    # A successful rollback marks the deploy it replaced.
    await tx.execute(
        "update deployment_deploys d set state = 'rolled_back' from deployment_deploys b"
        " where b.is_rollback and b.state = 'succeeded' and b.source = 'webhook'"
        " and d.id = (select p.id from deployment_deploys p where p.component_ref ="
        " b.component_ref and p.stage = b.stage and p.state = 'succeeded' and p.id <> b.id"
        " and p.finished_at <= b.started_at order by p.finished_at desc limit 1)"
    )
