-- Who cancelled a running batch through the API. POST /v1/batches/{id}/cancel writes a row per
-- River job it cancels, keyed by the job and the attempt it was running, in the transaction that
-- cancels the job (River's JobCancelTx). River's cancellation looks the same to a worker whichever
-- caller asked (the API, or River UI's Cancel, which calls the same JobCancel), so the worker
-- whose context was cancelled reads this row to say who stopped it: the API and its request, or,
-- with no row for its attempt, River UI.

-- +goose Up
CREATE TABLE batch_cancels (
    river_job_id bigint      NOT NULL,
    job_attempt  int         NOT NULL,
    batch_id     bigint      NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    request_id   text        NOT NULL,
    requested_at timestamptz NOT NULL DEFAULT clock_timestamp(),
    PRIMARY KEY (river_job_id, job_attempt)
);

CREATE INDEX batch_cancels_batch ON batch_cancels (batch_id);

-- +goose Down
DROP TABLE batch_cancels;
