-- Deployments: pipelines, releases, deploys, and every webhook delivery as it arrived.

-- Pipelines set through the API; one declared in catalog-info.yaml (spec.pipeline) wins.
create table deployment_pipelines (
    component_ref text primary key,
    stages jsonb not null,              -- [{"name": ..., "pinApp": {cluster, namespace, name}}]
    updated_by text,
    updated_at timestamptz not null default now()
);

create table deployment_releases (
    id bigint generated always as identity primary key,
    component_ref text not null,
    version text not null,
    commit_sha text,
    commit_time timestamptz,
    artifact text,                      -- image reference, with its digest when known
    created_by text,
    created_at timestamptz not null default now(),
    build_url text,
    unique (component_ref, version)
);

create index deployment_releases_newest on deployment_releases (component_ref, created_at desc, id desc);

create table deployment_deploys (
    id bigint generated always as identity primary key,
    component_ref text not null,
    stage text not null,
    production boolean not null,        -- the pipeline's production stage, when it was made
    release_id bigint not null references deployment_releases (id),
    state text not null check (
        state in ('pending', 'in_progress', 'succeeded', 'failed', 'rolled_back', 'cancelled')
    ),
    actor text,
    started_at timestamptz not null,
    finished_at timestamptz,
    updated_at timestamptz not null default now(),
    source text not null,               -- github, webhook (another CD system), atrium
    external_id text not null,          -- the source's id of the deploy
    url text,
    is_rollback boolean not null default false,
    message text,                       -- why it failed, when Atrium knows
    rollout jsonb,                      -- a PinApp rollout Atrium follows (the workloads service's)
    deadline timestamptz,
    unique (source, external_id)
);

create index deployment_deploys_newest on deployment_deploys (component_ref, started_at desc, id desc);
create index deployment_deploys_stage on deployment_deploys (component_ref, stage, started_at desc, id desc);
create index deployment_deploys_production on deployment_deploys (component_ref, finished_at)
    where production;
create index deployment_deploys_started on deployment_deploys (started_at);
create index deployment_deploys_in_flight on deployment_deploys (id)
    where state in ('pending', 'in_progress');

-- Every accepted delivery, raw, for audit and reprocessing. One whose component is not in the
-- catalog yet waits here (attached_at null) and is applied when the component appears.
create table deployment_events (
    id bigint generated always as identity primary key,
    source text not null,
    delivery text not null,
    event text not null,
    received_at timestamptz not null default now(),
    body text not null,
    subject text,                       -- what names the component: a repository, a ref
    component_ref text,
    deploy_id bigint,
    attached_at timestamptz,
    outcome text,                       -- what applying it did, or why it was set aside
    unique (source, delivery)
);

create index deployment_events_waiting on deployment_events (id) where attached_at is null;
