"""Reading deploys, releases, pipelines and DORA figures (SQL; the resolvers' data layer)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from plugins.deployments.pipelines import Pipeline
from plugins.deployments.store import (
    DEPLOY_COLUMNS,
    RELEASE_COLUMNS,
    DeployRow,
    ReleaseRow,
    decode_cursor,
    encode_cursor,
)

__all__ = [
    "DeployFilter",
    "DoraFigures",
    "StageState",
    "deploys_page",
    "dora",
    "pipeline_state",
    "rollback_release",
    "rollback_releases",
]

MAX_WAITING: Final = 10


@dataclass(frozen=True, slots=True)
class DeployFilter:
    components: list[str] | None = None  # refs; None: every component
    stage: str | None = None
    states: list[str] | None = None
    since: datetime | None = None
    until: datetime | None = None


def _where(where: DeployFilter, args: list[Any]) -> list[str]:
    """Only the conditions asked for, each with a bound parameter: the planner sees plain
    predicates it can use indexes for (never SQL text from a client)."""
    found: list[str] = []

    def bind(value: Any) -> str:
        args.append(value)
        return f"${len(args)}"

    if where.components is not None and len(where.components) == 1:
        # One component: its newest deploys straight from the index, in order.
        found.append(f"d.component_ref = {bind(where.components[0])}")
    elif where.components is not None:
        found.append(f"d.component_ref = any({bind(where.components)}::text[])")
    if where.stage is not None:
        found.append(f"d.stage = {bind(where.stage)}")
    if where.states is not None:
        found.append(f"d.state = any({bind(where.states)}::text[])")
    if where.since is not None:
        found.append(f"d.started_at >= {bind(where.since)}")
    if where.until is not None:
        found.append(f"d.started_at < {bind(where.until)}")
    return found


async def deploys_page(
    db: Any, where: DeployFilter, first: int, after: str | None
) -> tuple[list[tuple[str, DeployRow]], bool]:
    """A page of deploys, newest first, with cursors; and whether more follow."""
    args: list[Any] = []
    conditions = _where(where, args)
    if after is not None:
        at, id = decode_cursor(after)
        args += [at, id]
        conditions.append(f"(d.started_at, d.id) < (${len(args) - 1}, ${len(args)})")
    args.append(first + 1)
    sql = (
        f"select {DEPLOY_COLUMNS} from deployment_deploys d"
        " join deployment_releases r on r.id = d.release_id"
        + (" where " + " and ".join(conditions) if conditions else "")
        + f" order by d.started_at desc, d.id desc limit ${len(args)}"
    )
    rows = [DeployRow.of(r) for r in await db.fetch(sql, *args)]
    return [(encode_cursor(r.started_at, r.id), r) for r in rows[:first]], len(rows) > first


async def deploys_count(db: Any, where: DeployFilter) -> int:
    """How many deploys match: without a time window, a sum of the counts the triggers keep
    by (component, stage, state) (migration 0003); within one, counted."""
    args: list[Any] = []
    conditions = _where(where, args)
    counted = where.since is None and where.until is None
    sql = (
        "select coalesce(sum(d.deploys), 0) from deployment_deploy_counts d"
        if counted
        else "select count(*) from deployment_deploys d"
    ) + (" where " + " and ".join(conditions) if conditions else "")
    return int(await db.fetchval(sql, *args))


async def releases_page(
    db: Any, ref: str, first: int, after: str | None
) -> tuple[list[tuple[str, ReleaseRow]], bool, int]:
    args: list[Any] = [ref]
    condition = ""
    if after is not None:
        at, id = decode_cursor(after)
        args += [at, id]
        condition = " and (r.created_at, r.id) < ($2, $3)"
    args.append(first + 1)
    rows = await db.fetch(
        f"select {RELEASE_COLUMNS} from deployment_releases r where r.component_ref = $1"
        f"{condition} order by r.created_at desc, r.id desc limit ${len(args)}",
        *args,
    )
    total = await db.fetchval(
        "select count(*) from deployment_releases where component_ref = $1", ref
    )
    found = [ReleaseRow.of(r) for r in rows]
    return (
        [(encode_cursor(r.created_at, r.id), r) for r in found[:first]],
        len(found) > first,
        int(total),
    )


@dataclass(frozen=True, slots=True)
class StageState:
    current: DeployRow | None
    latest: DeployRow | None
    waiting: list[ReleaseRow]


_STAGES: Final = f"""
select s.stage, s.position, c.*, null as split, l.*
from unnest($2::text[]) with ordinality as s(stage, position)
left join lateral (
    select {DEPLOY_COLUMNS} from deployment_deploys d
    join deployment_releases r on r.id = d.release_id
    where d.component_ref = $1 and d.stage = s.stage and d.state = 'succeeded'
    order by d.started_at desc, d.id desc limit 1
) c on true
left join lateral (
    select {DEPLOY_COLUMNS} from deployment_deploys d
    join deployment_releases r on r.id = d.release_id
    where d.component_ref = $1 and d.stage = s.stage
    order by d.started_at desc, d.id desc limit 1
) l on true
order by s.position
"""

# Releases that succeeded in the stage before and are newer than what runs here: among that
# stage's newest successful deploys (a release is created before it is deployed, so its
# deploys started after it), walked from the (component_ref, stage, started_at) index. Every
# stage at once: $2 the stage before each, $3 when what runs in it was released.
_WAITING: Final = f"""
select w.position, r.* from unnest($2::text[], $3::timestamptz[]) with ordinality
    as w(before, since, position)
cross join lateral (
    select {RELEASE_COLUMNS} from deployment_releases r
    where r.id in (
        select d.release_id from deployment_deploys d
        where d.component_ref = $1 and d.stage = w.before and d.state = 'succeeded'
          and d.started_at > coalesce(w.since, '-infinity')
        order by d.started_at desc, d.id desc limit {MAX_WAITING * 5}
    ) and r.created_at > coalesce(w.since, '-infinity')
    order by r.created_at desc, r.id desc limit {MAX_WAITING}
) r
order by w.position, r.release_created_at desc, r.release_id desc
"""


def _split(row: Any, columns: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The two lateral joins' columns, told apart by position around the ``split`` column."""
    values = list(row.values())
    marker = columns.index("split")
    names = columns[2:marker]
    return (
        dict(zip(names, values[2:marker], strict=True)),
        dict(zip(columns[marker + 1 :], values[marker + 1 :], strict=True)),
    )


async def pipeline_state(db: Any, ref: str, pipeline: Pipeline) -> list[StageState]:
    """Each stage's current and latest deploy (one query), and what waits to be promoted
    into each stage from the one before (one query for them all): two, however many stages."""
    names = [s.name for s in pipeline.stages]
    rows = await db.fetch(_STAGES, ref, names)
    stages: list[tuple[DeployRow | None, DeployRow | None]] = []
    for row in rows:
        current, latest = _split(row, list(row.keys()))
        stages.append(
            (
                DeployRow.of(current) if current["id"] is not None else None,
                DeployRow.of(latest) if latest["id"] is not None else None,
            )
        )
    waiting: list[list[ReleaseRow]] = [[] for _ in stages]
    if len(stages) > 1:
        since = [c.release.created_at if c is not None else None for c, _ in stages[1:]]
        for row in await db.fetch(_WAITING, ref, names[:-1], since):
            waiting[row["position"]].append(ReleaseRow.of(row))  # position 1: the second stage
    return [
        StageState(current, latest, releases)
        for (current, latest), releases in zip(stages, waiting, strict=True)
    ]


# What a rollback without a named release deploys: among the stage's newest successful deploys
# (what runs now first), the newest whose release is not the one running now. For many
# (component, stage) pairs at once, one lateral probe each.
_ROLLBACK: Final = f"""
select k.position, r.* from unnest($1::text[], $2::text[]) with ordinality
    as k(component_ref, stage, position)
cross join lateral (
    select {RELEASE_COLUMNS}
    from (
        select d.release_id, first_value(d.release_id) over newest as running,
               row_number() over newest as n
        from deployment_deploys d
        where d.component_ref = k.component_ref and d.stage = k.stage and d.state = 'succeeded'
        window newest as (order by d.finished_at desc nulls last, d.id desc)
        order by d.finished_at desc nulls last, d.id desc limit 50
    ) g
    join deployment_releases r on r.id = g.release_id
    where g.release_id <> g.running
    order by g.n limit 1
) r
"""


async def rollback_releases(db: Any, keys: list[tuple[str, str]]) -> list[ReleaseRow | None]:
    """Each (component, stage)'s last good release before what runs there now, in the keys'
    order; None where there is none. One statement."""
    found: list[ReleaseRow | None] = [None] * len(keys)
    refs, stages = [k[0] for k in keys], [k[1] for k in keys]
    for row in await db.fetch(_ROLLBACK, refs, stages):
        found[row["position"] - 1] = ReleaseRow.of(row)
    return found


async def rollback_release(db: Any, ref: str, stage: str) -> ReleaseRow | None:
    """The stage's last good release before what runs there now; None when there is none."""
    [found] = await rollback_releases(db, [(ref, stage)])
    return found


@dataclass(frozen=True, slots=True)
class DoraFigures:
    days: int
    deploys: int
    failures: int
    finished: int
    lead_time: float | None
    time_to_restore: float | None


# DORA figures from the days kept ahead of time (plugin migration 0005): the window is whole
# days in UTC, today's so far and the days before it. A component's are its own days; a team's
# the days of every component its owners own, summed per owner. Medians come from histograms
# whose buckets grow by 2%: the middle of the bucket holding the middle value (the two middle
# values' for an even count), within 1% of the exact median.
_DORA_OF: Final = """
with days as (
    select measure, bucket, n from deployment_dora_{table} k
    where k.{key} = any($1::text[])
      and k.day > (now() at time zone 'UTC')::date - $2::int
),
totals as (
    select measure, bucket, sum(n)::bigint as n from days group by 1, 2 having sum(n) > 0
),
ranked as (
    select measure, bucket,
           (sum(n) over (partition by measure order by bucket))::bigint as below,
           (sum(n) over (partition by measure))::bigint as total
    from totals where measure in ('l', 'r')
),
medians as (
    select measure,
           (min(deployment_dora_seconds(bucket)) filter (where below >= (total + 1) / 2)
            + min(deployment_dora_seconds(bucket)) filter (where below >= (total + 2) / 2)) / 2
               as seconds
    from ranked group by measure
)
select
    coalesce((select sum(n) from totals where measure = 'd'), 0) as deploys,
    coalesce((select sum(n) from totals where measure = 'x'), 0) as failures,
    coalesce((select sum(n) from totals where measure = 'f'), 0) as finished,
    (select seconds from medians where measure = 'l') as lead_time,
    (select seconds from medians where measure = 'r') as time_to_restore
"""
_DORA_COMPONENTS: Final = _DORA_OF.format(table="components", key="component_ref")
_DORA_OWNERS: Final = _DORA_OF.format(table="owners", key="owner_ref")


async def dora(
    db: Any, refs: list[str], days: int, *, owners: list[str] | None = None
) -> DoraFigures:
    """DORA's four keys for production deploys finished in the window: of the components
    ``refs``, or (``owners`` given) of every component whose owner is one of ``owners``."""
    if owners is not None:
        row = await db.fetchrow(_DORA_OWNERS, owners, days)
    else:
        row = await db.fetchrow(_DORA_COMPONENTS, refs, days)
    return DoraFigures(
        days=days,
        deploys=int(row["deploys"]),
        failures=int(row["failures"]),
        finished=int(row["finished"]),
        lead_time=float(row["lead_time"]) if row["lead_time"] is not None else None,
        time_to_restore=(
            float(row["time_to_restore"]) if row["time_to_restore"] is not None else None
        ),
    )
