-- How many deploys each component has, by stage and state, kept by statement-level triggers:
-- a component's deploys counted (totalCount, filtered or not by stage and state) is a sum of a
-- few rows, where count(*) read every deploy it has (a busy component's hundreds of thousands).
-- One statement of inserts, updates or deletes adjusts each (component, stage, state) it
-- touched once, from its transition tables, in key order (two writers lock the rows they share
-- in the same order). Filled from the deploys in this migration's transaction: writes to the
-- deploys wait for it (seconds at ten million rows); reads go on.
create table deployment_deploy_counts (
    component_ref text not null,
    stage text not null,
    state text not null,
    deploys bigint not null,
    primary key (component_ref, stage, state)
);

create function deployment_deploy_counts() returns trigger language plpgsql as $$
begin
    if tg_op = 'INSERT' then
        insert into deployment_deploy_counts as c (component_ref, stage, state, deploys)
        select component_ref, stage, state, count(*) from new_deploys
        group by component_ref, stage, state order by component_ref, stage, state
        on conflict (component_ref, stage, state) do update set deploys = c.deploys + excluded.deploys;
    elsif tg_op = 'DELETE' then
        insert into deployment_deploy_counts as c (component_ref, stage, state, deploys)
        select component_ref, stage, state, -count(*) from old_deploys
        group by component_ref, stage, state order by component_ref, stage, state
        on conflict (component_ref, stage, state) do update set deploys = c.deploys + excluded.deploys;
    else
        insert into deployment_deploy_counts as c (component_ref, stage, state, deploys)
        select component_ref, stage, state, sum(n) from (
            select component_ref, stage, state, 1 as n from new_deploys
            union all
            select component_ref, stage, state, -1 from old_deploys
        ) moved
        group by component_ref, stage, state having sum(n) <> 0
        order by component_ref, stage, state
        on conflict (component_ref, stage, state) do update set deploys = c.deploys + excluded.deploys;
    end if;
    return null;
end $$;

create trigger deployment_deploys_counted_insert after insert on deployment_deploys
    referencing new table as new_deploys
    for each statement execute function deployment_deploy_counts();
create trigger deployment_deploys_counted_update after update on deployment_deploys
    referencing old table as old_deploys new table as new_deploys
    for each statement execute function deployment_deploy_counts();
create trigger deployment_deploys_counted_delete after delete on deployment_deploys
    referencing old table as old_deploys
    for each statement execute function deployment_deploy_counts();

-- Truncate has no transition table: it empties the counts with the deploys.
create function deployment_deploy_counts_truncated() returns trigger language plpgsql as $$
begin
    truncate deployment_deploy_counts;
    return null;
end $$;

create trigger deployment_deploys_counted_truncate after truncate on deployment_deploys
    for each statement execute function deployment_deploy_counts_truncated();

insert into deployment_deploy_counts (component_ref, stage, state, deploys)
select component_ref, stage, state, count(*) from deployment_deploys
group by component_ref, stage, state;
