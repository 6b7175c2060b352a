-- A run counts only the makes done for it, as DataJoint's populate counts the makes of its call:
-- a key of the run made by someone else (another run, the feeder) while the run waited is
-- counted made_elsewhere, never made; a key another make failed is counted skipped, never an
-- error of the run.

-- +goose Up
ALTER TABLE populate_runs ADD COLUMN made_elsewhere bigint NOT NULL DEFAULT 0;
ALTER TABLE populate_run_keys DROP CONSTRAINT populate_run_keys_state_check;
ALTER TABLE populate_run_keys ADD CONSTRAINT populate_run_keys_state_check
    CHECK (state IN ('pending', 'queued', 'made', 'made_elsewhere', 'error', 'skipped', 'dropped'));

-- +goose Down
ALTER TABLE populate_run_keys DROP CONSTRAINT populate_run_keys_state_check;
UPDATE populate_run_keys SET state = 'skipped' WHERE state = 'made_elsewhere';
ALTER TABLE populate_run_keys ADD CONSTRAINT populate_run_keys_state_check
    CHECK (state IN ('pending', 'queued', 'made', 'error', 'skipped', 'dropped'));
ALTER TABLE populate_runs DROP COLUMN made_elsewhere;
