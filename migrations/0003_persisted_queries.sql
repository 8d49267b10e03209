-- Persisted queries: documents registered by clients (automatic persisted queries) and
-- trusted documents loaded from an Apollo persisted-query manifest.

create table persisted_queries (
    hash text primary key,                    -- SHA-256 hex of the exact document text
    body text not null,
    trusted boolean not null default false,   -- from a manifest: allowed in production
    name text,
    created_at timestamptz not null default now()
);
