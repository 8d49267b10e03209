-- The software catalog: entities, the relations between them, and the search vocabulary.

create table entities (
    id bigint generated always as identity primary key,
    ref text not null unique,              -- kind:namespace/name, lowercase
    kind text not null,                    -- canonical spelling: Component, API, ...
    namespace text not null,
    name text not null,                    -- as written in the document
    title text,
    description text,
    spec_type text,
    lifecycle text,
    owner_ref text,                        -- lowercase ref, kept even when the owner is unknown
    system_ref text,
    tags text[] not null default '{}',
    labels jsonb not null default '{}',
    annotations jsonb not null default '{}',
    links jsonb not null default '[]',
    spec jsonb not null default '{}',
    hash text not null,                    -- of the document: an unchanged re-import writes nothing
    origin text not null,                  -- where it came from: a file, "api", "ldap"
    managed_by text not null default 'catalog',
    created_at timestamptz not null default now(),
    updated_at timestamptz not null default now(),
    search tsvector generated always as (
        setweight(to_tsvector('english', translate(name, '._-', '   ')), 'A')
        || setweight(to_tsvector('english', coalesce(title, '')), 'A')
        || setweight(array_to_tsvector(tags), 'B')
        || setweight(to_tsvector('english', coalesce(description, '')), 'C')
    ) stored
);

create index entities_name on entities (lower(name), ref);
create index entities_kind_name on entities (kind, lower(name), ref);
create index entities_owner on entities (owner_ref, kind);
create index entities_system on entities (system_ref);
create index entities_origin on entities (origin);
create index entities_tags on entities using gin (tags);
create index entities_labels on entities using gin (labels jsonb_path_ops);
create index entities_search on entities using gin (search);

-- Both directions of every relation are rows. A target need not exist yet: the row waits for it.
-- origin_ref is the entity whose document declared the relation; re-importing it replaces them.
create table relations (
    source_ref text not null,
    type text not null,
    target_ref text not null,
    origin_ref text not null,
    primary key (source_ref, type, target_ref, origin_ref)
);

create index relations_target on relations (target_ref, type);
create index relations_origin on relations (origin_ref);

-- Words of entity names and titles, with their trigrams, for typo-tolerant search: the query's
-- words are matched against this vocabulary by trigram similarity, then searched in full text.
create table search_terms (
    term text primary key,
    trigram_count smallint not null
);
create index search_terms_prefix on search_terms (term text_pattern_ops);

create table search_trigrams (
    trigram text not null,
    term text not null references search_terms (term) on delete cascade,
    primary key (trigram, term)
);

-- Facet counts per (field, kind, value), kept by statement triggers, so that facets and totals
-- over the whole catalog or one kind cost a look-up instead of a scan of every entity.
create table facet_counts (
    field text not null,
    kind text not null,
    value text not null,
    count bigint not null,
    primary key (field, kind, value)
);

create function facet_rows(
    kind text, spec_type text, owner_ref text, lifecycle text, namespace text,
    system_ref text, tags text[]
) returns table (field text, value text)
language sql immutable as $$
    select 'kind', kind
    union all select 'type', spec_type where spec_type is not null
    union all select 'owner', owner_ref where owner_ref is not null
    union all select 'lifecycle', lifecycle where lifecycle is not null
    union all select 'namespace', namespace
    union all select 'system', system_ref where system_ref is not null
    union all select 'tag', t from unnest(tags) as t
$$;

-- One trigger per event: a statement's rows arrive as a transition table. Updates add the net
-- change only, so editing a description touches no count.
create function count_inserted_facets() returns trigger language plpgsql as $$
begin
    insert into facet_counts as c (field, kind, value, count)
    select f.field, e.kind, f.value, count(*)
    from new_rows e cross join lateral facet_rows(
        e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags
    ) f
    group by 1, 2, 3
    on conflict (field, kind, value) do update set count = c.count + excluded.count;
    return null;
end
$$;

create function count_deleted_facets() returns trigger language plpgsql as $$
begin
    insert into facet_counts as c (field, kind, value, count)
    select f.field, e.kind, f.value, -count(*)
    from old_rows e cross join lateral facet_rows(
        e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags
    ) f
    group by 1, 2, 3
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

create function count_updated_facets() returns trigger language plpgsql as $$
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

create trigger entities_facets_insert after insert on entities
    referencing new table as new_rows
    for each statement execute function count_inserted_facets();
create trigger entities_facets_delete after delete on entities
    referencing old table as old_rows
    for each statement execute function count_deleted_facets();
create trigger entities_facets_update after update on entities
    referencing old table as old_rows new table as new_rows
    for each statement execute function count_updated_facets();

-- Rebuild every count from the entities, for bulk loads that run with triggers disabled.
create function recount_facets() returns void language sql as $$
    delete from facet_counts;
    insert into facet_counts (field, kind, value, count)
    select f.field, e.kind, f.value, count(*)
    from entities e cross join lateral facet_rows(
        e.kind, e.spec_type, e.owner_ref, e.lifecycle, e.namespace, e.system_ref, e.tags
    ) f
    group by 1, 2, 3;
$$;
