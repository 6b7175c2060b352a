-- Every attempt to send the weights to the chain through Pylon: the block whose neurons mapped
-- hotkeys to uids, what was sent, Pylon's answer and the outcome. A rate-limited or empty attempt
-- is recorded as skipped, with the reason.

-- +goose Up
CREATE TABLE weight_submissions (
    id            bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at            timestamptz NOT NULL DEFAULT now(),
    reason        text        NOT NULL,                -- who asked: periodic, scored
    batch_id      bigint,                              -- the batch the weights come from
    block         bigint,                              -- the neurons' block; null when unread
    block_hash    text,
    outcome       text        NOT NULL CHECK (outcome IN ('sent', 'failed', 'skipped')),
    weights       jsonb       NOT NULL DEFAULT '[]',   -- [{uid, hotkey, weight}] sent
    unregistered  integer     NOT NULL DEFAULT 0,      -- weighted hotkeys not registered at block
    pylon_status  integer,                             -- HTTP status of Pylon's answer
    pylon_answer  text,                                -- its body, bounded
    error         text                                 -- why it failed or was skipped
);

CREATE INDEX weight_submissions_sent ON weight_submissions (id DESC) WHERE outcome = 'sent';

-- +goose Down
DROP TABLE weight_submissions;
