-- Sources that read the chain (Pylon, a subtensor node) name the block they read by number and
-- hash; the hash tells a reorganised or forked chain's block from the one the miners came from.

-- +goose Up
ALTER TABLE sync_events ADD COLUMN block_hash text; -- 0x-prefixed hex; null when the source gives none

-- +goose Down
ALTER TABLE sync_events DROP COLUMN block_hash;
