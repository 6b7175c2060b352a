-- job_graph_target_state (target, state) answered "the ready jobs of a target" until
-- job_graph_ready_order (target, group_id, priority DESC, id) WHERE state = 'ready' came: every
-- query that filters by target does so for ready jobs (the claim, JobReadyExists,
-- ReadyJobOldestAge, DispatchTokenCountMissing), and the partial index serves them all, by a
-- plan checked on 100,000 jobs of four targets. Postgres still maintained it on every job_graph
-- UPDATE that could not be HOT, which is every claim, report and release (state is indexed).

-- +goose Up
DROP INDEX job_graph_target_state;

-- +goose Down
CREATE INDEX job_graph_target_state ON job_graph (target, state);
