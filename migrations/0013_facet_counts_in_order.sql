-- The facet counts' triggers update their rows in key order. Two imports at the same time that
-- share counts (an owner, a kind, a tag) otherwise locked them in whatever order their hash
-- aggregates gave, and PostgreSQL found them deadlocked; in one order, one waits for the other.
create or replace function count_inserted_facets() returns trigger language plpgsql as $$
begin
    insert into facet_counts as c (field, kind, value, count)
    select f.field, e.kind, f.value, count(*)
    from new_rows e cross join lateral facet_rows(
        e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags
    ) f
    group by 1, 2, 3
    order by 1, 2, 3
    on conflict (field, kind, value) do update set count = c.count + excluded.count;
    return null;
end
$$;

create or replace function count_deleted_facets() returns trigger language plpgsql as $$
begin
    insert into facet_counts as c (field, kind, value, count)
    select f.field, e.kind, f.value, -count(*)
    from old_rows e cross join lateral facet_rows(
        e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags
    ) f
    group by 1, 2, 3
    order by 1, 2, 3
    on conflict (field, kind, value) do update set count = c.count + excluded.count;
    -- The rows left at zero are this statement's own, locked by the insert above.
    delete from facet_counts c
    using (select distinct f.field, e.kind, f.value
           from old_rows e cross join lateral facet_rows(
               e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags
           ) f) gone
    where c.count = 0 and (c.field, c.kind, c.value) = (gone.field, gone.kind, gone.value);
    return null;
end
$$;

create or replace function count_updated_facets() returns trigger language plpgsql as $$
begin
    insert into facet_counts as c (field, kind, value, count)
    select field, kind, value, sum(d) from (
        select f.field, e.kind, f.value, 1 as d
        from new_rows e cross join lateral facet_rows(
            e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags
        ) f
        union all
        select f.field, e.kind, f.value, -1
        from old_rows e cross join lateral facet_rows(
            e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags
        ) f
    ) delta
    group by 1, 2, 3
    having sum(d) <> 0
    order by 1, 2, 3
    on conflict (field, kind, value) do update set count = c.count + excluded.count;
    delete from facet_counts c
    using (select distinct f.field, e.kind, f.value
           from old_rows e cross join lateral facet_rows(
               e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags
           ) f) gone
    where c.count = 0 and (c.field, c.kind, c.value) = (gone.field, gone.kind, gone.value);
    return null;
end
$$;
