-- Fields of an entity whose placeholder ($text, $json, $yaml) could not be read at its last
-- import: field path → why. The entity is kept with the field left empty; the next import
-- tries again.

alter table entities add column unavailable jsonb not null default '{}';
