-- Lists sorted by title, kind, owner, system, lifecycle or type read each page as a range of
-- an index, not by sorting everything the filter matches. A list of one kind (a table of the
-- console) reads from an index led by the kind; of several or every kind sorted by title or
-- kind, from an index on that key. Owner, system, lifecycle and type are always read kind by
-- kind and the kinds' ranges merged: some kinds never have them, and an index led by such a
-- key would make a page of those kinds read through every entity that has one
-- (sources/catalog/listing.py).
create index entities_title on entities (lower(coalesce(title, name)), ref);
create index entities_kind_title on entities (kind, lower(coalesce(title, name)), ref);
create index entities_kind_ref on entities (kind, ref);
create index entities_kind_owner on entities (kind, owner_ref, ref);
create index entities_kind_system on entities (kind, system_ref, ref);
create index entities_kind_lifecycle on entities (kind, lifecycle, ref);
create index entities_kind_type on entities (kind, spec_type, ref);
