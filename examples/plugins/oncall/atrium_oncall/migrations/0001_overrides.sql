-- Who is on call for a component in place of its team's rotation, until when, and why.
create table oncall_overrides (
    component_ref text primary key,
    primary_ref text not null,
    until timestamptz not null,
    reason text,
    created_by text not null,
    created_at timestamptz not null default now()
);
