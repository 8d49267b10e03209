-- Entities found by an annotation (a repository's component by github.com/project-slug, say):
-- containment queries on annotations, for plugins as much as for the catalog.
create index entities_annotations on entities using gin (annotations jsonb_path_ops);
