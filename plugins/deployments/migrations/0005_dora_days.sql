-- DORA figures kept ahead of time, per day (UTC), so that a team's figures over 90 days read a
-- few thousand rows whatever the history's size, where they read every production deploy of
-- every component the team owns (214,128 at ten million deploys, 350 ms).
--
-- Per component and day (deployment_dora_components), then summed per owner and day
-- (deployment_dora_owners): counts of deploys (succeeded or rolled back), failures (failed or
-- rolled back) and finished deploys, and histograms of lead times (commit to finished) and of
-- times to restore (a failure to the next successful deploy). A histogram's buckets grow by 2%
-- (bucket b >= 1 holds [1.02^(b-1), 1.02^b) seconds, bucket 0 what is under a second), so a
-- median read from it, the geometric middle of its bucket, is within 1% of the exact one.
-- A time to restore is counted on the day of the failure.
--
-- Writers never touch these tables: a statement changing production deploys, or the owner of a
-- component with deploys, queues the component (deployment_dora_queue), and the queue is applied
-- when the transaction commits (a deferred trigger): the component's days from its last success
-- before the earliest change are counted again, and what changed is added to its owner's rows;
-- when the owner changed, all of its days move from the owner they counted under
-- (deployment_dora_owned) to the new one. Components are locked (by hash, 64 advisory locks, in
-- order) before their rows are read, and each table is written by one statement in key order,
-- so two transactions committing deploys of one team neither miss each other nor deadlock.

create table deployment_dora_components (
    component_ref text not null,
    day date not null,
    measure "char" not null,        -- d deploys, x failures, f finished, l lead time, r restore
    bucket smallint not null,       -- 0 for counts
    n bigint not null,
    primary key (component_ref, day, measure, bucket)
);

create table deployment_dora_owners (
    owner_ref text not null,
    day date not null,
    measure "char" not null,
    bucket smallint not null,
    n bigint not null,
    -- n in the key's index too: a team's days are read from the index alone, in key order (the
    -- rows of one owner are written over time beside every other owner's).
    primary key (owner_ref, day, measure, bucket) include (n)
);

-- The owner each component's days count under in deployment_dora_owners (null: none).
create table deployment_dora_owned (
    component_ref text primary key,
    owner_ref text
);

-- Components to count again when the transaction that queued them commits; since: the earliest
-- production deploy that changed (null: only its owner may have changed).
create table deployment_dora_queue (
    id bigint generated always as identity primary key,
    component_ref text not null,
    since timestamptz
);

create function deployment_dora_bucket(seconds double precision) returns smallint
language sql immutable parallel safe as $$
    select case when seconds is null or seconds < 1 then 0
                else least(1 + floor(ln(seconds) / ln(1.02)), 32767)::smallint end
$$;

-- The middle of a bucket (geometric): within 1% of any value in it.
create function deployment_dora_seconds(bucket smallint) returns double precision
language sql immutable parallel safe as $$
    select case when bucket = 0 then 0 else power(1.02::double precision, bucket - 0.5) end
$$;

-- The days of components from a day on (each its own; date '-infinity': all of them), counted
-- from their production deploys (the production index alone).
create function deployment_dora_days(refs text[], froms date[])
returns table (component_ref text, day date, measure "char", bucket smallint, n bigint)
language sql stable as $$
    with finished as (
        select d.component_ref, d.finished_at, d.state, d.commit_time,
               (d.finished_at at time zone 'UTC')::date as day
        from unnest(refs, froms) as c(ref, since)
        cross join lateral (
            select d.component_ref, d.finished_at, d.state, d.commit_time
            from deployment_deploys d
            where d.component_ref = c.ref and d.production
              and d.finished_at >= (c.since::timestamp at time zone 'UTC')
              and d.state in ('succeeded', 'failed', 'rolled_back')
            offset 0
        ) d
    )
    select component_ref, day, 'd'::"char", 0::smallint, count(*) from finished
    where state in ('succeeded', 'rolled_back') group by 1, 2
    union all
    select component_ref, day, 'x'::"char", 0::smallint, count(*) from finished
    where state in ('failed', 'rolled_back') group by 1, 2
    union all
    select component_ref, day, 'f'::"char", 0::smallint, count(*) from finished group by 1, 2
    union all
    select component_ref, day, 'l'::"char",
           deployment_dora_bucket(extract(epoch from finished_at - commit_time)), count(*)
    from finished where state in ('succeeded', 'rolled_back') and commit_time is not null
    group by 1, 2, 4
    union all
    select f.component_ref, f.day, 'r'::"char",
           deployment_dora_bucket(extract(epoch from next.finished_at - f.finished_at)), count(*)
    from finished f
    cross join lateral (
        select n.finished_at from deployment_deploys n
        where n.component_ref = f.component_ref and n.production and n.state = 'succeeded'
          and n.finished_at > f.finished_at
        order by n.finished_at limit 1
    ) next
    where f.state in ('failed', 'rolled_back')
    group by 1, 2, 4
$$;

-- Applies every component this transaction queued, once (the first of its deferred calls).
create function deployment_dora_apply() returns trigger language plpgsql as $$
declare
    refs text[];
    sinces timestamptz[];
    froms date[];
    lock_key integer;
begin
    if not exists (select 1 from deployment_dora_queue where id = new.id) then
        return null;
    end if;
    with queued as (delete from deployment_dora_queue returning component_ref, since)
    select array_agg(component_ref order by component_ref), array_agg(since order by component_ref)
    into refs, sinces
    from (select component_ref, min(since) as since from queued group by component_ref) q;
    for lock_key in
        select distinct hashtext(r) & 63 from unnest(refs) r order by 1
    loop
        perform pg_advisory_xact_lock(1685025377, lock_key);  -- 'dora'
    end loop;
    -- From the day of the last success before the earliest change: failures after it may be
    -- restored by what changed; a component with none counts again from its first deploy.
    select array_agg(
        case when q.since is null then 'infinity'::date
             else (least(coalesce((
                 select max(d.finished_at) from deployment_deploys d
                 where d.component_ref = q.ref and d.production and d.state = 'succeeded'
                   and d.finished_at < q.since
             ), '-infinity'), q.since) at time zone 'UTC')::date
        end order by q.ord)
    into froms
    from unnest(refs, sinces) with ordinality as q(ref, since, ord);
    with queued as (
        select * from unnest(refs, froms) as q(component_ref, since)
    ),
    fresh as (
        select * from deployment_dora_days(refs, froms)
    ),
    counted as (
        select k.component_ref, k.day, k.measure, k.bucket, k.n
        from deployment_dora_components k join queued q using (component_ref)
        where k.day >= q.since
    ),
    changed as (
        select component_ref, day, measure, bucket, sum(n)::bigint as n
        from (
            select * from fresh
            union all
            select component_ref, day, measure, bucket, -n from counted
        ) both_
        group by 1, 2, 3, 4 having sum(n) <> 0
    ),
    owners as (
        select q.component_ref, w.owner_ref as was, e.owner_ref as now, w.component_ref is null as unseen
        from queued q
        left join deployment_dora_owned w using (component_ref)
        left join entities e on e.ref = q.component_ref and e.kind = 'Component'
    ),
    moved as (
        select k.component_ref, k.day, k.measure, k.bucket, k.n, o.was, o.now
        from owners o join deployment_dora_components k using (component_ref)
        where o.was is distinct from o.now
    ),
    owner_changes as (
        select owner_ref, day, measure, bucket, sum(n)::bigint as n
        from (
            select o.now as owner_ref, c.day, c.measure, c.bucket, c.n
            from changed c join owners o using (component_ref)
            union all
            select was, day, measure, bucket, -n from moved
            union all
            select now, day, measure, bucket, n from moved
        ) all_
        where owner_ref is not null
        group by 1, 2, 3, 4 having sum(n) <> 0
    ),
    owners_written as (
        insert into deployment_dora_owners as t (owner_ref, day, measure, bucket, n)
        select * from owner_changes order by 1, 2, 3, 4
        on conflict (owner_ref, day, measure, bucket) do update set n = t.n + excluded.n
        returning 1
    ),
    owned_written as (
        insert into deployment_dora_owned as t (component_ref, owner_ref)
        select component_ref, now from owners where unseen or was is distinct from now
        order by 1
        on conflict (component_ref) do update set owner_ref = excluded.owner_ref
        returning 1
    )
    insert into deployment_dora_components as t (component_ref, day, measure, bucket, n)
    select * from changed order by 1, 2, 3, 4
    on conflict (component_ref, day, measure, bucket) do update set n = t.n + excluded.n;
    delete from deployment_dora_components k
    using unnest(refs, froms) as q(component_ref, since)
    where k.component_ref = q.component_ref and k.day >= q.since and k.n = 0;
    return null;
end $$;

create constraint trigger deployment_dora_queue_applied after insert on deployment_dora_queue
    deferrable initially deferred
    for each row execute function deployment_dora_apply();

-- A statement changing production deploys queues each component it touched once, with the
-- earliest finish among the rows it changed (before and after).
create function deployment_dora_deploys_changed() returns trigger language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        insert into deployment_dora_queue (component_ref, since)
        select component_ref, min(finished_at) from new_deploys
        where production and finished_at is not null group by component_ref;
    elsif tg_op = 'DELETE' then
        insert into deployment_dora_queue (component_ref, since)
        select component_ref, min(finished_at) from old_deploys
        where production and finished_at is not null group by component_ref;
    else
        insert into deployment_dora_queue (component_ref, since)
        select component_ref, min(finished_at) from (
            select component_ref, finished_at from old_deploys
            where production and finished_at is not null
            union all
            select component_ref, finished_at from new_deploys
            where production and finished_at is not null
        ) touched
        group by component_ref;
    end if;
    return null;
end $$;

create trigger deployment_deploys_dora_insert after insert on deployment_deploys
    referencing new table as new_deploys
    for each statement execute function deployment_dora_deploys_changed();
create trigger deployment_deploys_dora_update after update on deployment_deploys
    referencing old table as old_deploys new table as new_deploys
    for each statement execute function deployment_dora_deploys_changed();
create trigger deployment_deploys_dora_delete after delete on deployment_deploys
    referencing old table as old_deploys
    for each statement execute function deployment_dora_deploys_changed();

create function deployment_dora_deploys_truncated() returns trigger language plpgsql as $$
begin
    truncate deployment_dora_components, deployment_dora_owners, deployment_dora_owned,
        deployment_dora_queue;
    return null;
end $$;

create trigger deployment_deploys_dora_truncate after truncate on deployment_deploys
    for each statement execute function deployment_dora_deploys_truncated();

-- A component with deploys whose owner (or kind) changed, that appeared or went away: queued
-- for its days to move. Others (nearly every catalog write) queue nothing.
create function deployment_dora_entities_changed() returns trigger language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        insert into deployment_dora_queue (component_ref)
        select n.ref from new_entities n
        where exists (select 1 from deployment_dora_owned w where w.component_ref = n.ref);
    elsif tg_op = 'DELETE' then
        insert into deployment_dora_queue (component_ref)
        select o.ref from old_entities o
        where exists (select 1 from deployment_dora_owned w where w.component_ref = o.ref);
    else
        insert into deployment_dora_queue (component_ref)
        select ref from (
            select unnest(array[o.ref, n.ref]) as ref
            from old_entities o join new_entities n using (id)
            where o.owner_ref is distinct from n.owner_ref or o.kind is distinct from n.kind
               or o.ref is distinct from n.ref
        ) changed
        where exists (select 1 from deployment_dora_owned w where w.component_ref = changed.ref);
    end if;
    return null;
end $$;

create trigger entities_dora_insert after insert on entities
    referencing new table as new_entities
    for each statement execute function deployment_dora_entities_changed();
create trigger entities_dora_update after update on entities
    referencing old table as old_entities new table as new_entities
    for each statement execute function deployment_dora_entities_changed();
create trigger entities_dora_delete after delete on entities
    referencing old table as old_entities
    for each statement execute function deployment_dora_entities_changed();

-- Everything counted again from the deploys, in a few set-wide statements: this migration's
-- backfill, and a bulk load that wrote deploys with the triggers off.
create function deployment_dora_rebuild() returns void language plpgsql as $$
declare
    refs text[] := array(
        select distinct component_ref from deployment_deploys where production
    );
begin
    truncate deployment_dora_components, deployment_dora_owners, deployment_dora_owned,
        deployment_dora_queue;
    insert into deployment_dora_components (component_ref, day, measure, bucket, n)
    select * from deployment_dora_days(
        refs, array_fill('-infinity'::date, array[cardinality(refs)])
    );
    insert into deployment_dora_owned (component_ref, owner_ref)
    select c.component_ref, e.owner_ref
    from unnest(refs) as c(component_ref)
    left join entities e on e.ref = c.component_ref and e.kind = 'Component';
    insert into deployment_dora_owners (owner_ref, day, measure, bucket, n)
    select w.owner_ref, k.day, k.measure, k.bucket, sum(k.n)
    from deployment_dora_components k join deployment_dora_owned w using (component_ref)
    where w.owner_ref is not null
    group by 1, 2, 3, 4
    order by 1, 2, 3, 4;
    analyze deployment_dora_components, deployment_dora_owners, deployment_dora_owned;
end $$;

select deployment_dora_rebuild();
