-- atrium: online
-- What a rollback deploys (rollbackTo, rollbackStage): a stage's newest successful deploys in
-- the order they finished, read from the front of this index. Without it the stage's every
-- successful deploy was read and sorted (44,085 rows, 43 ms for each stage of a component with
-- 141,257 deploys). Built concurrently: webhooks write on while it is built.
create index concurrently if not exists deployment_deploys_succeeded
    on deployment_deploys (component_ref, stage, finished_at desc nulls last, id desc)
    where state = 'succeeded';
