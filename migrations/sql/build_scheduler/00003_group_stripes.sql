-- A group's count of unfinished jobs is split over 64 rows by job id; migration 00002 called
-- those rows shards, a word batch-runner uses for a batch split over several processes. They are
-- stripes of one counter (as in lock striping): the table and its column are renamed, with
-- their constraints.
--
-- group_stripe_count() is the number of stripes, the one place the queries take it from; a job
-- counts in stripe id % group_stripe_count(). Postgres folds the immutable SQL function into a
-- constant when it plans a query, so it costs what the literal did.

-- +goose Up
ALTER TABLE group_shards RENAME TO group_stripes;
ALTER TABLE group_stripes RENAME COLUMN shard TO stripe;
ALTER TABLE group_stripes RENAME CONSTRAINT group_shards_pkey TO group_stripes_pkey;
ALTER TABLE group_stripes RENAME CONSTRAINT group_shards_shard_check TO group_stripes_stripe_check;
ALTER TABLE group_stripes RENAME CONSTRAINT group_shards_remaining_check TO group_stripes_remaining_check;
ALTER TABLE group_stripes RENAME CONSTRAINT group_shards_group_id_fkey TO group_stripes_group_id_fkey;

CREATE FUNCTION group_stripe_count() RETURNS int LANGUAGE sql IMMUTABLE PARALLEL SAFE AS 'SELECT 64';

COMMENT ON COLUMN groups.remaining IS
    'unfinished jobs when the group was last settled, cancelled or recounted; the live count is sum(group_stripes.remaining)';

-- +goose Down
COMMENT ON COLUMN groups.remaining IS
    'unfinished jobs when the group was last settled, cancelled or recounted; the live count is sum(group_shards.remaining)';
DROP FUNCTION group_stripe_count();
ALTER TABLE group_stripes RENAME CONSTRAINT group_stripes_group_id_fkey TO group_shards_group_id_fkey;
ALTER TABLE group_stripes RENAME CONSTRAINT group_stripes_remaining_check TO group_shards_remaining_check;
ALTER TABLE group_stripes RENAME CONSTRAINT group_stripes_stripe_check TO group_shards_shard_check;
ALTER TABLE group_stripes RENAME CONSTRAINT group_stripes_pkey TO group_shards_pkey;
ALTER TABLE group_stripes RENAME COLUMN stripe TO shard;
ALTER TABLE group_stripes RENAME TO group_shards;
