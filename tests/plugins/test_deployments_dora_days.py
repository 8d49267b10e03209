"""DORA figures from the days kept ahead of time (plugin migration 0005): whatever writes the
deploys or moves a component to another owner, the kept days equal the days counted again from
scratch, and the figures read from them equal those computed from the deploys themselves
(counts exactly, medians within 1%), for a component and for a team."""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from typing import Any

import asyncpg
import pytest

from plugins.deployments import DeploymentsPlugin
from plugins.deployments.queries import DoraFigures, dora
from plugins.deployments.settings import DeploymentSettings
from sources.catalog.documents import parse_documents
from sources.catalog.store import apply_batch
from tests.conftest import AppFactory, Client

# The figures computed from the deploys themselves, as before the days were kept: production
# deploys finished since the first of the window's whole days (UTC), of the components given.
BY_HAND = """
with production as (
    select d.* from deployment_deploys d
    where d.component_ref = any($1::text[]) and d.production
      and d.state in ('succeeded', 'failed', 'rolled_back')
      and d.finished_at >= (((now() at time zone 'UTC')::date - ($2::int - 1))::timestamp
                            at time zone 'UTC')
),
restored as (
    select extract(epoch from next.finished_at - f.finished_at) as seconds
    from production f
    cross join lateral (
        select n.finished_at from deployment_deploys n
        where n.component_ref = f.component_ref and n.production and n.state = 'succeeded'
          and n.finished_at > f.finished_at
        order by n.finished_at limit 1
    ) next
    where f.state in ('failed', 'rolled_back')
)
select
    count(*) filter (where state in ('succeeded', 'rolled_back')) as deploys,
    count(*) filter (where state in ('failed', 'rolled_back')) as failures,
    count(*) as finished,
    percentile_cont(0.5) within group (
        order by greatest(extract(epoch from finished_at - commit_time), 0)
    ) filter (where state in ('succeeded', 'rolled_back') and commit_time is not null)
        as lead_time,
    (select percentile_cont(0.5) within group (order by seconds) from restored)
        as time_to_restore
from production
"""
KEPT = """
select 'c' as level, component_ref as ref, day, measure, bucket, n
from deployment_dora_components where n <> 0
union all
select 'o', owner_ref, day, measure, bucket, n from deployment_dora_owners where n <> 0
order by 1, 2, 3, 4, 5
"""
RELEASE = """
insert into deployment_releases (component_ref, version, created_at)
values ($1, $2, now()) returning id
"""
DEPLOYS = """
insert into deployment_deploys (component_ref, stage, production, release_id, state,
                                started_at, finished_at, commit_time, source, external_id)
select $1, s.stage, s.stage = 'production', $2, s.state, coalesce(s.finished, now()), s.finished,
       s.committed, 'atrium', s.id
from unnest($3::text[], $4::text[], $5::timestamptz[], $6::timestamptz[], $7::text[])
    as s(stage, state, finished, committed, id)
"""
STATES = ["succeeded"] * 6 + ["failed"] * 2 + ["rolled_back", "in_progress"]
CATALOG = """
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {{name: team-x}}
spec: {{type: team}}
---
apiVersion: backstage.io/v1alpha1
kind: Group
metadata: {{name: team-y}}
spec: {{type: team}}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: a}}
spec: {{type: service, lifecycle: production, owner: team-x}}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: b}}
spec: {{type: service, lifecycle: production, owner: team-x}}
---
apiVersion: backstage.io/v1alpha1
kind: Component
metadata: {{name: c}}
spec: {{type: service, lifecycle: production, owner: {c_owner}}}
"""
COMPONENTS = ["component:default/a", "component:default/b", "component:default/c"]
TEAMS = ["group:default/team-x", "group:default/team-y"]


@pytest.fixture
async def client(make_client: AppFactory) -> Client:
    settings = DeploymentSettings(deployments_check_interval=3600.0)
    return await make_client(plugins=[DeploymentsPlugin(settings)])  # type: ignore[no-any-return]


async def _catalog(db: Any, c_owner: str) -> None:
    report = await apply_batch(db, parse_documents(CATALOG.format(c_owner=c_owner), "org.yaml"))
    assert not report.errors


async def _history(db: Any, rng: random.Random, ref: str, n: int, *, tag: str) -> None:
    """n deploys of a component over the last 20 days, most in production, in random states;
    lead times from a minute to three days (a few committed after they finished: clocks)."""
    now = datetime.now(UTC)
    rows: list[tuple[str, str, datetime | None, datetime | None, str]] = []
    for i in range(n):
        state = rng.choice(STATES)
        finished = now - timedelta(seconds=rng.uniform(0, 20 * 86400))
        committed = finished - timedelta(seconds=rng.uniform(-30, 3 * 86400))
        stage = "production" if rng.random() < 0.8 else "staging"
        rows.append(
            (
                stage,
                state,
                None if state == "in_progress" else finished,
                committed if rng.random() < 0.9 else None,
                f"{ref}-{tag}-{i}",
            )
        )
    release = await db.fetchval(RELEASE, ref, tag)
    await db.execute(DEPLOYS, ref, release, *map(list, zip(*rows, strict=True)))


async def _by_hand(db: Any, refs: list[str], days: int) -> DoraFigures:
    row = await db.fetchrow(BY_HAND, refs, days)
    return DoraFigures(
        days=days,
        deploys=row["deploys"],
        failures=row["failures"],
        finished=row["finished"],
        lead_time=row["lead_time"],
        time_to_restore=row["time_to_restore"],
    )


def _same(kept: DoraFigures, exact: DoraFigures) -> None:
    assert (kept.deploys, kept.failures, kept.finished) == (
        exact.deploys,
        exact.failures,
        exact.finished,
    )
    for got, want in (
        (kept.lead_time, exact.lead_time),
        (kept.time_to_restore, exact.time_to_restore),
    ):
        if want is None:
            assert got is None
        else:
            # Lead times under a second fall in bucket 0 (read as 0).
            assert got == pytest.approx(want, rel=0.01, abs=1.0)


async def _figures_hold(db: Any) -> None:
    """Every component's and team's figures over 1, 7 and 30 days equal those computed from
    the deploys, and the kept days equal the days counted again from scratch."""
    owned = {
        team: [
            r["ref"]
            for r in await db.fetch(
                "select ref from entities where owner_ref = $1 and kind = 'Component'", team
            )
        ]
        for team in TEAMS
    }
    for days in (1, 7, 30):
        for ref in COMPONENTS:
            _same(await dora(db, [ref], days), await _by_hand(db, [ref], days))
        for team, refs in owned.items():
            _same(await dora(db, [], days, owners=[team]), await _by_hand(db, refs, days))
    kept = [tuple(r) for r in await db.fetch(KEPT)]
    await db.execute("select deployment_dora_rebuild()")
    assert kept == [tuple(r) for r in await db.fetch(KEPT)]


async def test_the_kept_days_follow_every_write_to_the_deploys(client: Client) -> None:
    db = client.services.db
    rng = random.Random(25)
    await _catalog(db, "team-y")
    for n, ref in enumerate(COMPONENTS):
        await _history(db, rng, ref, 120 + n, tag=f"h{n}")
    assert (await dora(db, [], 30, owners=["group:default/team-x"])).deploys > 100
    await _figures_hold(db)

    # Deploys finishing (and rolled back), a success arriving late between a failure and the
    # success that restored it (restoring it sooner), and a statement that changes nothing.
    await db.execute(
        "update deployment_deploys set state = 'succeeded', finished_at = now()"
        " where state = 'in_progress' and component_ref = $1",
        COMPONENTS[0],
    )
    await db.execute(
        "update deployment_deploys set state = 'rolled_back' where id in (select id from"
        " deployment_deploys where state = 'succeeded' and production order by id limit 9)"
    )
    failure = await db.fetchrow(
        "select component_ref, finished_at from deployment_deploys where state = 'failed'"
        " and production and finished_at < now() - interval '2 days' order by finished_at limit 1"
    )
    late = failure["finished_at"] + timedelta(seconds=90)
    release = await db.fetchval(RELEASE, failure["component_ref"], "late")
    await db.execute(
        DEPLOYS,
        failure["component_ref"],
        release,
        ["production"],
        ["succeeded"],
        [late],
        [late - timedelta(hours=1)],
        ["late"],
    )
    await db.execute("update deployment_deploys set message = 'checked'")
    await _figures_hold(db)

    # Deletes: a few deploys, then a component's whole history.
    await db.execute(
        "delete from deployment_deploys where id in (select id from deployment_deploys"
        " where production and state = 'succeeded' order by finished_at desc limit 15)"
    )
    await db.execute("delete from deployment_deploys where component_ref = $1", COMPONENTS[1])
    await _figures_hold(db)

    await db.execute("truncate deployment_deploys cascade")
    assert await db.fetchval("select count(*) from deployment_dora_owners") == 0
    assert (await dora(db, [], 30, owners=["group:default/team-x"])).deploys == 0


async def test_a_components_days_move_with_its_owner(client: Client) -> None:
    db = client.services.db
    rng = random.Random(26)
    await _catalog(db, "team-y")
    for n, ref in enumerate(COMPONENTS):
        await _history(db, rng, ref, 60, tag=f"m{n}")
    y = await dora(db, [], 30, owners=["group:default/team-y"])
    x = await dora(db, [], 30, owners=["group:default/team-x"])
    assert y.deploys > 0

    await _catalog(db, "team-x")  # c moves from team-y to team-x
    assert (await dora(db, [], 30, owners=["group:default/team-y"])).deploys == 0
    moved = await dora(db, [], 30, owners=["group:default/team-x"])
    assert moved.deploys == x.deploys + y.deploys
    await _figures_hold(db)

    await db.execute("delete from entities where ref = $1", COMPONENTS[0])  # a goes away
    gone = await dora(db, [], 30, owners=["group:default/team-x"])
    assert gone.deploys < moved.deploys
    await _figures_hold(db)

    # Deploys of a component the catalog does not have count for no team until it appears.
    await _history(db, rng, COMPONENTS[0], 10, tag="after")
    await _catalog(db, "team-y")  # a comes back (team-x), c goes back to team-y
    await _figures_hold(db)


async def test_writers_committing_deploys_of_one_team_at_once_miss_nothing(
    client: Client, database_url: str
) -> None:
    """Two transactions write deploys of one team (one component each, then both the same
    one) and commit at once: both are counted, neither deadlocks. (Two writers of one
    component's deploys wait for each other already, on its deploy counts.)"""
    db = client.services.db
    rng = random.Random(27)
    await _catalog(db, "team-x")
    conns = [await asyncpg.connect(database_url) for _ in range(2)]

    async def write(conn: asyncpg.Connection, ref: str, tag: str) -> None:
        async with conn.transaction():
            await _history(conn, rng, ref, 30, tag=tag)

    try:
        for round_, refs in enumerate(([COMPONENTS[0], COMPONENTS[1]], [COMPONENTS[2]] * 2)):
            await asyncio.gather(
                *(
                    write(c, ref, f"c{round_}-{k}")
                    for k, (c, ref) in enumerate(zip(conns, refs, strict=True))
                )
            )
            await _figures_hold(db)
    finally:
        for conn in conns:
            await conn.close()
    team = await dora(db, [], 30, owners=["group:default/team-x"])
    exact = await _by_hand(db, COMPONENTS, 30)
    assert team.finished == exact.finished > 0
