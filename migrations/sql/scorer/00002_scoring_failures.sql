-- A score_batch job that can never be scored (inputs that fail validation, or a batch id already
-- stored with other inputs) is recorded here, in the transaction that ends its River job
-- cancelled with the same error, so the API and River UI agree that the scoring failed.

-- +goose Up
CREATE TABLE scoring_failures (
    river_job_id bigint      PRIMARY KEY,   -- the score_batch job; a redelivery records nothing new
    batch_id     bigint      NOT NULL,      -- as the job named it, even when invalid
    error        text        NOT NULL,
    failed_at    timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX scoring_failures_batch ON scoring_failures (batch_id, failed_at DESC);

-- +goose Down
DROP TABLE scoring_failures;
