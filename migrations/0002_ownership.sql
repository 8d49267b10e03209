-- Ownership: directory sync runs, API tokens, and the audit log of every mutation.

create table ldap_sync_runs (
    id bigint generated always as identity primary key,
    started_at timestamptz not null default now(),
    finished_at timestamptz,
    outcome text not null default 'running',  -- running, succeeded, braked, failed
    forced boolean not null default false,
    users_read integer not null default 0,
    groups_read integer not null default 0,
    added integer not null default 0,
    changed integer not null default 0,
    removed integer not null default 0,
    skipped integer not null default 0,
    -- [{"dn": ..., "reason": ...}] for records that did not fit, and other findings (cycles)
    skipped_records jsonb not null default '[]',
    warnings jsonb not null default '[]',
    error text
);

create index ldap_sync_runs_outcome on ldap_sync_runs (outcome, finished_at desc);

create table api_tokens (
    id text primary key,                      -- public half of the token
    secret_hash text not null,                -- sha256 of the secret half
    name text not null,
    subject_ref text,                         -- the user or group the token acts as
    scopes text[] not null,                   -- read, write, admin
    created_at timestamptz not null default now(),
    last_used_at timestamptz,
    revoked_at timestamptz
);

create table audit_log (
    id bigint generated always as identity primary key,
    at timestamptz not null default now(),
    actor text not null,                      -- a user ref, "token:<name>", or "anonymous"
    action text not null,                     -- the mutation, such as catalog.deleteEntity
    target_ref text,
    outcome text not null,                    -- allowed, denied, failed
    arguments jsonb not null default '{}',
    before jsonb,
    after jsonb,
    message text
);

create index audit_log_target on audit_log (target_ref, id desc);
create index audit_log_actor on audit_log (actor, id desc);
