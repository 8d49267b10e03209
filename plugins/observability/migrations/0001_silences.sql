-- Silences created through Atrium, and the entity each was made for: who may expire one is
-- who may change that entity (others' silences are for admins).
create table observability_silences (
    id text primary key,                -- Alertmanager's silence id
    entity_ref text not null,
    created_by text not null,
    created_at timestamptz not null default now()
);
