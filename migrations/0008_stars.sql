-- Entities people starred. A star outlives its entity (a deleted entity imported again is
-- starred again); lists leave out stars of entities that do not exist.
create table stars (
    user_ref text not null,                   -- the person: the viewer's ref
    entity_ref text not null,
    starred_at timestamptz not null default now(),
    primary key (user_ref, entity_ref)
);

-- A person's stars, newest first.
create index stars_newest on stars (user_ref, starred_at desc, entity_ref);
