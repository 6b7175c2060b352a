-- schedule_jobs no longer writes a River job per key: it writes the scheduled jobs and one
-- populate_feed job, and the feeder enqueues the keys' populate_make jobs a chunk at a time,
-- keeping a bounded number waiting in River. enqueued says whether a scheduled key's make job has
-- been enqueued: false from schedule_jobs (new or forced back) until the feeder's chunk that
-- enqueues it commits. Rows that exist before this migration had theirs enqueued by the old
-- schedule_jobs, hence the default.

-- +goose Up
ALTER TABLE jobs ADD COLUMN enqueued boolean NOT NULL DEFAULT true;

-- The keys the feeder still has to enqueue, in the order they were written (entries of one
-- table_name are kept in heap order and deduplicated): appending a million costs little, and the
-- index is empty once the feeder has caught up.
CREATE INDEX jobs_to_enqueue ON jobs (table_name) WHERE status = 'scheduled' AND NOT enqueued;

-- +goose Down
DROP INDEX jobs_to_enqueue;
ALTER TABLE jobs DROP COLUMN enqueued;
