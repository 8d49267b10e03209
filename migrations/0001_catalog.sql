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
    document jsonb not null,               -- the entity exactly as ingested
    hash text not null,                    -- of the document: a re-import that matches writes nothing
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

create table search_trigrams (
    trigram text not null,
    term text not null references search_terms (term) on delete cascade,
    primary key (trigram, term)
);
