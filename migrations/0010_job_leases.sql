-- Scheduled jobs (the directory sync, the deployments' rollout checks, ...) run once per
-- interval across replicas, not once per replica: before each run a replica claims the job's
-- row, which succeeds for one replica while the last claim is recent (sources/jobs.py).
create table job_leases (
    job text primary key,                     -- the job's id, <plugin>.<name>
    claimed_at timestamptz not null,          -- the last run's start, by the database's clock
    claimed_by text not null,                 -- host:pid of the replica that ran it
    runs bigint not null default 1            -- runs since the row was created, all replicas
);
