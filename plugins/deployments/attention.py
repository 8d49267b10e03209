"""What needs attention in a team's deploys: a stage whose newest deploy failed, a deploy in
flight for too long, releases waiting to be promoted into a production stage.

One statement for every component asked about: each component's stages (its declared
pipeline, read here from the catalog; else the one set through the API; else the stages its
deploys went to, as ``Component.pipeline`` shows them), then a probe of the stage index per
stage for its newest deploy and what waits, and the in-flight index for what is stuck.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any, Final

import orjson

from graph.plugin import (
    AttentionItem,
    AttentionLevel,
    Context,
    entity,
    entity_href,
)
from plugins.deployments.pipelines import PipelineError, declared
from plugins.deployments.queries import MAX_WAITING
from plugins.deployments.service import PLUGIN_ID, Deployments

__all__ = ["ATTENTION", "deploy_attention"]

# $1 component refs, $2 each one's declared stages (JSON, as Stage.to_json writes them; null
# when its YAML declares none), $3 stage names counted as production when nothing says,
# $4 seconds after which a deploy still in flight is stuck.
ATTENTION: Final = f"""
with recursive asked as (
    select a.ref, coalesce(a.declared::jsonb, p.stages) as stages
    from unnest($1::text[], $2::text[]) as a(ref, declared)
    left join deployment_pipelines p on p.component_ref = a.ref
),
-- A pipeline's stages in order: production where marked, else the last (parse_stages' rule).
listed as (
    select a.ref, s.value->>'name' as stage, s.n::float8 as position,
        case when bool_or(s.value->'production' = 'true'::jsonb) over w
            then coalesce(s.value->'production' = 'true'::jsonb, false)
            else s.n = count(*) over w end as production
    from asked a
    cross join lateral jsonb_array_elements(
        case when jsonb_typeof(a.stages) = 'array' then a.stages end
    ) with ordinality as s(value, n)
    window w as (partition by a.ref)
),
-- No pipeline: the stages its deploys went to (a skip scan of the stage index), in the order
-- they were first deployed to, production by name.
seen(ref, stage) as (
    select a.ref, (
        select d.stage from deployment_deploys d
        where d.component_ref = a.ref order by d.stage limit 1
    ) from asked a where a.stages is null
  union all
    select s.ref, (
        select d.stage from deployment_deploys d
        where d.component_ref = s.ref and d.stage > s.stage order by d.stage limit 1
    ) from seen s where s.stage is not null
),
stages as (
    select ref, stage, production, lag(stage) over (partition by ref order by position) as previous
    from (
        select ref, stage, position, production from listed
      union all
        select s.ref, s.stage, extract(epoch from (
            select min(d.started_at) from deployment_deploys d
            where d.component_ref = s.ref and d.stage = s.stage
        ))::float8, s.stage = any($3::text[])
        from seen s where s.stage is not null
    ) found
),
latest as (
    select s.ref, s.stage, s.production, s.previous, l.state, l.started_at, l.finished_at,
        l.message, l.release_id, l.version, l.release_created
    from stages s
    left join lateral (
        select d.state, d.started_at, d.finished_at, d.message, d.release_id, r.version,
            r.created_at as release_created
        from deployment_deploys d join deployment_releases r on r.id = d.release_id
        where d.component_ref = s.ref and d.stage = s.stage
        order by d.started_at desc, d.id desc limit 1
    ) l on true
),
-- Into a production stage: releases that passed the stage before, newer than what runs there
-- and than a release being deployed or failed there (that one is said as failed or stuck).
waiting as (
    select l.ref, l.stage, l.previous, cur.version as running, w.version, w.since, w.releases
    from latest l
    left join lateral (
        select r.version, r.created_at
        from deployment_deploys d join deployment_releases r on r.id = d.release_id
        where d.component_ref = l.ref and d.stage = l.stage and d.state = 'succeeded'
        order by d.started_at desc, d.id desc limit 1
    ) cur on true
    cross join lateral (
        select (array_agg(p.version order by p.created_at desc, p.id desc))[1] as version,
            min(p.passed) as since, count(distinct p.id) as releases
        from (
            select r.id, r.version, r.created_at, coalesce(d.finished_at, d.started_at) as passed
            from deployment_deploys d join deployment_releases r on r.id = d.release_id
            where d.component_ref = l.ref and d.stage = l.previous and d.state = 'succeeded'
              and d.started_at > coalesce(cur.created_at, '-infinity')
              and r.created_at > greatest(
                  coalesce(cur.created_at, '-infinity'),
                  case when l.state in ('failed', 'pending', 'in_progress')
                      then l.release_created end)
            order by d.started_at desc, d.id desc limit {MAX_WAITING * 5}
        ) p
    ) w
    where l.production and l.previous is not null and w.releases > 0
)
select 'failed' as what, ref, stage, production, state, version, message,
    coalesce(finished_at, started_at) as since, null as previous, null as running, 0 as releases
from latest where state = 'failed'
union all
select 'stuck', d.component_ref, d.stage, d.production, d.state, r.version, d.message,
    d.started_at, null, null, 0
from deployment_deploys d join deployment_releases r on r.id = d.release_id
where d.state in ('pending', 'in_progress') and d.component_ref = any($1::text[])
  and d.started_at < now() - make_interval(secs => $4)
union all
select 'waiting', ref, stage, true, null, version, null, since, previous, running,
    releases::int
from waiting
"""


async def deploy_attention(context: Context, refs: Sequence[str]) -> list[AttentionItem]:
    deployments: Deployments | None = context.extras.get(PLUGIN_ID)
    components = [ref for ref in refs if ref.startswith("component:")]
    if deployments is None or not components:
        return []
    settings = deployments.settings
    # The request's entities are loaded already: no statement here.
    found = await asyncio.gather(*(entity(context, ref) for ref in components))
    rows = await context.db.fetch(
        ATTENTION,
        components,
        [_declared(component) for component in found],
        settings.deployments_production_stages,
        settings.deployments_progress_deadline / 2,
    )
    now = datetime.now(UTC)
    return [_item(row, now) for row in rows]


def _declared(found: Any) -> str | None:
    """A component's stages as its YAML declares them, for the statement (None: it declares
    none, or a pipeline its page already reports as unusable)."""
    if found is None:
        return None
    try:
        pipeline = declared(found.spec, found.annotations)
    except PipelineError:
        return None
    if pipeline is None:
        return None
    return orjson.dumps([stage.to_json() for stage in pipeline.stages]).decode()


def _item(row: Any, now: datetime) -> AttentionItem:
    ref, stage, version = row["ref"], row["stage"], row["version"]
    href = entity_href(ref, "deployments")
    if row["what"] == "failed":
        return AttentionItem(
            ref,
            AttentionLevel.CRITICAL if row["production"] else AttentionLevel.WARNING,
            f"Deploy of {version} to {stage} failed",
            detail=row["message"],
            since=row["since"],
            href=href,
        )
    if row["what"] == "stuck":
        state = "pending" if row["state"] == "pending" else "in progress"
        return AttentionItem(
            ref,
            AttentionLevel.WARNING,
            f"Deploy of {version} to {stage} is stuck",
            detail=f"{state.capitalize()} for {_duration(now - row['since'])}"
            + (f": {row['message']}" if row["message"] else ""),
            since=row["since"],
            href=href,
        )
    running = f"{stage} runs {row['running']}" if row["running"] else f"nothing runs in {stage}"
    count = row["releases"]
    detail = (
        f"It passed {row['previous']}; {running}."
        if count == 1
        else f"{count} releases passed {row['previous']} and wait; {running}."
    )
    return AttentionItem(
        ref,
        AttentionLevel.NOTICE,
        f"{version} waits for {stage}",
        detail=detail,
        since=row["since"],
        href=href,
    )


def _duration(elapsed: timedelta) -> str:
    minutes = max(1, int(elapsed.total_seconds() // 60))
    if minutes < 120:
        return f"{minutes} minute{'s' if minutes != 1 else ''}"
    return f"{minutes // 60} hours"
