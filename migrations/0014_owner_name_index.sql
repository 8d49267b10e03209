-- atrium: online
-- A team's entities of one kind in name order, the console's list of what a team owns, read as
-- a range of one index: with only (kind, name) to read from, a page of a team's components
-- read every component in name order until it had found a page of the team's (1,854 rows for
-- a page of 51 of 15,983 among 603,200 components; for a team with few, nearly all of them).
-- The index holds the ref too, so it answers what the owner index did (the refs a team owns,
-- from the index alone, for entitiesOwnedBy and a team's DORA figures), and replaces it.
-- Built concurrently: imports and syncs write on while it is built.
create index concurrently if not exists entities_owner_name
    on entities (owner_ref, kind, lower(name), ref);
drop index concurrently if exists entities_owner;
