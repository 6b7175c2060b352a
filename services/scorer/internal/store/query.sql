-- The statements of scorer, compiled by sqlc into dbsqlc (make generate).

-- name: BatchInsert :execrows
-- BatchInsert stores the row of a batch unless it is stored already (no row affected then).
INSERT INTO batches (id, started_at, peak) VALUES (@id, @started_at, @peak)
ON CONFLICT (id) DO NOTHING;

-- name: BatchInputInsert :exec
-- BatchInputInsert stores the inputs of a batch, one per position of the arrays.
INSERT INTO batch_inputs (batch_id, hotkey, executor_class, executors, completed, excused, failed)
SELECT @batch_id::bigint, unnest(@hotkeys::text[]), unnest(@executor_classes::text[]), unnest(@executors::int[]),
       unnest(@completed::int[]), unnest(@excused::int[]), unnest(@failed::int[]);

-- name: BatchGet :one
SELECT started_at, peak FROM batches WHERE id = @id;

-- name: BatchInputList :many
SELECT hotkey, executor_class, executors, completed, excused, failed
FROM batch_inputs
WHERE batch_id = @batch_id
ORDER BY hotkey, executor_class;

-- name: BatchPeakList :many
-- BatchPeakList returns the ids of the two last peak batches that started before the given
-- batch, or are it.
SELECT id FROM batches
WHERE peak AND (started_at, id) <= (@started_at::timestamptz, @id::bigint)
ORDER BY started_at DESC, id DESC
LIMIT 2;

-- name: BatchMarkScored :exec
-- BatchMarkScored records when the batch was first scored; scoring it again keeps that time.
UPDATE batches SET scored_at = coalesce(scored_at, now()) WHERE id = @id;

-- name: ClassScoreDelete :exec
DELETE FROM class_scores WHERE batch_id = @batch_id;

-- name: MinerScoreDelete :exec
DELETE FROM miner_scores WHERE batch_id = @batch_id;

-- name: ClassScoreInsert :exec
INSERT INTO class_scores (batch_id, hotkey, executor_class, class_weight, raw, normalised)
SELECT @batch_id::bigint, unnest(@hotkeys::text[]), unnest(@executor_classes::text[]), unnest(@class_weights::float8[]),
       unnest(@raws::float8[]), unnest(@normalised::float8[]);

-- name: MinerScoreInsert :exec
INSERT INTO miner_scores (batch_id, hotkey, base, dancing, non_peak, score, weight, weight_u16)
SELECT @batch_id::bigint, unnest(@hotkeys::text[]), unnest(@bases::float8[]), unnest(@dancing::float8[]),
       unnest(@non_peaks::float8[]), unnest(@scores::float8[]), unnest(@weights::float8[]), unnest(@weights_u16::int[]);

-- name: BatchScoredGet :one
SELECT started_at, peak, scored_at FROM batches WHERE id = @id AND scored_at IS NOT NULL;

-- name: MinerScoreList :many
SELECT hotkey, base, dancing, non_peak, score, weight, weight_u16
FROM miner_scores
WHERE batch_id = @batch_id
ORDER BY hotkey;

-- name: ClassScoreList :many
SELECT s.hotkey, s.executor_class, i.executors, i.completed, i.excused, i.failed, s.class_weight, s.raw, s.normalised
FROM class_scores s
JOIN batch_inputs i USING (batch_id, hotkey, executor_class)
WHERE s.batch_id = @batch_id
ORDER BY s.hotkey, s.executor_class;

-- name: BatchWeightedLatest :one
-- BatchWeightedLatest returns the latest scored batch that gives any miner a weight.
SELECT b.id, b.started_at, b.peak FROM batches b
WHERE b.scored_at IS NOT NULL
  AND EXISTS (SELECT FROM miner_scores m WHERE m.batch_id = b.id AND m.weight_u16 > 0)
ORDER BY b.started_at DESC, b.id DESC
LIMIT 1;

-- name: BatchScoredLatestClassList :many
-- BatchScoredLatestClassList returns the executor classes of the latest scored batch, each with
-- the weight it was scored with and whether any of its executors scored: why that batch gives no
-- miner a weight, when it gives none.
SELECT s.batch_id, s.executor_class, max(s.class_weight)::float8 AS class_weight, bool_or(s.raw > 0)::bool AS scored
FROM class_scores s
WHERE s.batch_id = (SELECT id FROM batches WHERE scored_at IS NOT NULL ORDER BY started_at DESC, id DESC LIMIT 1)
GROUP BY s.batch_id, s.executor_class
ORDER BY s.executor_class;

-- name: MinerWeightList :many
SELECT hotkey, weight, weight_u16 FROM miner_scores
WHERE batch_id = @batch_id AND weight > 0
ORDER BY hotkey;

-- name: FailureInsert :execrows
-- FailureInsert records that a score_batch job was not scored; a redelivery adds nothing (no
-- row).
INSERT INTO scoring_failures (river_job_id, batch_id, error) VALUES (@river_job_id, @batch_id, @error)
ON CONFLICT (river_job_id) DO NOTHING;

-- name: ScoringOutcomeGet :one
-- ScoringOutcomeGet says whether a batch is scored, and whether a score_batch job recorded a
-- failure.
SELECT EXISTS (SELECT FROM batches WHERE id = @batch_id AND scored_at IS NOT NULL)::bool AS scored,
       EXISTS (SELECT FROM scoring_failures WHERE river_job_id = @river_job_id)::bool AS failed;

-- name: FailureLatestGet :one
-- FailureLatestGet returns why the latest attempt to score a batch failed.
SELECT error FROM scoring_failures WHERE batch_id = @batch_id ORDER BY failed_at DESC LIMIT 1;

-- name: SignerTryLock :one
-- SignerTryLock takes the weight signer's advisory lock until the transaction ends; false when
-- another transaction holds it.
SELECT pg_try_advisory_xact_lock(@key::bigint);

-- name: SubmissionInsert :one
INSERT INTO weight_submissions (reason, batch_id, block, block_hash, outcome, weights, unregistered, pylon_status, pylon_answer, error, via, extrinsic_hash, extrinsic)
VALUES (@reason, @batch_id, @block, @block_hash, @outcome, @weights, @unregistered, @pylon_status, @pylon_answer, @error, @via, @extrinsic_hash, @extrinsic)
RETURNING id;

-- name: SubmissionLastSentBlock :one
-- SubmissionLastSentBlock returns the block of the latest weights sent, 0 when none was.
SELECT coalesce((SELECT block FROM weight_submissions WHERE outcome = 'sent' ORDER BY id DESC LIMIT 1), 0)::bigint;

-- name: SubmissionList :many
-- SubmissionList returns attempts newest first, older than before (every attempt when 0).
SELECT id, at, reason, batch_id, block, block_hash, outcome, weights, unregistered, pylon_status, pylon_answer, error, confirmed_block, via, extrinsic_hash, extrinsic
FROM weight_submissions
WHERE (@before::bigint = 0 OR id < @before::bigint)
ORDER BY id DESC
LIMIT @max;

-- name: SubmissionConfirm :execrows
-- SubmissionConfirm marks the weights sent at or before the validator's last_update as on chain.
UPDATE weight_submissions SET confirmed_block = @last_update::bigint
WHERE outcome = 'sent' AND confirmed_block IS NULL AND block <= @last_update::bigint;

-- name: BatchWeightsAgeGet :one
-- Seconds since the batch whose weights are the latest was scored, read newest first by the
-- index on started_at (a gauge read at scrape time).
SELECT extract(epoch FROM now() - b.scored_at)::float8 FROM batches b
WHERE b.scored_at IS NOT NULL AND EXISTS (SELECT FROM miner_scores m WHERE m.batch_id = b.id AND m.weight_u16 > 0)
ORDER BY b.started_at DESC, b.id DESC LIMIT 1;

-- name: WeightSubmissionSentAgeGet :one
-- Seconds since Pylon last accepted the weights (a gauge). The outcome is written out, not a
-- parameter, because it is the predicate of the partial index weight_submissions_sent, which a
-- generic plan for a parameter could not use.
SELECT extract(epoch FROM now() - at)::float8 FROM weight_submissions WHERE outcome = 'sent' ORDER BY id DESC LIMIT 1;
