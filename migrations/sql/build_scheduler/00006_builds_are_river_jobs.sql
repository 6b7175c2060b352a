-- A build is a River job: each attempt at a job is one build_run River job whose args name the
-- group, the job and the attempt, and River's own fetch hands it to a worker. What kept dispatch
-- tokens and builds apart goes: the lease (a dead worker's builds are given back by the liveness
-- sweep), the claim's index, and the (group_id, state) index, which made no job_graph UPDATE HOT
-- (every transition changes state); queries by group use the (group_id, name) unique index.
--
-- fetch_rank is a job's place in its group's fetch order (highest priority first, then lowest
-- id), from 0: with the group id it makes the River job's scheduled_at, so River's fetch order
-- (priority, scheduled_at, id) is the scheduler's (oldest group, priority, id). Jobs of groups
-- submitted before this migration get theirs here.
--
-- Jobs that were ready or running when this migration ran go back to pending: the scheduler's
-- reaper gives each its River job, as a new attempt, within a pass (docs/build-groups.md,
-- "Upgrading"). The dispatch tokens of the earlier release still queued end cancelled, naming
-- no build.

-- +goose Up
ALTER TABLE job_graph ADD COLUMN fetch_rank int NOT NULL DEFAULT 0 CHECK (fetch_rank >= 0);

UPDATE job_graph j SET fetch_rank = r.rank
FROM (SELECT id, (row_number() OVER (PARTITION BY group_id ORDER BY priority DESC, id) - 1)::int AS rank
    FROM job_graph) r
WHERE j.id = r.id AND r.rank > 0;

DROP INDEX job_graph_ready_order;
DROP INDEX job_graph_leases;
DROP INDEX job_graph_group_state;
UPDATE job_graph SET state = 'pending', worker_id = NULL, updated_at = clock_timestamp()
WHERE state IN ('ready', 'running');

ALTER TABLE job_graph DROP COLUMN lease_token, DROP COLUMN lease_expires_at, DROP COLUMN reported;
-- Room on each page for the new version of a row, so that its updates can be HOT.
ALTER TABLE job_graph SET (fillfactor = 80);

-- +goose Down
ALTER TABLE job_graph RESET (fillfactor);
ALTER TABLE job_graph ADD COLUMN lease_token bigint, ADD COLUMN lease_expires_at timestamptz,
    ADD COLUMN reported boolean NOT NULL DEFAULT false;
CREATE INDEX job_graph_group_state ON job_graph (group_id, state);
CREATE INDEX job_graph_leases ON job_graph (lease_expires_at) WHERE state IN ('running', 'cancel_pending');
CREATE INDEX job_graph_ready_order ON job_graph (target, group_id, priority DESC, id) WHERE state = 'ready';
ALTER TABLE job_graph DROP COLUMN fetch_rank;
