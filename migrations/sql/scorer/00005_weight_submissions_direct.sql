-- Weights can also be signed and submitted directly to a subtensor node (set_weights), when no
-- Pylon is configured: each attempt says which way it went, and a direct one keeps the extrinsic
-- and the hash the node gave it. An attempt refused because the subnet has commit-reveal on
-- (which only Pylon can serve) is recorded as refused.

-- +goose Up
ALTER TABLE weight_submissions
    ADD COLUMN via text NOT NULL DEFAULT 'pylon' CHECK (via IN ('pylon', 'subtensor')),
    ADD COLUMN extrinsic_hash text,  -- the node's hash of the extrinsic submitted
    ADD COLUMN extrinsic text;       -- the signed extrinsic, 0x-hex, as submitted
ALTER TABLE weight_submissions DROP CONSTRAINT weight_submissions_outcome_check;
ALTER TABLE weight_submissions ADD CONSTRAINT weight_submissions_outcome_check
    CHECK (outcome IN ('sent', 'failed', 'skipped', 'refused'));

-- +goose Down
DELETE FROM weight_submissions WHERE outcome = 'refused';
ALTER TABLE weight_submissions DROP CONSTRAINT weight_submissions_outcome_check;
ALTER TABLE weight_submissions ADD CONSTRAINT weight_submissions_outcome_check
    CHECK (outcome IN ('sent', 'failed', 'skipped'));
ALTER TABLE weight_submissions DROP COLUMN via, DROP COLUMN extrinsic_hash, DROP COLUMN extrinsic;
