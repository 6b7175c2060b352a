-- The statements of batch-runner, compiled by sqlc into dbsqlc (make generate). Tables: batches,
-- batch_shards, batch_jobs, batch_events in batch_runner; miner_sync.miners read-only; the
-- river_job table of this schema, read only (River's own calls write it).

-- name: MinerList :many
-- MinerList reads the miners table of miner-sync: every neuron, the tested miners and the validators alike.
SELECT hotkey, ip, port, stake, is_validator, active, serving
FROM miner_sync.miners
ORDER BY uid, hotkey;

-- name: BatchJobCountPrevious :many
-- BatchJobCountPrevious counts the jobs per miner and class of the last finished batch.
SELECT miner_hotkey, executor_class, count(*) AS jobs
FROM batch_jobs
WHERE batch_id = (SELECT max(id) FROM batches WHERE state = 'done')
GROUP BY 1, 2;

-- name: BatchList :many
-- BatchList pages through batches, newest first: before 0 starts at the newest, river_job_id 0
-- matches every batch.
SELECT sqlc.embed(b),
       (SELECT coalesce(jsonb_object_agg(c.outcome, c.n), '{}')
        FROM (SELECT j.outcome, count(*) AS n FROM batch_jobs j WHERE j.batch_id = b.id GROUP BY j.outcome) c)::jsonb AS counts
FROM batches b
WHERE (@before::bigint = 0 OR b.id < @before::bigint)
  AND (@river_job_id::bigint = 0 OR b.river_job_id = @river_job_id::bigint)
ORDER BY b.id DESC
LIMIT @max;

-- name: BatchGet :one
SELECT sqlc.embed(b),
       (SELECT coalesce(jsonb_object_agg(c.outcome, c.n), '{}')
        FROM (SELECT j.outcome, count(*) AS n FROM batch_jobs j WHERE j.batch_id = b.id GROUP BY j.outcome) c)::jsonb AS counts
FROM batches b
WHERE b.id = @id;

-- name: BatchJobList :many
SELECT job_uuid::text AS job_uuid, miner_hotkey, executor_class, generator, outcome, reason, detail, score,
       initial_sent_at, response_at, ready_at, before_send_at, after_send_at, end_at, time_took_us, time_limit_us
FROM batch_jobs
WHERE batch_id = @batch_id
ORDER BY miner_hotkey, executor_class, job_uuid;

-- name: BatchEventList :many
SELECT attempt, shard, type, subtype, description, data, at
FROM batch_events
WHERE batch_id = @batch_id
ORDER BY id;

-- name: BatchFailAbandoned :exec
-- BatchFailAbandoned fails the running batch of another job that started more than stale_after
-- ago: its process died and River gave up on its job. A sharded batch counts as abandoned only
-- once none of its unfinished shards has a River job that River may still run (the retry of a shard
-- comes only after RESCUE_AFTER).
UPDATE batches b
SET state = 'failed', error = 'abandoned: still running after ' || @stale_after::text, finished_at = clock_timestamp()
WHERE b.state = 'running' AND b.river_job_id <> @river_job_id
  AND b.started_at < clock_timestamp() - CAST(@stale_after::text AS interval)
  AND NOT EXISTS (
      SELECT 1 FROM batch_shards s JOIN river_job j ON j.id = s.river_job_id
      WHERE s.batch_id = b.id AND s.state IN ('pending', 'running')
        AND j.state IN ('available', 'pending', 'retryable', 'running', 'scheduled'));

-- name: BatchStart :one
-- BatchStart creates the batch of a run_batch job under a lease of lease_secs, or takes it over
-- again for a retried job whose batch is neither done nor sharded nor handed to another job by a
-- takeover (no row then). retried is true when the attempt taken over had ended the River job
-- for good (one of its events has a subtype of ended_subtypes): only a Retry pressed in River UI
-- delivers such a job again.
INSERT INTO batches (river_job_id, reason, lease_job_id, lease_until)
VALUES (@river_job_id, @reason, @river_job_id, clock_timestamp() + make_interval(secs => @lease_secs::float8))
ON CONFLICT (river_job_id) DO UPDATE
   SET attempt = batches.attempt + 1, state = 'running', error = NULL,
       started_at = clock_timestamp(), finished_at = NULL, lease_until = EXCLUDED.lease_until
 WHERE batches.state <> 'done' AND batches.shards = 0 AND batches.lease_job_id = EXCLUDED.lease_job_id
RETURNING id, attempt, EXISTS (
    SELECT 1 FROM batch_events e
    WHERE e.batch_id = batches.id AND e.attempt = batches.attempt - 1 AND e.shard IS NULL
      AND e.type = @ended_type::text AND e.subtype = ANY(@ended_subtypes::text[]))::bool AS retried;

-- name: BatchOfJobGet :one
-- BatchOfJobGet returns the batch of a run_batch job.
SELECT id, attempt, state, shards, lease_job_id FROM batches WHERE river_job_id = @river_job_id;

-- name: BatchTakeOverStart :one
-- BatchTakeOverStart begins the next attempt at a batch that a takeover handed to the run_batch
-- job lease_job_id, under a lease of lease_secs, or again when River retries that job; no row
-- when the batch is done or was handed to yet another job. retried is as in BatchStart.
UPDATE batches
SET attempt = attempt + 1, state = 'running', error = NULL, started_at = clock_timestamp(), finished_at = NULL,
    lease_until = clock_timestamp() + make_interval(secs => @lease_secs::float8)
WHERE batches.id = @id AND batches.lease_job_id = @lease_job_id AND batches.state <> 'done' AND batches.shards = 0
RETURNING batches.id, batches.attempt, EXISTS (
    SELECT 1 FROM batch_events e
    WHERE e.batch_id = batches.id AND e.attempt = batches.attempt - 1 AND e.shard IS NULL
      AND e.type = @ended_type::text AND e.subtype = ANY(@ended_subtypes::text[]))::bool AS retried;

-- name: BatchOwnerGet :one
-- BatchOwnerGet returns a batch's attempt, state and the River job holding its lease.
SELECT id, attempt, state, shards, lease_job_id FROM batches WHERE id = @id;

-- name: BatchLeaseRenew :execrows
-- BatchLeaseRenew extends the lease of a running attempt; no row once the attempt lost it.
UPDATE batches SET lease_until = clock_timestamp() + make_interval(secs => @lease_secs::float8)
WHERE id = @id AND attempt = @attempt AND lease_job_id = @lease_job_id AND state = 'running';

-- name: BatchLeaseExpiredList :many
-- BatchLeaseExpiredList returns the running batches, worked in one process, whose lease ran out.
SELECT id, attempt, lease_job_id, lease_until::timestamptz AS lease_until, takeovers
FROM batches
WHERE state = 'running' AND shards = 0 AND lease_until < clock_timestamp()
ORDER BY id;

-- name: BatchLeaseTakeOver :execrows
-- BatchLeaseTakeOver hands a batch whose lease ran out to the run_batch job new_lease_job_id,
-- inserted first in the same transaction, with a fresh lease: guarded by the lease being the same
-- and still expired, so that of replicas sweeping at once only one takes the batch over.
UPDATE batches
SET lease_until = clock_timestamp() + make_interval(secs => @lease_secs::float8), takeovers = takeovers + 1,
    lease_job_id = @new_lease_job_id
WHERE id = @id AND attempt = @attempt AND lease_job_id = @lease_job_id AND state = 'running'
  AND lease_until < clock_timestamp();

-- name: BatchSetPlan :exec
UPDATE batches SET miners = @miners, previous_jobs = @previous_jobs, pregenerated = @pregenerated
WHERE id = @id;

-- name: BatchFinish :execrows
-- BatchFinish marks the batch of the running attempt done; no row for any other attempt, or once
-- a takeover handed the batch to another job.
UPDATE batches
SET state = 'done', finished_at = clock_timestamp(), stages = @stages,
    pregenerated_used = @pregenerated_used, extra_generated = @extra_generated,
    hot_release_at = @hot_release_at, send_spread_us = @send_spread_us
WHERE id = @id AND attempt = @attempt AND lease_job_id = @lease_job_id AND state = 'running';

-- name: BatchFail :execrows
-- BatchFail marks the batch of the running attempt failed; no row for any other attempt.
UPDATE batches SET state = 'failed', error = @error, stages = @stages, finished_at = clock_timestamp()
WHERE id = @id AND attempt = @attempt AND lease_job_id = @lease_job_id AND state = 'running';

-- name: BatchSetShards :exec
UPDATE batches SET shards = @shards WHERE id = @id;

-- name: BatchShardCreate :exec
-- BatchShardCreate creates one pending shard per size, numbered from 0, worked by the River job
-- of the same position.
INSERT INTO batch_shards (batch_id, shard, miners, river_job_id)
SELECT @batch_id::bigint, generate_series(0, cardinality(@sizes::int[]) - 1), unnest(@sizes::int[]), unnest(@river_job_ids::bigint[]);

-- name: BatchShardStart :one
-- BatchShardStart begins an attempt, under a lease of lease_secs, at a shard not finished yet of a
-- running batch, by the River job the shard is handed to (the coordinator's, or a takeover's).
UPDATE batch_shards s
SET state = 'running', attempt = s.attempt + 1,
    offer_ready_at = NULL, max_spin_us = NULL, ready_at = NULL, clock_skew_us = NULL, error = NULL,
    started_at = clock_timestamp(), finished_at = NULL,
    lease_until = clock_timestamp() + make_interval(secs => @lease_secs::float8)
FROM batches b
WHERE s.batch_id = @batch_id AND s.shard = @shard AND s.state IN ('pending', 'running')
  AND s.river_job_id = @river_job_id AND b.id = s.batch_id AND b.state = 'running'
RETURNING s.attempt;

-- name: BatchShardLeaseRenew :execrows
-- BatchShardLeaseRenew extends the lease of a shard's running attempt; no row once it lost it.
UPDATE batch_shards SET lease_until = clock_timestamp() + make_interval(secs => @lease_secs::float8)
WHERE batch_id = @batch_id AND shard = @shard AND attempt = @attempt AND river_job_id = @river_job_id AND state = 'running';

-- name: BatchShardLeaseExpiredList :many
-- BatchShardLeaseExpiredList returns the running shards of running batches whose lease ran out,
-- with the args of the River job that worked them (read only).
SELECT s.batch_id, s.shard, s.attempt, s.river_job_id::bigint AS river_job_id,
       s.lease_until::timestamptz AS lease_until, s.takeovers, j.args
FROM batch_shards s
JOIN batches b ON b.id = s.batch_id
JOIN river_job j ON j.id = s.river_job_id
WHERE s.state = 'running' AND b.state = 'running' AND s.lease_until < clock_timestamp()
ORDER BY s.batch_id, s.shard;

-- name: BatchShardLeaseTakeOver :execrows
-- BatchShardLeaseTakeOver hands a shard whose lease ran out to the run_batch_shard job
-- new_river_job_id, as BatchLeaseTakeOver does a batch.
UPDATE batch_shards
SET lease_until = clock_timestamp() + make_interval(secs => @lease_secs::float8), takeovers = takeovers + 1,
    river_job_id = @new_river_job_id
WHERE batch_id = @batch_id AND shard = @shard AND attempt = @attempt AND river_job_id = @river_job_id
  AND state = 'running' AND lease_until < clock_timestamp();

-- name: BatchShardGet :one
-- BatchShardGet returns a shard's state and attempt with its batch's state.
SELECT s.state, s.attempt, s.river_job_id, b.state AS batch_state
FROM batch_shards s JOIN batches b ON b.id = s.batch_id
WHERE s.batch_id = @batch_id AND s.shard = @shard;

-- name: ClockGet :one
SELECT clock_timestamp()::timestamptz AS now;

-- name: BatchShardSetReady :execrows
UPDATE batch_shards SET ready_at = @ready_at, clock_skew_us = @clock_skew_us
WHERE batch_id = @batch_id AND shard = @shard AND attempt = @attempt AND river_job_id = @river_job_id AND state = 'running';

-- name: BatchSendAtGet :one
-- BatchSendAtGet returns the agreed send instant (null until fixed) and the shards still
-- expected: pending or running, not ready, and part of the offer agreement.
SELECT b.send_at,
       coalesce((SELECT array_agg(s.shard ORDER BY s.shard) FROM batch_shards s
                 WHERE s.batch_id = b.id AND s.ready_at IS NULL AND s.state IN ('pending', 'running')
                   AND s.offer_ready_at IS NOT NULL), '{}')::int[] AS waiting
FROM batches b
WHERE b.id = @id;

-- name: BatchSendAtFix :execrows
-- BatchSendAtFix fixes the send instant margin_secs from now, once.
UPDATE batches SET send_at = clock_timestamp() + make_interval(secs => @margin_secs::float8)
WHERE id = @id AND send_at IS NULL;

-- name: BatchShardFinish :execrows
UPDATE batch_shards
SET state = 'done', finished_at = clock_timestamp(), stages = @stages,
    released_at = @released_at, send_spread_us = @send_spread_us, pregenerated = @pregenerated,
    pregenerated_used = @pregenerated_used, extra_generated = @extra_generated
WHERE batch_id = @batch_id AND shard = @shard AND attempt = @attempt AND river_job_id = @river_job_id AND state = 'running';

-- name: BatchShardFail :execrows
UPDATE batch_shards SET state = 'failed', error = @error, stages = @stages, finished_at = clock_timestamp()
WHERE batch_id = @batch_id AND shard = @shard AND attempt = @attempt AND river_job_id = @river_job_id AND state = 'running';

-- name: BatchShardSetOfferReady :execrows
UPDATE batch_shards SET offer_ready_at = @offer_ready_at, max_spin_us = @max_spin_us
WHERE batch_id = @batch_id AND shard = @shard AND attempt = @attempt AND river_job_id = @river_job_id AND state = 'running';

-- name: BatchOfferGet :one
-- BatchOfferGet returns the agreed stagger (null until fixed) and the shards still expected:
-- pending or running and not ready to offer.
SELECT b.offer_at, b.max_spin_us,
       coalesce((SELECT array_agg(s.shard ORDER BY s.shard) FROM batch_shards s
                 WHERE s.batch_id = b.id AND s.offer_ready_at IS NULL AND s.state IN ('pending', 'running')), '{}')::int[] AS waiting
FROM batches b
WHERE b.id = @id;

-- name: BatchOfferFix :execrows
-- BatchOfferFix fixes the stagger once: its start margin_secs from now, its spin-up the longest
-- of the shards ready to offer.
UPDATE batches
SET offer_at = clock_timestamp() + make_interval(secs => @margin_secs::float8),
    max_spin_us = (SELECT max(s.max_spin_us) FROM batch_shards s WHERE s.batch_id = @id AND s.offer_ready_at IS NOT NULL)
WHERE id = @id AND offer_at IS NULL;

-- name: BatchShardList :many
-- BatchShardList returns the shards of a batch with the agreed send instant of the batch.
SELECT s.shard, s.state, s.attempt, s.river_job_id, s.miners, s.error, s.offer_ready_at, s.max_spin_us,
       s.ready_at, s.clock_skew_us,
       s.released_at, b.send_at AS batch_send_at, s.send_spread_us,
       s.stages, s.started_at, s.finished_at
FROM batch_shards s JOIN batches b ON b.id = s.batch_id
WHERE s.batch_id = @batch_id
ORDER BY s.shard;

-- name: BatchLock :one
-- BatchLock locks the row of a batch and returns its state. FOR NO KEY UPDATE: the rows of its shards
-- already hold a key-share lock on it through their foreign keys.
SELECT state FROM batches WHERE id = @id FOR NO KEY UPDATE;

-- name: BatchShardCount :one
SELECT count(*) FILTER (WHERE state IN ('pending', 'running')) AS open,
       count(*) FILTER (WHERE state = 'done') AS done
FROM batch_shards
WHERE batch_id = @batch_id;

-- name: BatchShardStageList :many
SELECT stages FROM batch_shards WHERE batch_id = @batch_id ORDER BY shard;

-- name: BatchFailShards :exec
UPDATE batches SET state = 'failed', error = 'every shard failed', stages = @stages, finished_at = clock_timestamp()
WHERE id = @id;

-- name: BatchFinishShards :exec
-- BatchFinishShards marks a sharded batch done with the sums of its shards, and the send spread
-- over the job requests of every shard.
UPDATE batches b
SET state = 'done', finished_at = clock_timestamp(), stages = @stages,
    pregenerated = s.pregenerated, pregenerated_used = s.used, extra_generated = s.extra,
    hot_release_at = s.released, send_spread_us = j.spread
FROM (SELECT sum(pregenerated) AS pregenerated, sum(pregenerated_used) AS used,
             sum(extra_generated) AS extra, min(released_at) AS released
      FROM batch_shards WHERE batch_id = @id) s,
     (SELECT (extract(epoch FROM max(after_send_at) - min(before_send_at)) * 1e6)::bigint AS spread
      FROM batch_jobs WHERE batch_id = @id AND before_send_at IS NOT NULL AND after_send_at IS NOT NULL) j
WHERE b.id = @id;

-- name: BatchScoreTotalList :many
-- BatchScoreTotalList sums the written jobs of a batch per miner and class, as scorer takes them.
SELECT m.miner_hotkey, m.executor_class, m.tested,
       count(j.job_uuid) FILTER (WHERE j.outcome = 'completed') AS completed,
       count(j.job_uuid) FILTER (WHERE j.outcome = 'excused') AS excused,
       count(j.job_uuid) FILTER (WHERE j.outcome NOT IN ('completed', 'excused')) AS failed
FROM batch_manifests m
LEFT JOIN batch_jobs j ON j.batch_id = m.batch_id AND j.miner_hotkey = m.miner_hotkey AND j.executor_class = m.executor_class
WHERE m.batch_id = @batch_id
GROUP BY 1, 2, 3
ORDER BY 1, 2;

-- name: BatchLatestAgeGet :one
-- Seconds since the latest batch started, whatever its state (a gauge read at scrape time).
SELECT extract(epoch FROM now() - started_at)::float8 FROM (SELECT started_at FROM batches ORDER BY id DESC LIMIT 1) b;

-- name: BatchLatestFailedGet :one
-- 1 when the latest batch not in state running is in state failed, else 0 (a gauge).
SELECT (state = sqlc.arg(failed)::text)::int::float8 FROM (
    SELECT state FROM batches WHERE state <> sqlc.arg(running)::text ORDER BY id DESC LIMIT 1) b;

-- name: BatchCancelCreate :exec
-- BatchCancelCreate records that the API request request_id cancelled attempt job_attempt of the
-- River job river_job_id, which works batch batch_id; a second request for the same attempt
-- keeps the first, whose cancellation stopped it.
INSERT INTO batch_cancels (river_job_id, job_attempt, batch_id, request_id)
VALUES (@river_job_id, @job_attempt, @batch_id, @request_id)
ON CONFLICT (river_job_id, job_attempt) DO NOTHING;

-- name: BatchCancelGet :one
-- BatchCancelGet returns the API request that cancelled attempt job_attempt of a River job.
SELECT request_id FROM batch_cancels WHERE river_job_id = @river_job_id AND job_attempt = @job_attempt;
