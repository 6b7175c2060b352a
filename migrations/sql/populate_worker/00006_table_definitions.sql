-- Computed tables defined over the API (PUT /v1/tables/{name}) or seeded from TABLES_FILE at a
-- replica's start, so that every replica populates the same tables without a restart: each
-- reads them at start, and a write announces itself on the channel populate_tables (payload: the
-- table's name) in its own transaction. source says who wrote a definition last; once the API
-- has written or retired one, a tables file no longer overwrites it. A retired table (DELETE)
-- keeps its row, so that a file that still lists it does not bring it back; its jobs and its
-- target's rows are left as they are.

-- +goose Up
CREATE TABLE table_definitions (
    name                text COLLATE "C" PRIMARY KEY,
    target              text        NOT NULL,
    primary_key         text[]      NOT NULL,
    key_source          text        NOT NULL,
    upstream            text[]      NOT NULL DEFAULT '{}',
    function_url        text        NOT NULL,
    -- the variable holding the secret that signs this table's function calls; '' for the
    -- service's FUNCTION_SECRET. The secret itself is never stored.
    function_secret_env text        NOT NULL DEFAULT '',
    auto_schedule       boolean     NOT NULL DEFAULT true,
    source              text        NOT NULL CHECK (source IN ('file', 'api')),
    created_at          timestamptz NOT NULL DEFAULT now(),
    updated_at          timestamptz NOT NULL DEFAULT now(),
    retired_at          timestamptz
);

-- +goose Down
DROP TABLE table_definitions;
