-- Backstage's catalog API filters entities by keys and values of the whole entity, compared
-- without regard to case (`metadata.annotations.github.com/project-slug=Juniper/Checkout`).

-- Labels and annotations lowercased whole, keys and values: an exact containment on these
-- answers Backstage's case-insensitive comparison from an index, and `?` its existence checks.
create index entities_labels_folded on entities using gin ((lower(labels::text)::jsonb));
create index entities_annotations_folded on entities using gin ((lower(annotations::text)::jsonb));

-- The key and value pairs Backstage's search table holds for one document (its stitcher's
-- buildEntitySearch): every scalar under its dotted path from `prefix`, lists descended into
-- with the list's own path, and for each string in a list the key `path.string` with the value
-- `true`. Keys and values lowercase, `original` as written; a value over 200 characters is kept
-- as null (only its key can be matched), a key over 200 characters not at all. For the keys
-- Atrium has no column or index for (`spec.profile.email`), evaluated entity by entity.
create function catalog_search_pairs(doc jsonb, prefix text)
returns table (key text, value text, original text)
language sql immutable parallel safe as $$
    with recursive walk(path, node, listed) as (
        select prefix, doc, false
        union all
        select case when c.key is null then w.path else w.path || '.' || c.key end,
               c.value,
               c.key is null
        from walk w
        cross join lateral (
            select o.key, o.value from jsonb_each(
                case when jsonb_typeof(w.node) = 'object' then w.node end) as o
            union all
            select null, a.value from jsonb_array_elements(
                case when jsonb_typeof(w.node) = 'array' then w.node end) as a
        ) as c
    )
    select lower(path),
           case when length(node #>> '{}') <= 200 then lower(node #>> '{}') end,
           case when length(node #>> '{}') <= 200 then node #>> '{}' end
    from walk
    where jsonb_typeof(node) not in ('object', 'array') and length(path) <= 200
    union all
    select lower(path || '.' || (node #>> '{}')), 'true', 'true'
    from walk
    where listed and jsonb_typeof(node) = 'string'
      and length(path || '.' || (node #>> '{}')) <= 200
$$;
