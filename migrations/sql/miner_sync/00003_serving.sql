-- Neurons that serve no axon (validators, mostly) are part of the metagraph: the chain lists them
-- with ip 0.0.0.0 (or ::) and port 0. miner-sync keeps them with serving = false so batch-runner
-- can judge busy-excuse receipts by their signers' stake; batches test only serving miners.

-- +goose Up
ALTER TABLE miners ADD COLUMN serving boolean NOT NULL DEFAULT true;

ALTER TABLE miners DROP CONSTRAINT miners_port_check;
ALTER TABLE miners ADD CONSTRAINT miners_port_check
    CHECK (port BETWEEN 1 AND 65535 OR (port = 0 AND NOT serving));

-- +goose Down
DELETE FROM miners WHERE NOT serving;
ALTER TABLE miners DROP CONSTRAINT miners_port_check;
ALTER TABLE miners ADD CONSTRAINT miners_port_check CHECK (port BETWEEN 1 AND 65535);
ALTER TABLE miners DROP COLUMN serving;
