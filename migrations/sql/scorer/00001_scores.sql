-- Scorer's tables. A batch's inputs arrive in a score_batch job (scorer never reads batch-runner's
-- tables); they are kept because the dancing and non-peak rules compare a batch with earlier peak
-- batches. Every row is keyed by the batch id, so scoring a batch again rewrites the same rows.

-- +goose Up
CREATE TABLE batches (
    id          bigint PRIMARY KEY,              -- batch-runner's batch id
    started_at  timestamptz NOT NULL,
    peak        boolean     NOT NULL,
    received_at timestamptz NOT NULL DEFAULT now(),
    scored_at   timestamptz                      -- first time it was scored
);

CREATE INDEX batches_peak_started ON batches (started_at DESC, id DESC) WHERE peak;
CREATE INDEX batches_started ON batches (started_at DESC, id DESC);

-- batch_inputs is one miner's executors of one class in a batch, as batch-runner reported them.
CREATE TABLE batch_inputs (
    batch_id       bigint  NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    hotkey         text    NOT NULL,
    executor_class text    NOT NULL,
    executors      integer NOT NULL CHECK (executors >= 0),
    completed      integer NOT NULL CHECK (completed >= 0),
    excused        integer NOT NULL CHECK (excused >= 0),
    failed         integer NOT NULL CHECK (failed >= 0),
    PRIMARY KEY (batch_id, hotkey, executor_class)
);

-- class_scores is a miner's score in one executor class: raw (Σ job scores or horde_score) and
-- normalised within the class (w_c · raw / Σ raw).
CREATE TABLE class_scores (
    batch_id       bigint           NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    hotkey         text             NOT NULL,
    executor_class text             NOT NULL,
    class_weight   double precision NOT NULL,
    raw            double precision NOT NULL,
    normalised     double precision NOT NULL,
    PRIMARY KEY (batch_id, hotkey, executor_class)
);

-- miner_scores is a miner's score in a batch: the sum over classes, the multipliers applied, and
-- the weight it gets (score / Σ scores, and the same as u16 integers summing to 65535).
CREATE TABLE miner_scores (
    batch_id   bigint           NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    hotkey     text             NOT NULL,
    base       double precision NOT NULL,
    dancing    double precision NOT NULL,  -- multiplier: 1, or the dancing bonus
    non_peak   double precision NOT NULL,  -- multiplier: 1, or the non-peak penalty
    score      double precision NOT NULL,
    weight     double precision NOT NULL,
    weight_u16 integer          NOT NULL CHECK (weight_u16 BETWEEN 0 AND 65535),
    PRIMARY KEY (batch_id, hotkey)
);

-- +goose Down
DROP TABLE miner_scores;
DROP TABLE class_scores;
DROP TABLE batch_inputs;
DROP TABLE batches;
