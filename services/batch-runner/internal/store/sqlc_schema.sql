-- What this store reads beyond batch-runner's own migrations, as sqlc must see it (never applied
-- to a database): miner-sync's miners table, created by miner-sync's migrations (listed before
-- this file in sqlc.yaml) and moved here into its schema, and the columns of River's job table of
-- this schema that query.sql reads (it never writes them), which River's own migrations create.
CREATE SCHEMA miner_sync;
ALTER TABLE miners SET SCHEMA miner_sync;

CREATE TABLE river_job (
    id    bigint PRIMARY KEY,
    state text   NOT NULL,
    args  jsonb  NOT NULL
);
