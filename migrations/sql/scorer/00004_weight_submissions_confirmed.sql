-- Pylon only schedules a weight setting: it is on chain once the validator's last_update, read
-- from a later metagraph, reaches the block the weights were sent at.

-- +goose Up
ALTER TABLE weight_submissions ADD COLUMN confirmed_block bigint; -- the last_update that showed them

-- +goose Down
ALTER TABLE weight_submissions DROP COLUMN confirmed_block;
