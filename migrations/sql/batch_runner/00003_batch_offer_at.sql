-- The shards of a batch also agree when the availability stage starts: one offer_at and one
-- longest spin-up for the whole batch, so every executor gets its V0InitialJobRequest at
-- offer_at + max_spin − its class's spin-up, whichever shard tests it, as in one process.

-- +goose Up
-- offer_at is the agreed start of the stagger, max_spin_us the batch's longest spin-up.
ALTER TABLE batches
    ADD COLUMN offer_at    timestamptz,
    ADD COLUMN max_spin_us bigint;

-- offer_ready_at is when the shard knew its jobs (its clock); max_spin_us its longest spin-up.
ALTER TABLE batch_shards
    ADD COLUMN offer_ready_at timestamptz,
    ADD COLUMN max_spin_us    bigint;

-- +goose Down
ALTER TABLE batch_shards DROP COLUMN max_spin_us, DROP COLUMN offer_ready_at;
ALTER TABLE batches DROP COLUMN max_spin_us, DROP COLUMN offer_at;
