-- The outcome of every metagraph sync, good or bad. A failed sync changes no miner (the last good
-- list stays, so batches go on while the chain is unreachable); this table is where the operator
-- sees that it failed, and which entries a partial sync skipped.

-- +goose Up
CREATE TABLE sync_events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    at          timestamptz NOT NULL DEFAULT now(),
    reason      text        NOT NULL,            -- who asked: periodic, api
    outcome     text        NOT NULL CHECK (outcome IN ('ok', 'partial', 'failed')),
    source      text        NOT NULL,            -- the source's description, never a secret
    netuid      integer,                         -- as the source reported it; null when it failed
    block       bigint,
    entries     integer     NOT NULL DEFAULT 0,  -- entries the source returned
    upserted    integer     NOT NULL DEFAULT 0,
    deactivated integer     NOT NULL DEFAULT 0,
    skipped     integer     NOT NULL DEFAULT 0,
    error       text,                            -- why the sync failed, when it did
    skipped_entries jsonb   NOT NULL DEFAULT '[]' -- [{index, uid, hotkey, reason}], bounded
);

CREATE INDEX sync_events_at ON sync_events (at DESC);

-- +goose Down
DROP TABLE sync_events;
