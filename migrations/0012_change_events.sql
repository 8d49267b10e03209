-- Change events: webhooks admins register (change_hooks), and the outbox (change_deliveries):
-- one row per hook for every committed change to an entity, written by triggers on entities
-- in the transaction of the change, whoever made it (an import, the directory sync, a
-- mutation), and deleted once the hook's receiver took it (sources/changes/).

create table change_hooks (
    id bigint generated always as identity primary key,
    url text not null,
    -- Needed in clear to sign deliveries: sealed with AES-256-GCM under a key derived from
    -- ATRIUM_CHANGE_HOOKS_KEY, bound to the URL (sources/changes/secrets.py); as given when
    -- no key is set, which production refuses.
    secret bytea not null,
    secret_sealed boolean not null,
    kinds text[],                              -- entity kinds as the model spells them; null: all
    paused boolean not null default false,     -- deliveries wait, and go out on resume
    created_by text not null,
    created_at timestamptz not null default now(),
    -- Consecutive claims of which nothing was taken: while there are any, the receiver is
    -- probed with one delivery at retry_at instead of being sent the backlog.
    failures integer not null default 0,
    retry_at timestamptz,
    last_delivered_at timestamptz,
    last_error text,
    last_error_at timestamptz
);

create table change_deliveries (
    -- Ascending in commit order for any one ref: a later change waits for the row lock the
    -- earlier one's transaction held on the entity, so it is written after that one committed.
    id bigint generated always as identity primary key,
    hook_id bigint not null references change_hooks (id) on delete cascade,
    event_id uuid not null,                    -- the payload's id, shared by every hook
    delivery_id uuid not null default gen_random_uuid(),  -- X-Atrium-Delivery, kept by retries
    type text not null,
    ref text not null,
    occurred_at timestamptz not null,
    entity jsonb,                              -- null for entity.deleted
    previous jsonb,                            -- null for entity.created
    state text not null default 'pending',     -- pending, or failed: given up, to re-deliver
    attempts integer not null default 0,
    retry_from timestamptz not null default now(),  -- retries stop retry_for after this
    next_attempt_at timestamptz not null default now(),
    claim uuid,                                -- the claim of the replica delivering it
    claimed_until timestamptz,                 -- after this another replica may claim it
    last_error text
);

-- The head of each (hook, ref): only it may be delivered.
create index change_deliveries_order on change_deliveries (hook_id, ref, id);
create index change_deliveries_pending on change_deliveries (hook_id, id) where state = 'pending';

-- An entity as Backstage's JSON shape holds it (graph/catalog_api/shape.py), without the
-- relations and etag: apiVersion, kind, metadata (empty fields left out, uid as
-- sources/catalog/uids.py spells the row id), spec.
create function change_document(
    row_id bigint, kind text, namespace text, name text, title text, description text,
    labels jsonb, annotations jsonb, tags text[], links jsonb, spec jsonb
) returns jsonb language sql immutable parallel safe as $$
    select jsonb_build_object(
        'apiVersion', 'backstage.io/v1alpha1',
        'kind', kind,
        'metadata', jsonb_build_object('namespace', namespace, 'name', name)
            || case when nullif(title, '') is null then '{}'
                    else jsonb_build_object('title', title) end
            || case when nullif(description, '') is null then '{}'
                    else jsonb_build_object('description', description) end
            || case when labels = '{}' then '{}' else jsonb_build_object('labels', labels) end
            || case when annotations = '{}' then '{}'
                    else jsonb_build_object('annotations', annotations) end
            || case when tags = '{}' then '{}' else jsonb_build_object('tags', tags) end
            || case when links = '[]' then '{}' else jsonb_build_object('links', links) end
            || jsonb_build_object('uid', (
                '61747269756d8000' || to_hex(8 | (row_id >> 60))
                || lpad(to_hex(row_id & 1152921504606846975), 15, '0'))::uuid),
        'spec', spec)
$$;

-- What makes an update a membership change: a user's groups, a group's members and nesting.
create function change_membership(kind text, spec jsonb) returns jsonb
language sql immutable parallel safe as $$
    select case
        when kind = 'User' then jsonb_build_array(spec -> 'memberOf')
        when kind = 'Group' then
            jsonb_build_array(spec -> 'members', spec -> 'children', spec -> 'parent')
    end
$$;

-- One statement per writing statement, whatever its size; nothing at all while no hook is
-- registered. An update that leaves the document and its owner as they were (a re-import
-- rewriting a field whose placeholder failed again) is no change.
create function record_entity_changes() returns trigger language plpgsql as $$
begin
    if not exists (select 1 from change_hooks) then
        return null;
    end if;
    if tg_op = 'INSERT' then
        with changes as materialized (
            select gen_random_uuid() as event_id, n.ref, n.kind,
                   change_document(n.id, n.kind, n.namespace, n.name, n.title, n.description,
                                   n.labels, n.annotations, n.tags, n.links, n.spec) as entity
            from new_rows n
        )
        insert into change_deliveries (hook_id, event_id, type, ref, occurred_at, entity)
        select h.id, c.event_id, 'entity.created', c.ref, statement_timestamp(), c.entity
        from changes c join change_hooks h on h.kinds is null or c.kind = any(h.kinds)
        order by c.ref, h.id;
    elsif tg_op = 'UPDATE' then
        with documents as (
            select n.ref, n.kind,
                   n.owner_ref is distinct from o.owner_ref as owner_changed,
                   change_membership(n.kind, n.spec)
                       is distinct from change_membership(o.kind, o.spec) as members_changed,
                   change_document(n.id, n.kind, n.namespace, n.name, n.title, n.description,
                                   n.labels, n.annotations, n.tags, n.links, n.spec) as entity,
                   change_document(o.id, o.kind, o.namespace, o.name, o.title, o.description,
                                   o.labels, o.annotations, o.tags, o.links, o.spec) as previous
            from new_rows n join old_rows o on o.id = n.id
        ), changes as materialized (
            select gen_random_uuid() as event_id, d.* from documents d
            where d.entity is distinct from d.previous or d.owner_changed
        )
        insert into change_deliveries (
            hook_id, event_id, type, ref, occurred_at, entity, previous
        )
        select h.id, c.event_id,
               case when c.owner_changed then 'ownership.changed'
                    when c.members_changed then 'membership.changed'
                    else 'entity.updated' end,
               c.ref, statement_timestamp(), c.entity, c.previous
        from changes c join change_hooks h on h.kinds is null or c.kind = any(h.kinds)
        order by c.ref, h.id;
    else
        with changes as materialized (
            select gen_random_uuid() as event_id, o.ref, o.kind,
                   change_document(o.id, o.kind, o.namespace, o.name, o.title, o.description,
                                   o.labels, o.annotations, o.tags, o.links, o.spec) as previous
            from old_rows o
        )
        insert into change_deliveries (hook_id, event_id, type, ref, occurred_at, previous)
        select h.id, c.event_id, 'entity.deleted', c.ref, statement_timestamp(), c.previous
        from changes c join change_hooks h on h.kinds is null or c.kind = any(h.kinds)
        order by c.ref, h.id;
    end if;
    return null;
end
$$;

create trigger entities_changes_insert after insert on entities
    referencing new table as new_rows
    for each statement execute function record_entity_changes();
create trigger entities_changes_update after update on entities
    referencing old table as old_rows new table as new_rows
    for each statement execute function record_entity_changes();
create trigger entities_changes_delete after delete on entities
    referencing old table as old_rows
    for each statement execute function record_entity_changes();
