-- The miners of the subnet as the last good metagraph sync saw them. batch-runner reads this
-- table (read-only, documented cross-read): it is the list a batch tests.

-- +goose Up
CREATE TABLE miners (
    hotkey       text PRIMARY KEY,           -- SS58, checksum verified on sync
    uid          integer          NOT NULL,
    coldkey      text             NOT NULL,
    ip           text             NOT NULL,  -- IPv4 or IPv6 literal
    port         integer          NOT NULL CHECK (port BETWEEN 1 AND 65535),
    stake        double precision NOT NULL DEFAULT 0,
    is_validator boolean          NOT NULL DEFAULT false,
    active       boolean          NOT NULL DEFAULT true, -- false once deregistered; history kept
    first_seen   timestamptz      NOT NULL DEFAULT now(),
    last_seen    timestamptz      NOT NULL DEFAULT now(),
    updated_at   timestamptz      NOT NULL DEFAULT now()
);

CREATE INDEX miners_active_uid ON miners (uid) WHERE active;

-- +goose Down
DROP TABLE miners;
