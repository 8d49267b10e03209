"""The deployments scenario's history: releases and deploys over 90 days, generated in SQL.

A fifth of the catalog's components get deploys (skewed: a few components have many
thousands): releases go to canary, staging, then production and stop where one fails;
production failures are mostly redeployed at once, a few releases rolled back. PostgreSQL
writes the rows itself (``insert ... select`` over ``generate_series``), the components split
into slices of about equal deploys, one connection each, into the plugin's tables with their
indexes and constraints dropped and rebuilt after (``bench.bulk``): ten million deploys never
pass through Python. One deployed component in ten gets a ``github.com/project-slug``, for
the webhooks to name.
"""

from __future__ import annotations

import collections
import math
import random
import time
from dataclasses import dataclass, field
from typing import Final

from bench.bulk import CONSTRAINTS, INDEXES, connect, parallel, run_sql

__all__ = ["SLUG", "STAGES", "History", "generate_history"]

STAGES: Final = ("canary", "staging", "production")
SPAN: Final = 90 * 86_400.0  # seconds of history
TABLES: Final = ["deployment_releases", "deployment_deploys"]
SLUG: Final = "github.com/project-slug"
SLICES: Final = 2  # connections writing at once: the machine's cores
# Deploys a release makes on average (the outcomes below, weighted), so that a component's
# candidate releases, ``MARGIN`` more, cover its deploys.
PER_RELEASE: Final = 2.835
MARGIN: Final = 1.1

# A release's outcome, drawn once (the thresholds are cumulative probabilities): canary fails
# 8%; staging fails 5% of the rest; production fails 4% of what reaches it, redeployed at once
# 70% of the time; 2% of production successes are rolled back to the release before. Each
# outcome's deploys: (outcome, step, stage, state, whether it is the rollback).
_OUTCOME: Final = """
case when r < 0.08 then 1 when r < 0.126 then 2 when r < 0.150472 then 3
     when r < 0.16096 then 4 when r < 0.1777408 and k > 1 then 5 else 6 end
"""
_LENGTHS: Final = "(array[1, 2, 4, 3, 4, 3])"
_STEPS: Final = """(values
    (1, 1, 'canary', 'failed', false),
    (2, 1, 'canary', 'succeeded', false), (2, 2, 'staging', 'failed', false),
    (3, 1, 'canary', 'succeeded', false), (3, 2, 'staging', 'succeeded', false),
    (3, 3, 'production', 'failed', false), (3, 4, 'production', 'succeeded', false),
    (4, 1, 'canary', 'succeeded', false), (4, 2, 'staging', 'succeeded', false),
    (4, 3, 'production', 'failed', false),
    (5, 1, 'canary', 'succeeded', false), (5, 2, 'staging', 'succeeded', false),
    (5, 3, 'production', 'rolled_back', false), (5, 4, 'production', 'succeeded', true),
    (6, 1, 'canary', 'succeeded', false), (6, 2, 'staging', 'succeeded', false),
    (6, 3, 'production', 'succeeded', false)
) as s(outcome, step, stage, state, rollback)"""

_SCRATCH: Final = """
create unlogged table bench_components (
    component_ref text primary key, name text not null, slice int not null,
    deploys int not null, candidates int not null, release_base bigint not null,
    deploy_base bigint not null);
create unlogged table bench_plan (
    id bigint primary key, component_ref text not null, name text not null, slice int not null,
    k int not null, outcome int not null, steps int not null, first_deploy bigint not null,
    good bigint, good_commit timestamptz, at double precision not null,
    gap double precision not null, commit_at timestamptz not null)
"""
# A slice's releases: its components' candidates, each an outcome; those that start before the
# component has all its deploys kept (the last one cut short), spread evenly over the span
# (a release's deploys end within its slot); ``good`` is the release production last ran
# successfully before it, which a rollback deploys. $1 the slice, $2 now, $3 the span.
_PLAN: Final = f"""
insert into bench_plan
with chosen as (
    select c.component_ref, c.name, c.deploys, c.release_base, c.deploy_base, g.k,
           {_OUTCOME} as outcome
    from bench_components c
    cross join lateral (select k, random() as r from generate_series(1, c.candidates) k) g
    where c.slice = $1
), sized as (
    select *, sum({_LENGTHS}[outcome]) over w - {_LENGTHS}[outcome] as start
    from chosen window w as (partition by component_ref order by k)
), kept as (
    select *, count(*) over (partition by component_ref) as releases,
           $3 / count(*) over (partition by component_ref) as slot
    from sized where start < deploys
), timed as (
    select *, least(slot, 14400.0) / 8 as gap from kept
)
select release_base + k, component_ref, name, $1, k, outcome,
       least({_LENGTHS}[outcome], deploys - start), deploy_base + start,
       max(case when outcome in (3, 6) then release_base + k end) over (
           partition by component_ref order by k rows between unbounded preceding and 1 preceding),
       null, t.at, gap, to_timestamp(t.at - 600 - random() * (2 * 86400 - 600))
from timed cross join lateral (
    select $2 - $3 + (k - 1) * slot + random() * gap as at, k as tie) t
"""
_GOOD_COMMIT: Final = """
update bench_plan p set good_commit = g.commit_at
from bench_plan g where p.slice = $1 and p.outcome = 5 and g.id = p.good
"""
_RELEASES: Final = """
insert into deployment_releases (id, component_ref, version, commit_sha, commit_time, artifact,
                                 created_by, created_at)
overriding system value
select id, component_ref, '1.' || (k - 1) / 1000 || '.' || (k - 1) % 1000,
       md5(random()::text) || left(md5(random()::text), 8), commit_at,
       'registry.example/' || name || ':1.' || (k - 1) / 1000 || '.' || (k - 1) % 1000,
       'github-actions[bot]', to_timestamp(at)
from bench_plan where slice = $1
"""
# Each deploy carries its release's commit time as the app's trigger would set it (the trigger
# is off for the load: a lookup per row).
_DEPLOYS: Final = f"""
insert into deployment_deploys (id, component_ref, stage, production, release_id, state, actor,
                                started_at, finished_at, updated_at, source, external_id, url,
                                is_rollback, message, commit_time)
overriding system value
select p.first_deploy + s.step, p.component_ref, s.stage, s.stage = 'production',
       case when s.rollback then coalesce(p.good, p.id) else p.id end, s.state,
       (array['github-actions[bot]', 'argo-cd', 'alice', 'bob', 'carol', 'dmitri'])[
           1 + floor(random() * 6)::int],
       to_timestamp(t.started), to_timestamp(t.done), to_timestamp(t.done), 'github',
       (p.first_deploy + s.step)::text,
       'https://github.com/acme/' || p.name || '/actions/runs/' || (p.first_deploy + s.step),
       s.rollback, case when s.state = 'failed' then 'health checks failed' end,
       case when s.rollback and p.good is not null then p.good_commit else p.commit_at end
from bench_plan p
join {_STEPS} on s.outcome = p.outcome and s.step <= p.steps
cross join lateral (
    select p.at + p.gap * (s.step - 0.5 + r1) as started,
           p.at + p.gap * (s.step - 0.5 + r1) + 30 + r2 * (least(600, p.gap / 2) - 30) as done
    from (select random() as r1, random() as r2, s.step as tie) r
) t
where p.slice = $1
"""
_COMMIT_TRIGGER: Final = "deployment_deploys_commit_time"
# The DORA days are counted once the deploys are written and indexed, in a few set-wide
# statements (the triggers would count them at commit, without the indexes the load drops).
_DORA_TRIGGERS: Final = (
    "deployment_deploys_dora_insert",
    "deployment_deploys_dora_update",
    "deployment_deploys_dora_delete",
)
_MADE: Final = """
select component_ref, sum(steps)::bigint as deploys, count(*) as releases
from bench_plan group by component_ref
"""
_SLUGS: Final = """
update entities set annotations = annotations || jsonb_build_object($2::text,
    'acme/' || namespace || '-' || name)
where ref = any($1::text[]) returning annotations ->> $2
"""


@dataclass(slots=True)
class History:
    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    releases: int = 0
    slugs: list[str] = field(default_factory=list)  # repositories that name a component
    steps: dict[str, float] = field(default_factory=dict)


def _shares(chosen: list[str], total: int) -> dict[str, int]:
    """``total`` deploys over ``chosen``, the one at rank r weighing 1 / (r + 1) ** 0.7: a few
    components get many thousands, most a few hundred (none when there are too few)."""
    weights = [1 / (rank + 1) ** 0.7 for rank in range(len(chosen))]
    whole = sum(weights)
    shares = [math.floor(total * w / whole) for w in weights]
    for rank in range(total - sum(shares)):
        shares[rank % len(shares)] += 1
    return {ref: n for ref, n in zip(chosen, shares, strict=True) if n}


def _components(shares: dict[str, int]) -> list[tuple[str, str, int, int, int, int, int]]:
    """bench_components' rows: each component's slice (the least loaded when it comes,
    busiest first) and where its release and deploy ids start."""
    rows = []
    load = [0] * SLICES
    release_base = deploy_base = 0
    for ref, n in sorted(shares.items(), key=lambda item: (-item[1], item[0])):
        part = load.index(min(load))
        load[part] += n
        candidates = math.ceil(n / PER_RELEASE * MARGIN) + 10
        name = ref.partition("/")[2]
        rows.append((ref, name, part, n, candidates, release_base, deploy_base))
        release_base += candidates
        deploy_base += n
    return rows


async def generate_history(url: str, total: int, seed: int) -> History:
    history, clock = History(), time.perf_counter()

    def lap(step: str) -> None:
        nonlocal clock
        history.steps[step], clock = time.perf_counter() - clock, time.perf_counter()

    conns = [await connect(url) for _ in range(SLICES)]
    db = conns[0]
    try:
        sql = "select ref from entities where kind = 'Component' order by ref"
        refs = [r[0] for r in await db.fetch(sql)]
        rng = random.Random(seed)
        shares = _shares(rng.sample(refs, max(1, len(refs) // 5)), total)
        await db.execute(_SCRATCH)
        await db.copy_records_to_table("bench_components", records=_components(shares))
        for part, conn in enumerate(conns):  # each slice's random() its own, from the seed
            await conn.execute("select setseed($1)", (seed * SLICES + part) % 1000 / 1000)
        now = time.time()
        await parallel(conns, [run_sql(_PLAN, part, now, SPAN) for part in range(SLICES)])
        await parallel(conns, [run_sql(_GOOD_COMMIT, part) for part in range(SLICES)])
        for row in await db.fetch(_MADE):
            history.counts[row["component_ref"]] = row["deploys"]
            history.releases += row["releases"]
        lap("planned")
        # Without indexes, then each table's rebuilt: releases first, so that the deploys'
        # foreign key is checked against an indexed table, as for the app's own writes.
        constraints = await db.fetch(CONSTRAINTS, TABLES)
        foreign = [c for c in constraints if c["foreign"]]
        built = [*(c for c in constraints if not c["foreign"]), *await db.fetch(INDEXES, TABLES)]
        for found in (*foreign, *built):
            await db.execute(found["drop"])
        for trigger in (_COMMIT_TRIGGER, *_DORA_TRIGGERS):
            await db.execute(f"alter table deployment_deploys disable trigger {trigger}")
        for table, insert in zip(TABLES, (_RELEASES, _DEPLOYS), strict=True):
            await parallel(conns, [run_sql(insert, part) for part in range(SLICES)])
            lap(f"{table.removeprefix('deployment_')} written")
            mine = [run_sql(found["create"]) for found in built if found["table_name"] == table]
            await parallel(conns, mine)
            sequence = f"pg_get_serial_sequence('{table}', 'id')"
            await db.execute(f"select setval({sequence}, max(id)) from {table}")
            lap(f"{table.removeprefix('deployment_')} indexed")
        for trigger in (_COMMIT_TRIGGER, *_DORA_TRIGGERS):
            await db.execute(f"alter table deployment_deploys enable trigger {trigger}")
        await db.execute("drop table bench_plan, bench_components")
        for found in foreign:
            await db.execute(found["create"])
        lap("foreign keys")
        await db.execute("vacuum (analyze) deployment_deploys")
        await db.execute("select deployment_dora_rebuild()")
        lap("DORA days")
        slugged = rng.sample(sorted(history.counts), max(1, len(history.counts) // 10))
        history.slugs = [r[0] for r in await db.fetch(_SLUGS, slugged, SLUG)]
        for table in [*TABLES, "entities", "deployment_dora_components", "deployment_dora_owners"]:
            await db.execute(f"vacuum (analyze) {table}")
        lap("vacuum analyze")
    finally:
        for conn in conns:
            await conn.close()
    return history
