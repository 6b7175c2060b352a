-- Leases on running batches and shards. The process working a batch (or a shard) renews
-- lease_until every few seconds; a replica that finds a lease run out hands the batch to a new
-- River job (lease_job_id for a batch, river_job_id for a shard) in the same transaction, and
-- every write of an attempt is guarded by its job still holding the lease. So a batch whose
-- process died is taken over within the lease and the sweep interval, not after its River job's
-- timeout, and the dead attempt, if it was only cut off, can no longer write anything.

-- +goose Up
-- lease_job_id is the River job working the batch now: its run_batch job (river_job_id) until a
-- takeover. takeovers counts the leases that ran out.
ALTER TABLE batches
    ADD COLUMN lease_job_id bigint,
    ADD COLUMN lease_until  timestamptz,
    ADD COLUMN takeovers    int NOT NULL DEFAULT 0;
UPDATE batches SET lease_job_id = river_job_id;
ALTER TABLE batches ALTER COLUMN lease_job_id SET NOT NULL;

ALTER TABLE batch_shards
    ADD COLUMN lease_until timestamptz,
    ADD COLUMN takeovers   int NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE batch_shards DROP COLUMN takeovers, DROP COLUMN lease_until;
ALTER TABLE batches DROP COLUMN takeovers, DROP COLUMN lease_until, DROP COLUMN lease_job_id;
