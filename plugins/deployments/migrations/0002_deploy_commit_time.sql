-- DORA figures from the deploys' index alone: each deploy carries its release's commit time
-- (filled by a trigger unless the writer gives it; a release learning its commit time later
-- passes it on), and the production index covers what the figures read.
alter table deployment_deploys add column commit_time timestamptz;

update deployment_deploys d set commit_time = r.commit_time
from deployment_releases r where r.id = d.release_id and r.commit_time is not null;

create function deployment_deploy_commit_time() returns trigger language plpgsql as $$
begin
    if tg_op = 'UPDATE' or new.commit_time is null then
        select commit_time into new.commit_time from deployment_releases where id = new.release_id;
    end if;
    return new;
end $$;

create trigger deployment_deploys_commit_time before insert or update of release_id
    on deployment_deploys for each row execute function deployment_deploy_commit_time();

create function deployment_release_commit_time() returns trigger language plpgsql as $$
begin
    update deployment_deploys set commit_time = new.commit_time
    where release_id = new.id and commit_time is distinct from new.commit_time;
    return null;
end $$;

create trigger deployment_releases_commit_time after update of commit_time
    on deployment_releases for each row
    when (old.commit_time is distinct from new.commit_time)
    execute function deployment_release_commit_time();

drop index deployment_deploys_production;
create index deployment_deploys_production on deployment_deploys (component_ref, finished_at)
    include (state, commit_time) where production;
