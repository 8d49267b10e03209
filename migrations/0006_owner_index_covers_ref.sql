-- What a team owns, read from the index alone: the owner index carries the entity's ref, so
-- listing thousands of owned entities (entitiesOwnedBy, a team's DORA figures) reads no table
-- pages.
drop index entities_owner;
create index entities_owner on entities (owner_ref, kind) include (ref);
